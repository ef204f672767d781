// The sandbox carrier rings browsers (POST /v1/sandbox/calls/inbound with ring: true): shared/calls/inbound.ts
// ringSandboxInbound, the caller's script in shared/carriers/sandbox.ts, the accept path of signaling/incoming.ts.
// Real gateway, workers and signaling processes (SIGNALING_MEDIA=off: the audio is test/console/phone-simulate.test.ts's),
// PostgreSQL, Redis and BullMQ; browsers are WebSocket clients listening with a client token.
import t from 'tap';
import { sequencedEventJobId, CARRIER_EVENTS_QUEUE } from '../../shared/carriers/carrier.ts';
import { setLimits } from '../../shared/calls/limits.ts';
import { rearmCalls } from '../../shared/calls/rearm.ts';
import { CallRuntime } from '../../shared/calls/runtime.ts';
import { createLogger } from '../../shared/log.ts';
import { keyer } from '../../shared/redis.ts';
import { eventually } from '../helpers/env.ts';
import { Phone, softphoneUrl } from '../signaling/softphone.ts';
import { callEnv, callOrg, channelsUsed, deliveriesFor, settled, startRx, subscribeCalls } from './helpers.ts';

// Sandbox at 0.1 (talk_seconds 20 lasts 2 s); browsers ring 3 real seconds.
const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.1', SANDBOX_INBOUND_RING_SECONDS: '3', SIGNALING_MEDIA: 'off' });
const sig = env.spawn('signaling');
await sig.ready();
const url = softphoneUrl(sig);
const rx = await startRx(t);
const org = await callOrg(env);
await subscribeCalls(env, rx, org);
const number = org.from;
const CALLER = '+12125550187';

const ring = (body: Record<string, unknown>, key = org.api_key) =>
  env.request('POST', '/v1/sandbox/calls/inbound', { key, body: { from_number: CALLER, to_number: number, ring: true, ...body } });
const rows = async () => (await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [org.organization_id])).n as number;
const mint = async () => {
  const r = await env.request('POST', '/v1/client-tokens', { key: org.api_key, body: { from_numbers: [number] } });
  if (r.status !== 201) throw new Error(`mint: ${r.status} ${r.text}`);
  return r.body.data.token as string;
};
async function listener(): Promise<Phone> {
  const ph = await Phone.connect(url);
  t.teardown(() => ph.close());
  ph.send({ type: 'hello', v: 1, client_token: await mint() });
  await ph.frame('listening');
  return ph;
}
const pendingJob = (callId: string, seq: number) => env.queues.get(CARRIER_EVENTS_QUEUE).getJob(sequencedEventJobId(`${callId}-destination`, seq));

t.test('nobody accepts: the browser rings, the call ends NO_ANSWER at the ring time with call_no_answer; channels freed', async (t) => {
  const a = await listener();
  const started = Date.now();
  const r = await ring({});
  t.equal(r.status, 201, `201 (${r.status === 201 ? 'ringing' : r.text})`);
  const call = r.body.data;
  t.match(call, { type: 'inbound', direction: 'inbound', status: 'RINGING', from_number: CALLER, to_number: number, picked_up: false });
  const inc = await a.frame('incoming');
  t.match(inc, { call_id: call.id, from_number: CALLER, to_number: number, ring_timeout_seconds: 3 });
  const job = await pendingJob(call.id, 1);
  t.match(job?.data, { kind: 'ended', reason: 'no_answer', seq: 1, role: 'destination' }, 'the ring timeout is the caller leg\'s numbered no_answer job');
  t.equal(await channelsUsed(env, org.organization_id), 1, 'one channel while it rings');
  t.match(await a.frame('incoming_stopped', 30_000), { call_id: call.id, reason: 'ended' }, 'the browser stops ringing');
  const c = await settled(env, org, call.id, 30_000);
  t.match(c, { status: 'NO_ANSWER', failure_code: 'no_answer', picked_up: false, cost_cents: 0 });
  t.ok(Date.parse(c.ended_at) - started >= 2500, `ended at the ring time (${Date.parse(c.ended_at) - started} ms after the request)`);
  await eventually(async () => deliveriesFor(rx, call.id).call_no_answer, 30_000);
  t.ok(deliveriesFor(rx, call.id).new_call, 'new_call and call_no_answer delivered');
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
  t.ok(a.closed === null, 'the browser still listens');
});

