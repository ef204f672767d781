// A console session mints client tokens (POST /v1/client-tokens with the cookie and X-CSRF-Token): what the Phone page
// listens for incoming calls with. The token follows the session and the user's role: an agent may mint only its
// role's scopes and only its organization's active numbers, a viewer none; a token dies with its session (sign-out)
// and narrows with its user's role; an agent's token reads only the agent's own calls. Real gateway, PostgreSQL, Redis.
import t from 'tap';
import { createUser } from '../../shared/users/members.ts';
import { callOrg } from '../calls/helpers.ts';
import { testEnv, type TestEnv } from '../helpers/env.ts';

const PASSWORD = 'correct horse battery staple';

async function signIn(env: TestEnv, email: string) {
  const r = await env.request('POST', '/v1/session', { body: { email, password: PASSWORD } });
  if (r.status !== 200) throw new Error(`sign-in failed: ${r.status} ${r.text}`);
  const set = String(r.headers['set-cookie'] ?? '');
  return { cookie: `ol_session=${/ol_session=([^;]*)/.exec(set)?.[1] ?? ''}`, csrf: r.body.data.csrf_token as string };
}

t.test('client tokens minted by a console session', async (t) => {
  const env = await testEnv(t);
  const org = await callOrg(env, {}, { org: 'Token Clinic' });
  const other = await callOrg(env, {}, { org: 'Other Clinic' });
  const owner = await createUser(env.db, { organizationId: org.organization_id, email: 'owner.tok@example.com', role: 'owner', password: PASSWORD });
  const agent = await createUser(env.db, { organizationId: org.organization_id, email: 'agent.tok@example.com', role: 'agent', password: PASSWORD });
  await createUser(env.db, { organizationId: org.organization_id, email: 'viewer.tok@example.com', role: 'viewer', password: PASSWORD });

  const mint = (s: { cookie: string; csrf?: string }, body: Record<string, unknown>) =>
    env.request('POST', '/v1/client-tokens', { headers: { cookie: s.cookie, ...(s.csrf ? { 'x-csrf-token': s.csrf } : {}) }, body });

  await t.test('an agent mints a token for its organization\'s number; it places a call as the agent', async (t) => {
    const s = await signIn(env, 'agent.tok@example.com');
    t.equal((await mint({ cookie: s.cookie }, { from_numbers: [org.from] })).status, 403, 'no X-CSRF-Token: refused');
    const r = await mint(s, { from_numbers: [org.from], scopes: ['voice:webrtc', 'calls:read'], ttl_seconds: 600 });
    t.equal(r.status, 201, r.text);
    t.match(r.body.data, { from_numbers: [org.from], scopes: ['voice:webrtc', 'calls:read'], expires_in: 600 });
    const token = r.body.data.token as string;
    const ticket = await env.request('POST', '/v1/webrtc-token', { key: token, body: { from_number: org.from, to_number: '+14155550008' } });
    t.equal(ticket.status, 201, ticket.text);
    const callId = ticket.body.data.call_id as string;
    const row = await env.db.one('SELECT user_id, api_key_id FROM calls WHERE id = $1', [callId]);
    t.same(row, { user_id: agent.user.id, api_key_id: null }, 'the call is the agent\'s (no API key)');

    // The owner's call is not the agent's: the agent's token lists only the agent's own calls.
    const o = await signIn(env, 'owner.tok@example.com');
    const ownerToken = (await mint(o, { from_numbers: [org.from] })).body.data.token as string;
    const ownerTicket = await env.request('POST', '/v1/webrtc-token', { key: ownerToken, body: { from_number: org.from, to_number: '+14155550008' } });
    t.equal(ownerTicket.status, 201, ownerTicket.text);
    const list = await env.request('GET', '/v1/calls?limit=100', { key: token });
    t.equal(list.status, 200, list.text);
    t.same(list.body.data.map((c: { id: string }) => c.id), [callId], 'the agent\'s token reads only the agent\'s own call');
    t.ok(owner.user.id);
  });

  await t.test('bounds: the role\'s scopes, the organization\'s active numbers; a viewer mints nothing', async (t) => {
    const s = await signIn(env, 'agent.tok@example.com');
    const scopes = await mint(s, { from_numbers: [org.from], scopes: ['voice:webrtc', 'phone_numbers:write'] });
    t.equal(scopes.status, 403);
    t.match(scopes.body.error, { code: 'forbidden', fields: { 'scopes[1]': /not a scope of the minting/ } }, 'a scope beyond the agent\'s role');
    const foreign = await mint(s, { from_numbers: [other.from] });
    t.equal(foreign.status, 403);
    t.match(foreign.body.error, { code: 'forbidden', fields: { 'from_numbers[0]': /not a number of your organization/ } }, 'another organization\'s number');
    const bad = await mint(s, { from_numbers: ['4155550100'] });
    t.equal(bad.status, 400);
    t.match(bad.body.error, { code: 'validation_error', fields: { 'from_numbers[0]': String } });
    const v = await signIn(env, 'viewer.tok@example.com');
    const viewer = await mint(v, { from_numbers: [org.from] });
    t.equal(viewer.status, 403);
    t.equal(viewer.body.error.code, 'scope_missing', 'a viewer lacks tokens:mint');
  });

  await t.test('a token ends with its session and narrows with its user\'s role', async (t) => {
    const s = await signIn(env, 'agent.tok@example.com');
    const token = (await mint(s, { from_numbers: [org.from] })).body.data.token as string;
    const use = () => env.request('POST', '/v1/webrtc-token', { key: token, body: { from_number: org.from, to_number: '+14155550008' } });
    t.equal((await use()).status, 201, 'works while the session lives');
    t.equal((await env.request('DELETE', '/v1/session', { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } })).status, 204);
    const after = await use();
    t.equal(after.status, 401, 'refused once the session signed out');
    t.equal(after.body.error.code, 'unauthorized');

    const s2 = await signIn(env, 'agent.tok@example.com');
    const token2 = (await mint(s2, { from_numbers: [org.from] })).body.data.token as string;
    const use2 = () => env.request('POST', '/v1/webrtc-token', { key: token2, body: { from_number: org.from, to_number: '+14155550008' } });
    t.equal((await use2()).status, 201);
    const o = await signIn(env, 'owner.tok@example.com');
    const patch = await env.request('PATCH', `/v1/members/${agent.user.id}`, { headers: { cookie: o.cookie, 'x-csrf-token': o.csrf }, body: { role: 'viewer' } });
    t.equal(patch.status, 200, patch.text);
    const demoted = await use2();
    t.equal(demoted.status, 403, 'the token narrowed with the role at once (a viewer has no voice:webrtc)');
    t.equal(demoted.body.error.code, 'scope_missing', demoted.text);
  });
});
