// Redis loses its state (issue 19, item 10): a Redis this file owns, without persistence, is SIGKILLed mid-call and
// started again empty. Before anything is admitted the channel and spend accounts are rebuilt from PostgreSQL's
// live calls (no call past the channel limit or the spend cap), and the workers re-arm from PostgreSQL what Redis
// held for live calls (call-length limits, the sandbox's scripted progress) and the webhook deliveries still owed,
// so every committed event is delivered. A call admitted before the loss but committed after the rebuild is
// re-admitted before it dials, or canceled. Legs of a call that ended just before a loss are hung up, and signaling
// does not take heartbeats lost with Redis for dead processes.
import t from 'tap';
import { CallQueues } from '../../shared/calls/queues.ts';
import { CallRuntime } from '../../shared/calls/runtime.ts';
import { LegAccounts } from '../../shared/channels/legs.ts';
import { createLogger } from '../../shared/log.ts';
import { keyer } from '../../shared/redis.ts';
import { aliveKey, HEARTBEAT_TTL_MS, reconcileSignaling } from '../../signaling/reconciler.ts';
import { insertCall } from '../../shared/calls/store.ts';
import { uuidv7 } from '../../shared/ids.ts';
import { deliveryId } from '../../shared/webhooks/signing.ts';
import { eventually } from '../helpers/env.ts';
import { OwnRedis } from '../helpers/own-stores.ts';
import { aiCall, CALL_EVENTS, callEnv, callOrg, channelsUsed, dial, getCall, settled, startRx, subscribeCalls, waitStatus } from './helpers.ts';

t.setTimeout(400_000);
// Sandbox seconds last 0.1 s: a ring-out (30 s) takes 3 s, so a call can be killed while it rings, and a 2-minute
// call-length limit (12 s) falls well before the calls reconciler's first look at a call that stopped moving (30 s).
const SCALE = 0.1;
const redis = await OwnRedis.create(t);
const { env } = await callEnv(t, { REDIS_URL: redis.url, SANDBOX_TIME_SCALE: String(SCALE) });
const rx = await startRx(t);

const FOREVER = '+14155550008';
const liveChannels = async (orgId: string) =>
  (await env.db.one('SELECT COALESCE(sum(channels), 0)::int AS n FROM calls WHERE organization_id = $1 AND ended_at IS NULL', [orgId])).n;

