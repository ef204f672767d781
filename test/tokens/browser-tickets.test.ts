// Browser tickets (path A, POST /v1/webrtc-token) and room tokens (path B, POST /v1/room-token): the dial path's
// guardrails, what is recorded, single-use redemption, the five-minute cleanup (a BullMQ delayed job that survives
// a restart of the workers), hangup setup modes on an unused ticket, and tenancy.
import t, { type Test } from 'tap';
import { TokenVerifier } from 'livekit-server-sdk';
import { setLimits } from '../../shared/calls/limits.ts';
import { loadConfig } from '../../shared/config.ts';
import { sha256 } from '../../shared/ids.ts';
import { keyer } from '../../shared/redis.ts';
import { RedisState } from '../../shared/redis-state.ts';
import { createLogger } from '../../shared/log.ts';
import { redeemTicket, redeemTickets } from '../../shared/tickets/tickets.ts';
import { startGateway } from '../../gateway/start.ts';
import { eventually, httpCall } from '../helpers/env.ts';
import { callEnv, callOrg, channelsUsed, getCall, waitStatus, type CallOrg } from '../calls/helpers.ts';

const { env } = await callEnv(t, {}, { workers: false });
const org = await callOrg(env);

const ticket = (o: CallOrg, body: Record<string, unknown>, path = '/v1/webrtc-token', key = o.api_key) =>
  env.request('POST', path, { key, body: { from_number: o.from, to_number: '+14155554567', ...body } });
const rows = async (o: CallOrg) => (await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [o.organization_id])).n as number;
const ticketRow = (callId: string) => env.db.oneOrNone('SELECT * FROM call_tickets WHERE call_id = $1', [callId]);
const dialJob = async (callId: string) => (await env.redis.exists(`${env.config.redisPrefix}:calls-dial:${callId}`)) === 1;

t.test('POST /v1/webrtc-token: a single-use ticket, the call QUEUED with one channel and no dial', async (t) => {
  const before = await channelsUsed(env, org.organization_id);
  const r = await ticket(org, {});
  t.equal(r.status, 201, r.text);
  t.same(Object.keys(r.body.data).sort(), ['call_id', 'token']);
  const { token, call_id } = r.body.data;
  t.match(token, /^olwt_[A-Za-z0-9]{43}$/);
  const c = await getCall(env, org, call_id);
  t.match(c, { type: 'webrtc', status: 'QUEUED', from_number: org.from, to_number: '+14155554567' });
  t.same(c.legs.map((l: any) => [l.role, l.status]), [['destination', 'PENDING'], ['browser', 'PENDING']]);
  const row = await env.db.one('SELECT organization_id, user_id, channels FROM calls WHERE id = $1', [call_id]);
  t.same(row, { organization_id: org.organization_id, user_id: org.user_id, channels: 1 });
  t.equal(await channelsUsed(env, org.organization_id), before + 1, 'one channel admitted');
  const tr = await ticketRow(call_id);
  t.same(tr.token_hash, sha256(token), 'only the hash is stored');
  t.notOk(JSON.stringify(await env.db.any('SELECT * FROM call_tickets')).includes(token.slice(5)), 'no plaintext');
  t.equal(tr.kind, 'webrtc');
  t.notOk(await dialJob(call_id), 'nothing is dialed before the ticket is redeemed');
  t.ok(await env.redis.exists(`${env.config.redisPrefix}:ticket-cleanup:${call_id}`), 'cleanup deadline scheduled (job id = call id)');

  // Redemption is atomic and single-use.
  const first = await redeemTicket(env.db, token, { instance: 'test' }, 'webrtc');
  t.equal(first.ok, true);
  const second = await redeemTicket(env.db, token, { instance: 'test' }, 'webrtc');
  t.same(second, { ok: false, code: 'ticket_used' });
  t.same(await redeemTicket(env.db, 'olwt_nope', { instance: 'test' }, 'webrtc'), { ok: false, code: 'ticket_invalid' });
  const c2 = await getCall(env, org, call_id);
  t.match(c2.legs.find((l: any) => l.role === 'browser'), { status: 'ANSWERED' }, 'browser leg connected on redemption');
  // Concurrent redemptions of one ticket: exactly one wins.
  const r2 = await ticket(org, {});
  const race = await Promise.all([1, 2, 3, 4].map((i) => redeemTicket(env.db, r2.body.data.token, { instance: `p${i}` }, 'webrtc')));
  t.equal(race.filter((x) => x.ok).length, 1, 'one redemption wins');

  // A batch (signaling redeems the hellos of one event-loop turn together): one answer per request, in order.
  const [a, b] = [(await ticket(org, {})).body.data, (await ticket(org, {})).body.data];
  const batch = await redeemTickets(env.db, [
    { token: a.token, kind: 'webrtc' }, { token: 'olwt_unknown', kind: 'webrtc' }, { token: a.token, kind: 'webrtc' },
    { token: b.token, kind: 'room' }, { token: b.token, kind: 'webrtc' }, { token: token, kind: 'webrtc' },
  ], { instance: 'batch' });
  t.match(batch[0], { ok: true, call: { id: a.call_id, organization_id: org.organization_id, status: 'QUEUED' }, kind: 'webrtc' });
  t.same(batch[1], { ok: false, code: 'ticket_invalid' });
  t.same(batch[2], { ok: false, code: 'ticket_used' }, 'the same ticket twice in a batch: the first request wins');
  t.same(batch[3], { ok: false, code: 'ticket_invalid' }, 'a ticket presented as the other kind');
  t.match(batch[4], { ok: true, call: { id: b.call_id } }, 'the same ticket as its own kind, after the wrong-kind request');
  t.same(batch[5], { ok: false, code: 'ticket_used' }, 'a ticket used earlier');
});

