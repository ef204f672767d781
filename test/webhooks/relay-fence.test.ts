// The outbox relay across a Redis that loses its state (shared/webhooks/relay.ts, rearm.ts): no batch is marked
// relayed while Redis's epoch is missing or after it changed under the batch, and re-arming waits for relay
// transactions in flight, then enqueues the deliveries still owed: never a finished one, and a retrying one where it
// left off. The relay runs here in the test process (no workers), against the real PostgreSQL and Redis.
import { Queue } from 'bullmq';
import t from 'tap';
import { eventsInsertSql } from '../../shared/events/outbox.ts';
import { uuidv7 } from '../../shared/ids.ts';
import { keyer } from '../../shared/redis.ts';
import { RedisState } from '../../shared/redis-state.ts';
import { DELIVERY_QUEUE, retryDelayMs, type DeliveryJob } from '../../shared/webhooks/delivery-jobs.ts';
import { rearmDeliveries } from '../../shared/webhooks/rearm.ts';
import { RedisStateChanged, relayBatch, type BulkJob } from '../../shared/webhooks/relay.ts';
import { deliveryId } from '../../shared/webhooks/signing.ts';
import { testEnv } from '../helpers/env.ts';
import { subscribe } from './helpers.ts';

const SCALE = 0.01;
const env = await testEnv(t, { env: { WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: String(SCALE) } });
const state = new RedisState(env.redis, keyer(env.config.redisPrefix));
const queue = new Queue(DELIVERY_QUEUE, { connection: env.redis, prefix: env.config.redisPrefix });
t.teardown(() => queue.close());
const org = await env.bootstrap();
const sub = await subscribe(env, org.api_key, 'http://127.0.0.1:9/hook', 'call_completed');

const enqueue = (jobs: BulkJob[]) => queue.addBulk(jobs);
const relay = (add: (jobs: BulkJob[]) => Promise<unknown> = enqueue) =>
  relayBatch(env.db, add, 1000, SCALE, () => state.epoch());
const unrelayed = async () => (await env.db.one('SELECT count(*)::int AS n FROM events WHERE relayed_at IS NULL')).n;
async function emit(n: number): Promise<string[]> {
  const rows = Array.from({ length: n }, () => ({ id: uuidv7(), organizationId: org.organization_id, eventType: 'call_completed', data: { id: uuidv7() } }));
  await env.db.none(eventsInsertSql(rows));
  return rows.map((r) => r.id);
}
const jobIds = async () => (await queue.getJobs(['waiting', 'delayed', 'prioritized'])).map((j) => j.id!).sort();

t.test('no epoch (Redis lost its state, not re-armed yet): nothing is relayed', async (t) => {
  await emit(3);
  t.match(await relay(), { events: 0, waiting: true });
  t.equal(await unrelayed(), 3);
  t.same(await jobIds(), []);
});

t.test('the epoch changes while a batch is enqueued: the batch does not commit, and is relayed again', async (t) => {
  await state.begin();
  const err = await relay(async (jobs) => { await enqueue(jobs); await state.begin(); }).catch((e: unknown) => e);
  t.ok(err instanceof RedisStateChanged, 'the batch is refused');
  t.equal(await unrelayed(), 3, 'still unrelayed');
  const r = await relay();
  t.match(r, { events: 3, jobs: 3 });
  t.equal(await unrelayed(), 0);
  t.equal((await jobIds()).length, 3, 'one job per delivery, not two');
});

t.test('re-arming waits for relays in flight, then enqueues what is owed as it stood', async (t) => {
  await queue.obliterate({ force: true }); // Redis lost the jobs
  await emit(2);
  // A relay transaction enqueues into the Redis about to be lost and is slow to commit.
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  let enqueued!: () => void;
  const inFlight = new Promise<void>((r) => { enqueued = r; });
  const slow = relay(async (jobs) => { await enqueue(jobs); enqueued(); await held; });
  await inFlight;
  await queue.obliterate({ force: true });
  let rearmed = false;
  const rearm = rearmDeliveries(env.db, enqueue, SCALE).then((r) => { rearmed = true; return r; });
  await new Promise((r) => setTimeout(r, 500));
  t.notOk(rearmed, 're-arming waits for the relay transaction');
  release();
  t.match(await slow, { events: 2 });
  const r = await rearm;
  t.match(r, { events: 5, jobs: 5 }, 'the 3 earlier events and the 2 of the relay that was in flight');
  t.same(await jobIds(), [...(await env.db.any('SELECT id FROM events')).map((e) => deliveryId(e.id, sub.id))].sort());

  // Attempts logged: one delivery succeeded, one failed for good, one is retrying after its 3rd attempt.
  await queue.obliterate({ force: true });
  const all = (await env.db.any<{ id: string }>('SELECT id FROM events ORDER BY seq')).map((e) => e.id);
  const log = (eventId: string, attempt: number, outcome: string, next: Date | null) => env.db.none(
    `INSERT INTO webhook_delivery_attempts (subscription_id, organization_id, webhook_id, event_id, event_type, attempt, outcome,
       response_status, latency_ms, error, attempted_at, next_attempt_at) VALUES ($1, $2, $3, $4, 'call_completed', $5, $6, 500, 1, null, now(), $7)`,
    [sub.id, org.organization_id, deliveryId(eventId, sub.id), eventId, attempt, outcome, next]);
  await log(all[0], 1, 'succeeded', null);
  await log(all[1], 14, 'failed', null);
  const next = new Date(Date.now() + 60_000);
  for (const n of [1, 2]) await log(all[2], n, 'retrying', new Date());
  await log(all[2], 3, 'retrying', next);
  t.match(await rearmDeliveries(env.db, enqueue, SCALE), { events: 5, jobs: 3 });
  t.same(await jobIds(), all.slice(2).map((id) => deliveryId(id, sub.id)).sort(), 'finished deliveries are not re-armed');
  const retrying = (await queue.getJob(deliveryId(all[2], sub.id)))!;
  t.equal((retrying.data as DeliveryJob).attemptsBefore, 3);
  t.equal(retrying.opts.attempts, 11, '14 attempts in all');
  t.ok(Math.abs(retrying.opts.delay! - 60_000) < 5000, `its next attempt when the log said (in ${retrying.opts.delay} ms)`);
  t.same(retrying.opts.backoff, { type: 'exponential', delay: retryDelayMs(4, SCALE) }, 'the retry after attempt 4 waits as long as ever');
  t.equal((await queue.getJob(deliveryId(all[3], sub.id)))!.data.attemptsBefore, undefined, 'never attempted: from the start');
});

t.test('a subscription created after an event was relayed is not owed it', async (t) => {
  await queue.obliterate({ force: true });
  await env.db.none('DELETE FROM webhook_delivery_attempts');
  await subscribe(env, org.api_key, 'http://127.0.0.1:9/later', 'call_completed');
  t.match(await rearmDeliveries(env.db, enqueue, SCALE), { events: 5, jobs: 5 });
});
