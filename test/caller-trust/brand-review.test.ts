// DIR review through a spawned workers process: the sandbox provider approves a submitted DIR after its scaled
// delay, then ATT, TMOBILE and VERIZON go live in turn. (A late job of an older round: brand.test.ts, approveBrand.)
import t from 'tap';
import sharp from 'sharp';
import { eventually, testEnv } from '../helpers/env.ts';
import { createRegistration, SIGN } from './helpers.ts';

const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '0.01' } });
const workers = env.spawn('workers');
await workers.ready(60_000);
const BRAND = '/v1/caller-trust/brand';

t.test('submitted -> approved -> live on every network', async (t) => {
  const o = await env.bootstrap({ numbers: 1 });
  const key = o.api_key;
  const id = await createRegistration(env, key, o.phone_numbers, { legal_name: 'Rollout Co, Inc.', ein: '74-5555555' });
  await env.request('POST', `/v1/caller-trust/enterprise/${id}/sign-and-submit`, { key, body: SIGN });
  // Vetting by the workers' sandbox provider (EIN not ending in 9).
  await eventually(async () => (await env.request('GET', '/v1/caller-trust/enterprise', { key })).body.data.status === 'APPROVED', 90_000, 100);
  const logo = await sharp({ create: { width: 300, height: 300, channels: 3, background: 'orange' } }).jpeg().toBuffer();
  const put = await env.request('PUT', BRAND, { key, body: { display_name: 'ROLLOUT CO', call_reason: 'Order updates',
    logo: { content_type: 'image/jpeg', data: logo.toString('base64') } } });
  t.equal(put.status, 200);
  const s = await env.request('POST', `${BRAND}/submit`, { key });
  t.equal(s.body.data.status, 'submitted');
  const live = await eventually(async () => {
    const d = (await env.request('GET', BRAND, { key })).body.data;
    return d.status === 'approved' && d.networks.every((n: { status: string }) => n.status === 'live') ? d : null;
  }, 90_000, 100);
  t.same(live.networks.map((n: { network: string }) => n.network), ['ATT', 'TMOBILE', 'VERIZON']);
  t.ok(live.approved_at);
  const times = live.networks.map((n: { updated_at: string }) => Date.parse(n.updated_at));
  t.ok(times[0] <= times[1] && times[1] <= times[2], 'networks go live in turn');
  for (const n of live.networks) t.match(n.updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, `${n.network}: an ISO 8601 UTC time like every other on the wire`);
});


t.test('a submission whose hand-off was lost is reviewed and rolled out by the workers\' sweep', async (t) => {
  const o = await env.bootstrap({ numbers: 1 });
  // As if the gateway died between the commit to submitted and enqueueing the review job.
  await env.db.none(`INSERT INTO brand_identities (organization_id, status, display_name, call_reason, networks, review_provider,
      review_round, submitted_at) VALUES ($1, 'submitted', 'Lost Co', 'Reminders',
      '{"ATT":{"status":"pending","updated_at":"2026-11-23T00:00:00.000Z"},"TMOBILE":{"status":"pending","updated_at":"2026-11-23T00:00:00.000Z"},"VERIZON":{"status":"pending","updated_at":"2026-11-23T00:00:00.000Z"}}',
      'sandbox', 1, now() - interval '1 hour')`, [o.organization_id]);
  const live = await eventually(async () => {
    const d = (await env.request('GET', BRAND, { key: o.api_key })).body.data;
    return d?.status === 'approved' && d.networks.every((n: { status: string }) => n.status === 'live') ? d : null;
  }, 90_000, 100);
  t.equal(live.networks.length, 3);
});