t.test('accepted: welcome, answered, then COMPLETED after talk_seconds (the caller hangs up); cost and channels released', async (t) => {
  const a = await listener();
  const b = await listener();
  const r = await ring({ talk_seconds: 20 });
  t.equal(r.status, 201, `201 (${r.status === 201 ? 'ringing' : r.text})`);
  const id = r.body.data.id as string;
  await a.frame('incoming');
  await b.frame('incoming');
  a.send({ type: 'accept', call_id: id });
  t.match(await a.frame('welcome'), { call_id: id, path: 'inbound', media: null });
  t.match(await b.frame('incoming_stopped'), { call_id: id, reason: 'answered_elsewhere' }, 'the other browser stops ringing');
  await a.frame('answered', 20_000);
  t.equal(await pendingJob(id, 1).then((j) => (j?.data as { kind?: string } | undefined)?.kind), 'answered', 'the no_answer job was replaced by the answer');
  const answeredAt = Date.now();
  const ended = await a.frame('ended', 30_000);
  t.match(ended, { call_id: id, status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'remote_hangup' });
  t.ok(Date.now() - answeredAt >= 1500, 'the caller talked its 20 sandbox seconds (2 s at 0.1) first');
  t.same(a.types().filter((x) => x !== 'pong'), ['listening', 'incoming', 'welcome', 'answered', 'ended'], 'frames in order, once each');
  const c = await settled(env, org, id, 30_000);
  t.match(c, { status: 'COMPLETED', picked_up: true, duration_seconds: 20, cost_cents: 1 });
  t.match(c.legs.find((l: { role: string }) => l.role === 'destination'), { status: 'ENDED', end_reason: 'completed', number: CALLER });
  t.match(c.legs.find((l: { role: string }) => l.role === 'browser'), { status: 'ENDED' });
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
  const d = await eventually(async () => { const x = deliveriesFor(rx, id); return x.new_call && x.call_completed ? x : null; }, 30_000);
  t.ok(d.call_completed, 'call_completed delivered');
  t.ok(b.closed === null, 'the other browser still listens');
});

t.test('accepted, then the browser hangs up first: COMPLETED by the browser, the scripted hang-up withdrawn', async (t) => {
  const a = await listener();
  const r = await ring({ talk_seconds: 3600 });
  const id = r.body.data.id as string;
  await a.frame('incoming');
  a.send({ type: 'accept', call_id: id });
  await a.frame('answered', 20_000);
  t.match((await pendingJob(id, 2))?.data, { kind: 'ended', reason: 'completed' }, 'the caller\'s hang-up is scheduled');
  a.send({ type: 'hangup' });
  const ended = await a.frame('ended', 30_000);
  t.match(ended, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'api_hangup' });
  const c = await settled(env, org, id, 30_000);
  t.match(c.legs.find((l: { role: string }) => l.role === 'destination'), { status: 'ENDED', end_reason: 'local_hangup' });
  t.equal(await pendingJob(id, 2), undefined, 'the scripted hang-up was removed');
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
});

t.test('refusals write nothing: validation (fields), unknown number, another organization, scope, reject, channel limit', async (t) => {
  const before = await rows();
  const a = await listener();
  for (const [body, field] of [[{ talk_seconds: 0 }, 'talk_seconds'], [{ talk_seconds: 3601 }, 'talk_seconds'], [{ talk_seconds: 1.5 }, 'talk_seconds'],
    [{ ring: 'yes' }, 'ring'], [{ outcome: 'answered' }, 'outcome'], [{ duration_seconds: 5 }, 'duration_seconds'],
    [{ ring: false, talk_seconds: 5, outcome: 'answered', duration_seconds: 5 }, 'talk_seconds'], [{ ring: false }, 'outcome']] as const) {
    const r = await ring(body);
    t.equal(r.status, 400, `${JSON.stringify(body)}: 400`);
    t.equal(r.body.error?.code, 'validation_error');
    t.ok(r.body.error?.fields?.[field], `${JSON.stringify(body)}: fields.${field} (${JSON.stringify(r.body.error?.fields)})`);
  }
  let r = await ring({ to_number: '+14155019876' });
  t.equal(r.status, 404); t.equal(r.body.error.code, 'not_found');
  const other = await callOrg(env);
  r = await ring({ to_number: other.from });
  t.equal(r.status, 404, 'another organization\'s number is not found');
  r = await ring({}, other.api_key);
  t.equal(r.status, 404, 'another organization\'s key cannot ring our number');
  const readOnly = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['calls:read'] });
  r = await ring({}, readOnly.apiKey);
  t.equal(r.status, 403); t.equal(r.body.error.code, 'scope_missing');
  const pid = (await env.db.one('SELECT id FROM phone_numbers WHERE phone_number = $1', [number])).id;
  t.equal((await env.request('PATCH', `/v1/phone-numbers/${pid}`, { key: org.api_key, body: { inbound: 'reject' } })).status, 200);
  r = await ring({});
  t.equal(r.status, 409); t.match(r.body.error, { code: 'state_conflict', fields: { entity: 'phone_number', inbound: 'reject' } });
  await env.request('PATCH', `/v1/phone-numbers/${pid}`, { key: org.api_key, body: { inbound: 'softphone' } });
  await setLimits(env.db, org.organization_id, { channel_limit: 0 });
  r = await ring({});
  t.equal(r.status, 409); t.match(r.body.error, { code: 'channel_limit_exceeded', category: 'account_limit' });
  await setLimits(env.db, org.organization_id, { channel_limit: 1000, daily_spend_cap_cents: 0 });
  r = await ring({});
  t.equal(r.status, 402); t.match(r.body.error, { code: 'spend_cap_reached', category: 'account_limit' });
  await setLimits(env.db, org.organization_id, { daily_spend_cap_cents: 100_000_000 });
  t.equal(await rows(), before, 'no call rows');
  t.equal(await channelsUsed(env, org.organization_id), 0, 'no channel held');
  t.notOk(a.frames.some((f) => f.type === 'incoming'), 'nothing rang');
  // Without ring the call is recorded whole, as before.
  r = await env.request('POST', '/v1/sandbox/calls/inbound', { key: org.api_key, body: { from_number: CALLER, to_number: number, duration_seconds: 75, outcome: 'answered' } });
  t.equal(r.status, 201);
  t.match(r.body.data, { status: 'COMPLETED', duration_seconds: 75, picked_up: true });
  await new Promise((res) => setTimeout(res, 200));
  t.notOk(a.frames.some((f) => f.type === 'incoming'), 'a recorded call rings nobody');
});