t.test('SIGKILL Redis mid-call and restart it empty: limits hold, timers and deliveries are re-armed', async (t) => {
  // A: 4 never-ending bridges on a 10-channel limit; its receiver fails until Redis is back, so deliveries are
  // waiting for a retry when Redis dies.
  const a = await callOrg(env, { channel_limit: 10 });
  // B: a 2-cent cap, all of it reserved by one never-ending AI call that the 2-minute call-length limit ends.
  const b = await callOrg(env, { daily_spend_cap_cents: 2, max_call_minutes: 2 });
  // C: an AI call that rings out (its carrier's scripted no-answer falls due after the restart).
  const c = await callOrg(env);
  // This file polls its calls through the API: room above the default 600 requests a minute per key.
  await env.db.none('UPDATE api_keys SET rate_limit_per_minute = 100000 WHERE organization_id = ANY($1::uuid[])',
    [[a.organization_id, b.organization_id, c.organization_id]]);
  for (const org of [a, b, c]) await subscribeCalls(env, rx, org);
  for (const type of CALL_EVENTS) rx.setDefault(`/${a.organization_id}/${type}`, 500);

  const bridges = await Promise.all(Array.from({ length: 4 }, () => dial(env, a, FOREVER, '+12125550008')));
  t.same(bridges.map((r) => r.status), [202, 202, 202, 202]);
  const bCall = await aiCall(env, b, FOREVER);
  t.equal(bCall.status, 202);
  const aIds = bridges.map((r) => r.body.data.call_id as string);
  const bId = bCall.body.data.call_id as string;
  for (const id of aIds) await waitStatus(env, a, id, 'ANSWERED');
  const bAnswered = await waitStatus(env, b, bId, 'ANSWERED');
  const bDeadline = Date.parse(bAnswered.answered_at) + 120 * 1000 * SCALE;
  await rx.waitFor(() => rx.received(`/${a.organization_id}/new_call`).length >= 4);
  const cCall = await aiCall(env, c, '+14155550002');
  const cId = cCall.body.data.call_id as string;
  await waitStatus(env, c, cId, 'RINGING');

  const marker = `${env.config.redisPrefix}:test:marker`;
  await env.redis.set(marker, '1');
  await redis.kill();
  t.equal((await getCall(env, c, cId)).status, 'RINGING', 'killed while C rings');
  t.ok(Date.now() < bDeadline, 'killed before B reaches its call-length limit');
  await redis.start();
  t.equal(await env.redis.exists(marker), 0, 'Redis came back empty');

  // No over-admission: 8 of 10 channels are live, so one more bridge fits and two do not.
  const more = await Promise.all(Array.from({ length: 3 }, () => dial(env, a, FOREVER, '+12125550008')));
  t.same(more.map((r) => r.status).sort(), [202, 409, 409], 'one bridge admitted, two refused');
  for (const r of more.filter((x) => x.status === 409)) t.match(r.body.error, { code: 'channel_limit_exceeded', category: 'account_limit' });
  const extra = more.find((r) => r.status === 202)!.body.data.call_id as string;
  t.equal(await liveChannels(a.organization_id), 10, '10 channels of live calls in PostgreSQL');
  t.equal(await channelsUsed(env, a.organization_id), 10, 'and the rebuilt counter says 10');

  // The spend cap holds: B's live call still reserves the whole cap.
  const refused = await aiCall(env, b, FOREVER);
  t.equal(refused.status, 402);
  t.match(refused.body.error, { code: 'spend_cap_reached' });

  // A call admitted before the loss whose row committed after the rebuild holds nothing: its dial re-admits it,
  // and at the limit it is canceled instead of dialed.
  const lateId = uuidv7();
  const pending = { status: 'PENDING' as const, reason: null, originated_at: null, answered_at: null, ended_at: null };
  await insertCall(env.db, {
    id: lateId, organization_id: a.organization_id, api_key_id: a.api_key_id, user_id: null, type: 'bridge', from_number: a.from,
    to_number: '+12125550008', connect_number: FOREVER, phone_number_id: null, agent_id: null, agent: null, record: false,
    legs: { connect: { role: 'connect', number: FOREVER, ...pending }, destination: { role: 'destination', number: '+12125550008', ...pending } },
    channels: 2, carrier: 'sandbox', time_scale: SCALE, max_duration_seconds: 3600, ring_timeout_seconds: 30, price_cents_per_minute: 1,
    spend_reserved_cents: 121, created_at: new Date(),
  });
  const queues = new CallQueues(env.queues);
  await queues.enqueueDial(lateId);
  const late = await eventually(async () => { const x = await getCall(env, a, lateId); return x.status !== 'QUEUED' ? x : null; }, 30_000);
  t.match(late, { status: 'CANCELED', disconnection_reason: 'channel_limit_exceeded' }, 'over the limit: canceled before dialing');
  t.ok(late.legs.every((l: { status: string }) => l.status === 'PENDING'), 'no leg was dialed');
  t.equal(await liveChannels(a.organization_id), 10, 'still 10 channels live');
  // The same for spend: B's live call reserves all of its cap.
  const lateAi = uuidv7();
  await insertCall(env.db, {
    id: lateAi, organization_id: b.organization_id, api_key_id: b.api_key_id, user_id: null, type: 'ai', from_number: b.from,
    to_number: FOREVER, connect_number: null, phone_number_id: null, agent_id: null,
    agent: { id: null, name: 'A', greeting: 'Hi', prompt: '', voice: 'neutral' }, record: false,
    legs: { destination: { role: 'destination', number: FOREVER, ...pending } },
    channels: 1, carrier: 'sandbox', time_scale: SCALE, max_duration_seconds: 120, ring_timeout_seconds: 30, price_cents_per_minute: 1,
    spend_reserved_cents: 1, created_at: new Date(),
  });
  await queues.enqueueDial(lateAi);
  const lateB = await eventually(async () => { const x = await getCall(env, b, lateAi); return x.status !== 'QUEUED' ? x : null; }, 30_000);
  t.match(lateB, { status: 'CANCELED', disconnection_reason: 'spend_cap_reached' }, 'past the spend cap: canceled before dialing');

  for (const type of CALL_EVENTS) rx.setDefault(`/${a.organization_id}/${type}`, 200);

  // C's scripted ring-out was re-armed: it rings out as the sandbox said, not cut off as stuck.
  const cEnd = await settled(env, c, cId, 30_000);
  t.match(cEnd, { status: 'NO_ANSWER', failure_code: 'no_answer' });

  // B's call-length limit was re-armed: it ends at its deadline, not a minute later by the reconciler's backstop.
  const bEnd = await settled(env, b, bId, 90_000);
  const seenAt = Date.now();
  t.match(bEnd, { status: 'COMPLETED', disconnection_reason: 'max_duration_reached', duration_seconds: 120 });
  t.ok(seenAt < bDeadline + 10_000, `ended by its limit timer (seen ${seenAt - bDeadline} ms after the deadline)`);

  // Live calls end on hang-up and give their channels back; a fresh call completes.
  for (const id of [...aIds, extra]) t.equal((await env.request('POST', `/v1/calls/${id}/hangup`, { key: a.api_key })).status, 200);
  for (const id of [...aIds, extra]) t.match(await settled(env, a, id, 30_000), { status: 'COMPLETED', disconnection_reason: 'api_hangup' });
  await eventually(async () => (await channelsUsed(env, a.organization_id)) === 0, 20_000);
  const fresh = await dial(env, a, '+14155554567', '+12125554567');
  t.equal(fresh.status, 202);
  t.match(await settled(env, a, fresh.body.data.call_id, 30_000), { status: 'COMPLETED', call_outcome: 'answered' });

  // Every committed event reaches every subscription that matched it.
  const owed = await env.db.any<{ event_id: string; subscription_id: string; event_type: string }>(
    `SELECT e.id AS event_id, s.id AS subscription_id, e.event_type FROM events e
       JOIN webhook_subscriptions s ON s.organization_id = e.organization_id AND s.event_type = e.event_type
      WHERE e.organization_id = ANY($1::uuid[])`, [[a.organization_id, b.organization_id, c.organization_id]]);
  t.ok(owed.length >= 20, `${owed.length} deliveries owed`);
  const missing = () => {
    const got = new Set(rx.requests.filter((r) => r.status === 200).map((r) => r.webhookId));
    return owed.filter((o) => !got.has(deliveryId(o.event_id, o.subscription_id)));
  };
  await rx.waitFor(() => missing().length === 0, 120_000).catch(() => undefined);
  t.same(missing(), [], 'every committed event delivered');
  // A delivery that was retrying when Redis died goes on with its next attempt number.
  const logs = await env.db.any<{ attempts: number[] }>(
    `SELECT array_agg(attempt ORDER BY id) AS attempts FROM webhook_delivery_attempts WHERE organization_id = $1 GROUP BY webhook_id`,
    [a.organization_id]);
  t.ok(logs.some((l) => l.attempts.length > 1), 'some of A\'s deliveries were retried across the loss');
  t.same(logs.filter((l) => l.attempts.some((n, i) => n !== i + 1)), [], 'attempts numbered 1, 2, 3 ... across the loss');
});