t.test('every guardrail of the dial path applies, before any row or channel', async (t) => {
  const expectSame = async (t: Test, o: CallOrg, body: Record<string, unknown>, status: number, code: string) => {
    const n = await rows(o);
    const used = await channelsUsed(env, o.organization_id);
    for (const path of ['/v1/webrtc-token', '/v1/room-token']) {
      const r = await ticket(o, body, path);
      t.equal(r.status, status, `${path} ${JSON.stringify(body)}: ${status}`);
      t.equal(r.body.error?.code, code, r.text.slice(0, 200));
    }
    t.equal(await rows(o), n, 'no row');
    t.equal(await channelsUsed(env, o.organization_id), used, 'no channel');
  };
  await expectSame(t, org, { to_number: undefined }, 400, 'destination_missing');
  await expectSame(t, org, { to_number: '911' }, 403, 'destination_blocked'); // an emergency short code, refused before E.164 checks
  await expectSame(t, org, { to_number: '+19115550123' }, 403, 'destination_blocked');
  await expectSame(t, org, { to_number: '+19005550123' }, 403, 'destination_blocked');
  await expectSame(t, org, { to_number: '+442079460123' }, 403, 'destination_blocked');
  await expectSame(t, org, { from_number: '+14155550177' }, 422, 'call_id_not_verified');
  await expectSame(t, org, { from_number: 'nope' }, 400, 'validation_error');
  await expectSame(t, org, { extra: true }, 400, 'validation_error');
  const demo = await callOrg(env, {}, { demo: true });
  await expectSame(t, demo, { to_number: '+14157771234' }, 403, 'destination_blocked');
  const ceiling = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['voice:webrtc'], allowedTo: ['+14155550100'] });
  const r = await ticket(org, {}, '/v1/webrtc-token', ceiling.apiKey);
  t.equal(r.status, 403); t.equal(r.body.error.code, 'forbidden');
  const capped = await callOrg(env, { daily_spend_cap_cents: 0 });
  await expectSame(t, capped, {}, 402, 'spend_cap_reached');
  const oneChannel = await callOrg(env, { channel_limit: 1 });
  t.equal((await ticket(oneChannel, {})).status, 201);
  await expectSame(t, oneChannel, {}, 409, 'channel_limit_exceeded');
  const slow = await callOrg(env, { calls_per_minute: 1 });
  t.equal((await ticket(slow, {})).status, 201);
  await expectSame(t, slow, {}, 429, 'rate_limited');
  const noScope = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['calls:write'] });
  const s = await ticket(org, {}, '/v1/webrtc-token', noScope.apiKey);
  t.equal(s.status, 403); t.equal(s.body.error.code, 'scope_missing');
});

t.test('hangup setup modes on an unused ticket: CANCELED, ticket revoked, setup diagnostic; tenancy', async (t) => {
  for (const mode of ['setup_failed', 'cancel_setup']) {
    const r = await ticket(org, {});
    const { token, call_id } = r.body.data;
    const used = await channelsUsed(env, org.organization_id);
    const other = await callOrg(env);
    const foreign = await env.request('POST', `/v1/calls/${call_id}/hangup?mode=${mode}`, { key: other.api_key });
    t.equal(foreign.status, 404, 'another organization\'s call is not_found');
    const h = await env.request('POST', `/v1/calls/${call_id}/hangup?mode=${mode}`, { key: org.api_key });
    t.same(h.body.data, { call_id, status: 'CANCELED', mode, result: 'canceled' });
    const c = await getCall(env, org, call_id);
    t.match(c, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', failure_code: null, failure_category: null,
      duration_seconds: 0, picked_up: false, disconnection_reason: mode === 'setup_failed' ? 'setup_failed' : 'setup_canceled' });
    t.equal(await channelsUsed(env, org.organization_id), used - 1, 'channel released');
    const tr = await eventually(async () => { const x = await ticketRow(call_id); return x.revoked_at ? x : null; });
    t.match(tr, { revoke_reason: mode === 'setup_failed' ? 'setup_failed' : 'setup_canceled', setup_diagnostic: { stage: 'setup', mode } });
    t.same(await redeemTicket(env.db, token, { instance: 'x' }, 'webrtc'), { ok: false, code: 'ticket_revoked' });
  }
  // The ticket of a call hung up before it was used is refused too.
  const r = await ticket(org, {});
  await env.request('POST', `/v1/calls/${r.body.data.call_id}/hangup`, { key: org.api_key });
  t.same(await redeemTicket(env.db, r.body.data.token, { instance: 'x' }, 'webrtc'), { ok: false, code: 'ticket_revoked' });
});

