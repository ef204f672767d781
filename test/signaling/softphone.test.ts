// The softphone WebSocket against real signaling and workers processes: redemption, reuse and expiry refused (on
// the same and on another signaling process), progress frames, hangup from the socket, abandoned setups, room
// tokens, protocol errors, leg accounting (and this process's legs on /metrics) and the reconciler after a signaling crash.
import t from 'tap';
import { loadConfig } from '../../shared/config.ts';
import { createLogger } from '../../shared/log.ts';
import { startGateway } from '../../gateway/start.ts';
import { ticketCleanupQueue } from '../../shared/tickets/queue.ts';
import { LegAccounts } from '../../shared/channels/legs.ts';
import { keyer } from '../../shared/redis.ts';
import { eventually, httpCall } from '../helpers/env.ts';
import { callEnv, callOrg, channelsUsed, getCall, settled, type CallOrg } from '../calls/helpers.ts';
import { Phone, httpBase, softphoneUrl } from './softphone.ts';

// Sandbox at 0.1: a normal call rings 0.2 s and talks 1 s; a ring-out (0002) rings 3 s.
// Signaling only (SIGNALING_MEDIA=off): the call flow without a media process; test/browser/softphone-e2e.test.ts runs it with media.
const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.1', SIGNALING_MEDIA: 'off' });
const sigA = env.spawn('signaling');
const sigB = env.spawn('signaling');
await Promise.all([sigA.ready(), sigB.ready()]);
const A = softphoneUrl(sigA);
const B = softphoneUrl(sigB);

const ticket = async (o: CallOrg, to: string, path = '/v1/webrtc-token') => {
  const r = await env.request('POST', path, { key: o.api_key, body: { from_number: o.from, to_number: to } });
  if (r.status !== 201) throw new Error(`${path}: ${r.status} ${r.text}`);
  return r.body.data as { token: string; call_id: string; room_url?: string };
};
const hello = (p: Phone, token: string) => p.send({ type: 'hello', v: 1, ticket: token });
const ticketRow = (callId: string) => env.db.one('SELECT * FROM call_tickets WHERE call_id = $1', [callId]);

t.test('answering number: welcome, ringing, answered, ended; the channel is released', async (t) => {
  const org = await callOrg(env);
  const { token, call_id } = await ticket(org, '+14155554567');
  t.equal((await getCall(env, org, call_id)).status, 'QUEUED');
  const p = await Phone.connect(A);
  hello(p, token);
  const w = await p.frame('welcome');
  t.same(w, { type: 'welcome', v: 1, call_id, path: 'webrtc', status: 'QUEUED', media: null });
  const ended = await p.frame('ended');
  t.same(p.types(), ['welcome', 'ringing', 'answered', 'ended'], 'progress in order, once each');
  t.match(ended, { call_id, status: 'COMPLETED', call_outcome: 'answered', failure_code: null, failure_category: null,
    disconnection_reason: 'remote_hangup' });
  t.ok(ended.duration_seconds > 0);
  t.match(await p.waitClosed(), { code: 1000 });
  const c = await settled(env, org, call_id);
  t.match(c.legs.find((l: any) => l.role === 'browser'), { status: 'ENDED' });
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
  t.ok((await ticketRow(call_id)).used_at, 'ticket used');
  const tr = await env.request('GET', `/v1/calls/${call_id}/transcript`, { key: org.api_key });
  t.match(tr.body.data, { status: 'unavailable', reason: 'not_recorded' }, 'browser calls are not recorded');

  // A second use, on this process or the other one, is refused and closed.
  for (const url of [A, B]) {
    const again = await Phone.connect(url);
    hello(again, token);
    t.match(await again.frame('error'), { code: 'ticket_used' });
    t.match(await again.waitClosed(), { code: 4409 });
  }
});

t.test('busy number: ended with BUSY and its failure fields', async (t) => {
  const org = await callOrg(env);
  const { token, call_id } = await ticket(org, '+14155550001');
  const p = await Phone.connect(B);
  hello(p, token);
  const ended = await p.frame('ended');
  t.match(ended, { call_id, status: 'BUSY', call_outcome: 'busy', failure_code: 'busy', failure_category: 'unreachable' });
  t.notOk(p.types().includes('answered'));
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
});

t.test('two signaling processes: a ticket redeemed on one is refused on the other, even at once', async (t) => {
  const org = await callOrg(env);
  const { token, call_id } = await ticket(org, '+14155550008');
  const [pa, pb] = await Promise.all([Phone.connect(A), Phone.connect(B)]);
  hello(pa, token);
  hello(pb, token);
  await eventually(async () => (pa.frames.length && pb.frames.length ? true : null));
  const kinds = [pa.frames[0].type, pb.frames[0].type].sort();
  t.same(kinds, ['error', 'welcome'], 'exactly one redemption');
  const loser = pa.frames[0].type === 'error' ? pa : pb;
  const winner = loser === pa ? pb : pa;
  t.equal(loser.frames[0].code, 'ticket_used');
  await winner.frame('answered');
  winner.send({ type: 'hangup' });
  t.match(await winner.frame('ended'), { call_id, status: 'COMPLETED', disconnection_reason: 'api_hangup' });
});

