// GET /v1/calls/stream: Server-Sent Events of an organization's calls, fed by the calls' progress on Redis (every
// insert and transition). A sandbox bridge call's states arrive in order; another organization's stream sees
// nothing; scope, agent, session, bound, abort, revocation and heartbeat.
import t from 'tap';
import { createUser } from '../../shared/users/members.ts';
import { createApiKey } from '../../shared/accounts/keys.ts';
import { eventually } from '../helpers/env.ts';
import { SseStream } from '../helpers/sse.ts';
import { callEnv, callOrg, dial } from './helpers.ts';

const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.05', CALL_STREAMS_PER_ORGANIZATION: '3', CALL_STREAM_HEARTBEAT_SECONDS: '1' });
const a = await callOrg(env);
const b = await callOrg(env);
const PASSWORD = 'correct horse battery';

const open = (key: string | null, headers: Record<string, string> = {}) =>
  SseStream.open(env.url, '/v1/calls/stream', { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers });

/** Statuses with repeats folded (a leg's change without a status change is a message too). */
const folded = (xs: string[]) => xs.filter((s, i) => i === 0 || xs[i - 1] !== s);

async function signIn(email: string) {
  const r = await env.request('POST', '/v1/session', { body: { email, password: PASSWORD } });
  const set = r.headers['set-cookie'] as unknown as string[] | string;
  const v = Array.isArray(set) ? set[0] : set;
  return { cookie: `ol_session=${/ol_session=([^;]*)/.exec(v)![1]}`, csrf: r.body.data.csrf_token as string };
}

t.test('a dialed sandbox call: QUEUED, RINGING, ANSWERED, COMPLETED in order; another organization sees nothing', async (t) => {
  const sa = await open(a.api_key);
  const sb = await open(b.api_key);
  t.equal(sa.status, 200);
  t.match(sa.headers['content-type'], /^text\/event-stream/);
  t.equal(sa.headers['cache-control'], 'no-cache, no-transform');
  await sa.until(() => sa.comments.includes('stream open'), 5000, 'the opening comment');
  const r = await dial(env, a, '+14155554567');
  t.equal(r.status, 202, r.text);
  const id = r.body.data.call_id;
  await sa.until(() => sa.callStatuses(id).includes('COMPLETED'), 20_000, 'COMPLETED');
  t.same(folded(sa.callStatuses(id)), ['QUEUED', 'RINGING', 'ANSWERED', 'COMPLETED']);
  const last = sa.events.filter((e) => e.data.call_id === id).at(-1)!.data;
  t.match(last, { call_id: id, status: 'COMPLETED', type: 'bridge', direction: 'outbound', from_number: a.from,
    to_number: '+14155554567', connect_number: '+14155550199', call_outcome: 'answered', issued_by_user_id: a.user_id });
  t.ok(last.answered_at && last.ended_at && last.updated_at);
  t.notOk('organization_id' in last, 'the organization is implied by the credential');
  // B's stream carried heartbeats meanwhile, but no message about A's call.
  await sb.until(() => sb.comments.includes('heartbeat'), 5000, 'a heartbeat');
  t.same(sb.events, [], 'another organization sees nothing');
  sa.close();
  sb.close();
});