t.test('a call that ended just before the loss gets the legs still up hung up', async (t) => {
  const org = await callOrg(env);
  // Its end committed, its hang-up commands were in the Redis that is lost (here: never queued at all).
  const id = uuidv7();
  const up = (role: 'connect' | 'destination', number: string) => ({ role, number, status: 'ANSWERED' as const, reason: null,
    originated_at: new Date().toISOString(), answered_at: new Date().toISOString(), ended_at: null });
  await insertCall(env.db, {
    id, organization_id: org.organization_id, api_key_id: null, user_id: null, type: 'bridge', from_number: org.from,
    to_number: '+12125550008', connect_number: FOREVER, phone_number_id: null, agent_id: null, agent: null, record: false,
    legs: { connect: up('connect', FOREVER), destination: up('destination', '+12125550008') },
    channels: 2, carrier: 'sandbox', time_scale: SCALE, max_duration_seconds: 3600, ring_timeout_seconds: 30, price_cents_per_minute: 1,
    spend_reserved_cents: 121, created_at: new Date(),
  });
  await env.db.none(`UPDATE calls SET status = 'COMPLETED', call_outcome = 'answered', disconnection_reason = 'api_hangup',
    originated_at = now(), answered_at = now(), ended_at = now(), picked_up = true WHERE id = $1`, [id]);
  await redis.kill();
  await redis.start();
  const legs = await eventually(async () => {
    const row = await env.db.one('SELECT legs FROM calls WHERE id = $1', [id]);
    return Object.values(row.legs).every((l: any) => l.status === 'ENDED') ? row.legs : null;
  }, 30_000);
  t.match(legs, { connect: { reason: 'local_hangup' }, destination: { reason: 'local_hangup' } });
});