t.test('POST /v1/room-token: a LiveKit access token for this call\'s room only; the service places the call', async (t) => {
  const r = await ticket(org, {}, '/v1/room-token');
  t.equal(r.status, 201, r.text);
  const { token, room_url, call_id } = r.body.data;
  t.equal(room_url, `ws://127.0.0.1:${env.config.signalingPort}/v1/softphone`);
  const { secret } = await env.db.one(`SELECT secret FROM server_secrets WHERE name = 'room_token'`);
  const claims = await new TokenVerifier('sandbox', secret.toString('base64url')).verify(token);
  t.equal(claims.sub, org.user_id, 'identity = the issuing user');
  t.match(claims.video, { roomJoin: true, room: `call-${call_id}` });
  const c = await getCall(env, org, call_id);
  t.ok((claims.exp as number) - Date.now() / 1000 >= c.max_duration_seconds, 'ttl covers the maximum call length');
  await t.rejects(new TokenVerifier('sandbox', 'another-secret').verify(token), 'a foreign secret refuses it');
  t.match(c, { type: 'room', status: 'QUEUED' });
  t.ok(await dialJob(call_id), 'the PSTN leg is placed at once (dial job enqueued)');
  t.equal((await ticketRow(call_id)).kind, 'room');

  // With a LiveKit key pair configured, that pair signs it (a LiveKit deployment accepts it as is).
  const g = await startGateway(loadConfig({ ...process.env, ...env.env,
    DATABASE_URL: `${env.env.DATABASE_URL}?application_name=lk`, LIVEKIT_API_KEY: 'APIlocal', LIVEKIT_API_SECRET: 'x'.repeat(40),
    SIGNALING_PUBLIC_URL: 'wss://rtc.example.test/v1/softphone' }), createLogger('gateway', 'warn'));
  t.teardown(() => g.stop());
  const lk = await httpCall(g.url, 'POST', '/v1/room-token', { key: org.api_key, body: { from_number: org.from, to_number: '+14155554567' } });
  t.equal(lk.status, 201);
  t.equal(lk.body.data.room_url, 'wss://rtc.example.test/v1/softphone');
  const lkClaims = await new TokenVerifier('APIlocal', 'x'.repeat(40)).verify(lk.body.data.token);
  t.equal(lkClaims.video?.room, `call-${lk.body.data.call_id}`);
});

t.test('cleanup: an unused ticket is revoked at its deadline, even across a workers restart', async (t) => {
  // A gateway whose tickets expire after 2 s; the workers are down when the deadline passes.
  const g = await startGateway(loadConfig({ ...process.env, ...env.env,
    DATABASE_URL: `${env.env.DATABASE_URL}?application_name=short`, TICKET_CLEANUP_SECONDS: '2' }), createLogger('gateway', 'warn'));
  t.teardown(() => g.stop());
  const o = await callOrg(env);
  const issue = () => httpCall(g.url, 'POST', '/v1/webrtc-token', { key: o.api_key, body: { from_number: o.from, to_number: '+14155554567' } });
  const unused = await issue();
  const redeemed = await issue();
  t.equal(unused.status, 201);
  t.ok((await redeemTicket(env.db, redeemed.body.data.token, { instance: 'x' }, 'webrtc')).ok);
  t.equal(await channelsUsed(env, o.organization_id), 2);
  await eventually(async () => (await env.db.one(`SELECT expires_at < now() AS past FROM call_tickets WHERE call_id = $1`, [unused.body.data.call_id])).past);
  t.same(await redeemTicket(env.db, unused.body.data.token, { instance: 'x' }, 'webrtc'), { ok: false, code: 'ticket_expired' }, 'expired before the cleanup ran');
  t.equal((await getCall(env, o, unused.body.data.call_id)).status, 'QUEUED', 'no workers yet');

  // Redis kept its state here: without the mark, the workers would take this Redis for one that lost its state and
  // re-arm the redeemed call's dial job (signaling's, which this test never enqueued).
  await new RedisState(env.redis, keyer(env.config.redisPrefix)).finish();
  const workers = env.spawn('workers');
  await workers.ready();
  const c = await waitStatus(env, o, unused.body.data.call_id, 'CANCELED');
  t.match(c, { call_outcome: 'connection_unconfirmed', disconnection_reason: 'ticket_expired', failure_code: null,
    failure_category: null, duration_seconds: 0, picked_up: false, answered_at: null });
  t.match(await ticketRow(unused.body.data.call_id), { revoke_reason: 'ticket_expired', setup_diagnostic: { reason: 'ticket_expired' } });
  // The redeemed ticket's call was dialed by nobody here (signaling enqueues that); cleanup leaves it alone.
  await eventually(async () => (await channelsUsed(env, o.organization_id)) === 1);
  const kept = await getCall(env, o, redeemed.body.data.call_id);
  t.equal(kept.status, 'QUEUED', 'a used ticket is not cleaned up');
  t.notOk((await ticketRow(redeemed.body.data.call_id)).revoked_at);
  await workers.kill();
});
