// With the production (LiveKit) carrier there is no verification call yet: verify answers 503 and stores no code,
// and the sandbox inbox does not exist (404). Adding and reading caller IDs work as anywhere.
import t from 'tap';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t, {
  env: { CARRIER: 'livekit', LIVEKIT_URL: 'http://127.0.0.1:9', LIVEKIT_API_KEY: 'APIcallerids', LIVEKIT_API_SECRET: 'caller-ids-test-secret-0123456789-0123', LIVEKIT_SIP_TRUNK_ID: 'ST_x' },
});
const org = await env.bootstrap();

t.test('verify is unavailable, nothing is stored; the inbox is sandbox-only', async (t) => {
  const c = await env.request('POST', '/v1/caller-ids', { key: org.api_key, body: { phone_number: '+12015550150' } });
  t.equal(c.status, 201);
  const v = await env.request('POST', `/v1/caller-ids/${c.body.data.id}/verify`, { key: org.api_key });
  t.equal(v.status, 503);
  t.equal(v.body.error.code, 'service_unavailable');
  t.match(v.body.error.message, /not available on the livekit carrier/);
  const row = await env.db.one('SELECT code_hash FROM caller_ids WHERE id = $1', [c.body.data.id]);
  t.equal(row.code_hash, null);
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM caller_id_verification_calls')).n, 0);
  const missing = await env.request('POST', '/v1/caller-ids/00000000-0000-7000-8000-000000000000/verify', { key: org.api_key });
  t.equal(missing.status, 404, 'an unknown id is still a 404');
  const inbox = await env.request('GET', '/v1/sandbox/inbox?phone_number=%2B12015550150', { key: org.api_key });
  t.equal(inbox.status, 404);
});