t.test('signaling does not take heartbeats lost with Redis for dead processes', async (t) => {
  const org = await callOrg(env);
  const key = keyer(env.config.redisPrefix);
  const rt = new CallRuntime({ config: env.config, db: env.db, redis: env.redis, key, log: createLogger('test', 'warn'), queues: env.queues, tokenKeys: env.tokenKeys }, false);
  const legs = new LegAccounts(env.redis, key);
  // A browser call answered on signaling process "sig-x", whose heartbeat this test writes (or stops writing).
  const id = uuidv7();
  const leg = (role: 'destination' | 'browser', number: string) => ({ role, number, status: 'ANSWERED' as const, reason: null,
    originated_at: new Date().toISOString(), answered_at: new Date().toISOString(), ended_at: null, ...(role === 'browser' ? { signaling: 'sig-x' } : {}) });
  await insertCall(env.db, {
    id, organization_id: org.organization_id, api_key_id: null, user_id: org.user_id, type: 'webrtc', from_number: org.from,
    to_number: FOREVER, connect_number: null, phone_number_id: null, agent_id: null, agent: null, record: false,
    legs: { destination: leg('destination', FOREVER), browser: leg('browser', 'browser:test') },
    channels: 1, carrier: 'sandbox', time_scale: SCALE, max_duration_seconds: 3600, ring_timeout_seconds: 30, price_cents_per_minute: 1,
    spend_reserved_cents: 60, created_at: new Date(),
  });
  await env.db.none(`UPDATE calls SET status = 'ANSWERED', originated_at = now(), answered_at = now(), picked_up = true WHERE id = $1`, [id]);
  const reconcile = () => eventually(() => reconcileSignaling(rt, legs), 10_000);
  const status = async () => (await env.db.one('SELECT status FROM calls WHERE id = $1', [id])).status;

  await env.redis.set(aliveKey(rt, 'sig-x'), '1', 'PX', 60_000);
  t.match(await reconcile(), { abandoned: 0 });
  t.equal(await status(), 'ANSWERED', 'a live heartbeat: the call stays');

  await redis.kill();
  await redis.start();
  const back = Date.now();
  t.match(await reconcile(), { abandoned: 0 }, 'Redis came back without the heartbeat: no one is judged yet');
  t.equal(await status(), 'ANSWERED');

  // sig-x really is gone: once Redis has kept state longer than a heartbeat lives, its call is ended.
  await eventually(async () => Date.now() > back + HEARTBEAT_TTL_MS + 100, 30_000);
  await eventually(async () => (await reconcileSignaling(rt, legs))?.abandoned === 1, 20_000, 500);
  t.match(await env.db.one('SELECT status, disconnection_reason FROM calls WHERE id = $1', [id]),
    { status: 'COMPLETED', disconnection_reason: 'browser_hangup' });
});