t.test('scope, credential and bound', async (t) => {
  const noRead = await createApiKey(env.db, { organizationId: a.organization_id, userId: null, scopes: ['calls:write'] });
  const denied = await open(noRead.apiKey);
  await denied.until(() => denied.ended, 5000, 'the refusal');
  t.equal(denied.status, 403);
  t.equal(JSON.parse(denied.text).error.code, 'scope_missing');
  const anon = await open(null);
  await anon.until(() => anon.ended, 5000, 'the refusal');
  t.equal(anon.status, 401);

  // Three streams allowed per organization here (CALL_STREAMS_PER_ORGANIZATION=3); the fourth is refused.
  await eventually(async () => (env.gateway!.gateway.callStreams.openFor(a.organization_id) === 0) || undefined, 5000);
  const held = [await open(a.api_key), await open(a.api_key), await open(a.api_key)];
  for (const s of held) t.equal(s.status, 200);
  const over = await open(a.api_key);
  await over.until(() => over.ended, 5000, 'the refusal');
  t.equal(over.status, 429);
  t.equal(JSON.parse(over.text).error.code, 'rate_limited');
  t.match(JSON.parse(over.text).error.message, /already has 3 call streams open/);
  t.ok(over.headers['retry-after']);
  const other = await open(b.api_key);
  t.equal(other.status, 200, 'the bound is per organization');
  other.close();

  // A client going away frees its stream (uWS onAborted): the bound counts it free again.
  held[0].close();
  await eventually(async () => (env.gateway!.gateway.callStreams.openFor(a.organization_id) === 2) || undefined, 5000);
  const again = await open(a.api_key);
  t.equal(again.status, 200, 'a freed stream can be opened again');
  const r = await dial(env, a, '+14155554567');
  for (const s of [held[1], held[2], again]) await s.until(() => s.callStatuses(r.body.data.call_id).includes('QUEUED'), 5000, 'QUEUED on every open stream');
  for (const s of [held[1], held[2], again]) s.close();
  await eventually(async () => (env.gateway!.gateway.callStreams.openFor(a.organization_id) === 0) || undefined, 5000);
  t.pass('all freed');
});

t.test('a revoked key ends its stream', async (t) => {
  const k = await createApiKey(env.db, { organizationId: a.organization_id, userId: a.user_id, scopes: ['calls:read', 'api_keys:write'] });
  const s = await open(k.apiKey);
  t.equal(s.status, 200);
  const del = await env.request('DELETE', `/v1/api-keys/${k.apiKeyId}`, { key: a.api_key });
  t.equal(del.status, 200, del.text);
  await s.until(() => s.ended, 5000, 'the end of the stream');
  t.pass('ended');
});

t.test('a console session: an agent sees only the calls it placed; signing out ends the stream', async (t) => {
  await createUser(env.db, { organizationId: a.organization_id, email: 'agent.stream@example.com', role: 'agent', password: PASSWORD });
  await createUser(env.db, { organizationId: a.organization_id, email: 'owner.stream@example.com', role: 'owner', password: PASSWORD });
  const agent = await signIn('agent.stream@example.com');
  const owner = await signIn('owner.stream@example.com');
  const sAgent = await open(null, { cookie: agent.cookie });
  const sOwner = await open(null, { cookie: owner.cookie });
  t.equal(sAgent.status, 200);
  t.equal(sOwner.status, 200);
  // The owner's key places a call: the owner's stream sees it, the agent's does not.
  const bridge = await dial(env, a, '+14155554567');
  const bridgeId = bridge.body.data.call_id;
  // The agent places a browser call (its ticket is minted through the session): both see it.
  const mint = await env.request('POST', '/v1/webrtc-token', { headers: { cookie: agent.cookie, 'x-csrf-token': agent.csrf },
    body: { from_number: a.from, to_number: '+14155550008' } });
  t.equal(mint.status, 201, mint.text);
  const mine = mint.body.data.call_id;
  await sAgent.until(() => sAgent.callStatuses(mine).includes('QUEUED'), 5000, 'the agent\'s call');
  await sOwner.until(() => sOwner.callStatuses(mine).includes('QUEUED') && sOwner.callStatuses(bridgeId).includes('COMPLETED'), 20_000, 'both calls');
  t.same(sAgent.callStatuses(bridgeId), [], 'the agent does not see a call it did not place');
  t.ok(sAgent.events.every((e) => e.data.call_id === mine), 'only its own');
  // Signing out ends the session's stream.
  const out = await env.request('DELETE', '/v1/session', { headers: { cookie: agent.cookie, 'x-csrf-token': agent.csrf } });
  t.equal(out.status, 204, out.text);
  await sAgent.until(() => sAgent.ended, 5000, 'the end of the agent\'s stream');
  t.notOk(sOwner.ended, 'another session\'s stream stays open');
  sOwner.close();
});