t.test('hangup from the socket, and a socket closed after the answer, end the call normally', async (t) => {
  const org = await callOrg(env);
  const a = await ticket(org, '+14155550008'); // answers and never hangs up
  const p = await Phone.connect(A);
  hello(p, a.token);
  await p.frame('answered');
  p.send({ type: 'ping', id: 7 });
  t.same(await p.frame('pong'), { type: 'pong', id: 7 });
  p.send({ type: 'hangup' });
  t.match(await p.frame('ended'), { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'api_hangup' });

  const b = await ticket(org, '+14155550008');
  const q = await Phone.connect(B);
  hello(q, b.token);
  await q.frame('answered');
  q.close();
  const c = await settled(env, org, b.call_id);
  t.match(c, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'browser_hangup', picked_up: true });
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
});

t.test('a socket closed before the answer abandons the setup: CANCELED, connection_unconfirmed, channel released', async (t) => {
  const org = await callOrg(env);
  const { token, call_id } = await ticket(org, '+14155550002'); // rings out after 3 s here
  const p = await Phone.connect(A);
  hello(p, token);
  await p.frame('ringing');
  p.close();
  const c = await settled(env, org, call_id);
  t.match(c, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'setup_abandoned',
    failure_code: null, failure_category: null, duration_seconds: 0, picked_up: false });
  t.match(c.legs.find((l: any) => l.role === 'destination'), { status: 'ENDED' }, 'the ringing carrier leg was hung up');
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
  t.match((await ticketRow(call_id)).setup_diagnostic, { stage: 'setup', reason: 'setup_abandoned' });
});

t.test('setup_failed racing redemption and origination: canceled before the carrier hears of it, or left running', async (t) => {
  const org = await callOrg(env);
  const runs = await Promise.all([0, 1, 2, 3, 4].map(async (i) => {
    const { token, call_id } = await ticket(org, '+14155554567');
    const p = await Phone.connect(i % 2 ? A : B);
    const [h] = await Promise.all([
      env.request('POST', `/v1/calls/${call_id}/hangup?mode=setup_failed`, { key: org.api_key }),
      Promise.resolve(hello(p, token)),
    ]);
    return { call_id, p, result: h.body.data.result as string };
  }));
  for (const { call_id, p, result } of runs) {
    const c = await settled(env, org, call_id);
    await p.waitClosed();
    if (result === 'canceled') {
      t.match(c, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'setup_failed' });
      t.equal(c.legs.find((l: any) => l.role === 'destination').originated_at, null, 'never dialed');
      const last = p.frames[p.frames.length - 1];
      // Refused (the revocation follows the commit, so a redemption in between sees the call ended), or told it ended.
      t.ok((last.type === 'error' && ['ticket_revoked', 'call_ended'].includes(last.code)) || (last.type === 'ended' && last.status === 'CANCELED'),
        `the browser is told: ${JSON.stringify(last)}`);
    } else {
      t.equal(result, 'already_originated');
      t.match(c, { status: 'COMPLETED', call_outcome: 'answered' }, 'left running to its normal end');
      t.same(p.types(), ['welcome', 'ringing', 'answered', 'ended']);
    }
  }
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
});

t.test('expired and revoked tickets are refused; protocol errors close the socket', async (t) => {
  const org = await callOrg(env);
  const g = await startGateway(loadConfig({ ...process.env, ...env.env,
    DATABASE_URL: `${env.env.DATABASE_URL}?application_name=short`, TICKET_CLEANUP_SECONDS: '1' }), createLogger('gateway', 'warn'));
  t.teardown(() => g.stop());
  const r = await httpCall(g.url, 'POST', '/v1/webrtc-token', { key: org.api_key, body: { from_number: org.from, to_number: '+14155554567' } });
  t.equal(r.status, 201);
  // A ticket whose cleanup job was lost (as if the gateway died right after the insert): the reconciler re-schedules it.
  const lost = await httpCall(g.url, 'POST', '/v1/webrtc-token', { key: org.api_key, body: { from_number: org.from, to_number: '+14155554567' } });
  t.equal(await ticketCleanupQueue(env.queues).remove(lost.body.data.call_id), 1, 'cleanup job removed');
  await eventually(async () => (await env.db.one('SELECT expires_at < now() AS past FROM call_tickets WHERE call_id = $1', [r.body.data.call_id])).past);
  const p = await Phone.connect(A);
  hello(p, r.body.data.token);
  const e = await p.frame('error');
  t.ok(['ticket_expired', 'ticket_revoked'].includes(e.code), `refused: ${e.code}`);
  t.match(await p.waitClosed(), { code: 4410 });
  const c = await settled(env, org, r.body.data.call_id);
  t.match(c, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'ticket_expired' });
  t.match(await settled(env, org, lost.body.data.call_id, 30_000), { status: 'CANCELED', disconnection_reason: 'ticket_expired' });
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);

  const cases: [unknown, string, number][] = [
    [{ type: 'hangup' }, 'hello_required', 4400],
    ['not json', 'hello_required', 4400],
    [{ type: 'hello', v: 2, ticket: 'olwt_x' }, 'unsupported_version', 4400],
    [{ type: 'hello', v: 1, ticket: 'olwt_doesnotexist' }, 'ticket_invalid', 4401],
    [{ type: 'hello', v: 1, ticket: 'olwt_a', room_token: 'b' }, 'hello_required', 4400],
    [{ type: 'hello', v: 1, room_token: 'not-a-jwt' }, 'ticket_invalid', 4401],
  ];
  for (const [msg, code, close] of cases) {
    const q = await Phone.connect(B);
    q.send(msg);
    t.match(await q.frame('error'), { code }, `${JSON.stringify(msg)} -> ${code}`);
    t.match(await q.waitClosed(), { code: close });
  }
});