t.test('hung up through the API while it rings: CANCELED, the browsers stop ringing, the ring timeout withdrawn', async (t) => {
  const a = await listener();
  const id = (await ring({})).body.data.id as string;
  await a.frame('incoming');
  const r = await env.request('POST', `/v1/calls/${id}/hangup`, { key: org.api_key });
  t.equal(r.status, 200, r.text);
  t.match(await a.frame('incoming_stopped'), { call_id: id, reason: 'ended' });
  const c = await settled(env, org, id, 30_000);
  t.match(c, { status: 'CANCELED', picked_up: false });
  t.equal(await pendingJob(id, 1), undefined, 'the no_answer job was removed');
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
});

t.test('re-armed after Redis lost the jobs (rearmCalls, as the workers run it): the ring timeout while it rings, the hang-up once answered', async (t) => {
  const rt = new CallRuntime({ config: env.config, db: env.db, redis: env.redis, key: keyer(env.config.redisPrefix), log: createLogger('test', 'warn'),
    queues: env.queues, tokenKeys: env.tokenKeys }, true);
  const events = env.queues.get(CARRIER_EVENTS_QUEUE);
  const a = await listener();
  // Ringing: the no_answer job is lost; re-armed under its id and due at the original ring time.
  const r1 = (await ring({})).body.data;
  await a.frame('incoming');
  t.equal(await events.remove(sequencedEventJobId(`${r1.id}-destination`, 1)), 1, 'the ring timeout job is gone');
  await rearmCalls(rt);
  const job = await pendingJob(r1.id, 1);
  t.match(job?.data, { kind: 'ended', reason: 'no_answer', seq: 1 }, 'the ring timeout is back');
  t.equal(Date.parse((job!.data as { at: string }).at), Date.parse(r1.created_at) + 3000, 'due at the original ring time');
  t.match(await settled(env, org, r1.id, 30_000), { status: 'NO_ANSWER', failure_code: 'no_answer' });
  // Answered: the caller's hang-up job is lost; re-armed, the call ends COMPLETED after its talk time.
  const r2 = (await ring({ talk_seconds: 30 })).body.data;
  await eventually(async () => a.frames.find((f) => f.type === 'incoming' && f.call_id === r2.id));
  a.send({ type: 'accept', call_id: r2.id });
  await a.frame('answered', 20_000);
  t.equal(await events.remove(sequencedEventJobId(`${r2.id}-destination`, 2)), 1, 'the hang-up job is gone');
  await rearmCalls(rt);
  t.match((await pendingJob(r2.id, 2))?.data, { kind: 'ended', reason: 'completed', seq: 2 }, 'the hang-up is back');
  const c = await settled(env, org, r2.id, 30_000);
  t.match(c, { status: 'COMPLETED', disconnection_reason: 'remote_hangup', duration_seconds: 30 });
});