t.test('room token (path B): the service placed the call; the browser attaches, gets progress, hangs up', async (t) => {
  const org = await callOrg(env);
  const { token, call_id, room_url } = await ticket(org, '+14155550008', '/v1/room-token');
  t.match(room_url, /\/v1\/softphone$/);
  await eventually(async () => ['RINGING', 'ANSWERED'].includes((await getCall(env, org, call_id)).status));
  const p = await Phone.connect(B);
  p.send({ type: 'hello', v: 1, room_token: token });
  t.match(await p.frame('welcome'), { call_id, path: 'room' });
  await p.frame('answered');
  t.same(p.types().slice(0, 3), ['welcome', 'ringing', 'answered']);
  p.send({ type: 'transport', direction: 'send' });
  t.match(await p.frame('error'), { code: 'media_unavailable' }, 'signaling only (SIGNALING_MEDIA=off): media messages answer media_unavailable');
  t.equal(p.closed, null, 'not fatal');
  p.send({ type: 'hangup' });
  t.match(await p.frame('ended'), { status: 'COMPLETED', disconnection_reason: 'api_hangup' });
  const again = await Phone.connect(A);
  again.send({ type: 'hello', v: 1, room_token: token });
  t.match(await again.frame('error'), { code: 'ticket_used' });
});

t.test('leg accounting (and this process\'s legs on /metrics), and the reconciler after a signaling crash', async (t) => {
  const org = await callOrg(env);
  const sigC = env.spawn('signaling');
  await sigC.ready();
  const C = softphoneUrl(sigC);
  const { token, call_id } = await ticket(org, '+14155550008');
  const p = await Phone.connect(C);
  hello(p, token);
  await p.frame('answered');
  const metric = async (base: string) => (await httpCall(base, 'GET', '/metrics')).text;
  const accounts = new LegAccounts(env.redis, keyer(env.config.redisPrefix));
  const legs = async (role: string) => (await accounts.counts()).get(org.organization_id)?.get(role) ?? 0;
  await eventually(async () => (await legs('browser')) === 1 && (await legs('destination')) === 1);
  t.equal(await channelsUsed(env, org.organization_id), 1, 'channels in use');
  const mc = await metric(httpBase(C));
  t.match(mc, /openline_signaling_sockets 1\n/);
  t.match(mc, /openline_signaling_legs\{role="browser"\} 1\n/, 'the browser leg is held by this process');
  t.match(await metric(httpBase(A)), /openline_signaling_legs\{role="browser"\} 0\n/, 'not by another one');

  // Every call's legs are accounted, not only browser calls': a bridge's staff phone and called party.
  const bridge = await env.request('POST', '/v1/calls/dial', { key: org.api_key,
    body: { from_number: org.from, to_number: '+14155550008', connect_number: '+12125550008' } });
  t.equal(bridge.status, 202);
  await eventually(async () => (await legs('connect')) === 1 && (await legs('destination')) === 2);
  t.pass('bridge legs counted');
  await env.request('POST', `/v1/calls/${bridge.body.data.call_id}/hangup`, { key: org.api_key });
  await settled(env, org, bridge.body.data.call_id);

  // Leg accounts lost (as after a Redis failover) are rebuilt from the call rows.
  await env.redis.del(`${env.config.redisPrefix}:legs:${org.organization_id}`);
  await eventually(async () => (await legs('browser')) === 1);
  t.pass('legs rebuilt by the reconciler');

  // The process holding the socket dies: once its heartbeat lapses the call is ended like a closed socket.
  await sigC.kill('SIGKILL');
  const c = await settled(env, org, call_id, 30_000);
  t.match(c, { status: 'COMPLETED', disconnection_reason: 'browser_hangup' });
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
  await eventually(async () => [...((await accounts.counts()).get(org.organization_id)?.values() ?? [])].every((n) => n === 0));
  t.pass('no live legs left');
});
