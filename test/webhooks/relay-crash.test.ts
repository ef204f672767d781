import t from 'tap';
import { eventsInsertSql, wakeRelay } from '../../shared/events/outbox.ts';
import { uuidv7 } from '../../shared/ids.ts';
import { testEnv, type TestEnv } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { sleep, subscribe } from './helpers.ts';

// The workers process dies in the middle of relaying; after a restart every event arrives, and exactly once
// per subscription after dedupe by webhook-id (delivery is at least once: a delivery in flight at the kill may
// be repeated with the same webhook-id).
// Deliveries in flight at a kill wait for their BullMQ lock to expire (15 s) before they are retried: allow
// this file more than the default 180 s on a busy machine.
t.setTimeout(360_000);
const env = await testEnv(t, { env: { WEBHOOK_ALLOW_INSECURE: '1', SANDBOX_TIME_SCALE: '0.01', WEBHOOK_RETRY_SCALE: '0.01' } });
const rx = await startReceiver(t);
const spawnWorkers = (extra: Record<string, string> = {}) => env.spawn('workers', extra);

type TT = Pick<typeof t, 'equal' | 'same'>;
/** Commits `n` events in one multi-row insert and wakes the relay, as a producer does; returns their ids. */
async function emitMany(e: TestEnv, organizationId: string, n: number, tag: string): Promise<string[]> {
  const rows = Array.from({ length: n }, (_, i) => ({ id: uuidv7(), organizationId, eventType: 'call_completed', data: { id: `${tag}-${i}` } }));
  await e.db.none(eventsInsertSql(rows));
  wakeRelay(e.db);
  return rows.map((r) => r.id);
}

function assertExactlyOnce(t: TT, path: string, expected: string[]) {
  const reqs = rx.received(path);
  const unique = rx.unique(path);
  const ids = unique.map((r) => r.body.id as string);
  t.equal(unique.length, expected.length, `${expected.length} distinct deliveries (${reqs.length} requests in all)`);
  t.equal(new Set(ids).size, ids.length, 'no event under two webhook-ids');
  t.same([...ids].sort(), [...expected].sort(), 'every event arrived');
}

t.test('killed between enqueue and commit: the re-run enqueues nothing twice', async (t) => {
  const org = await env.bootstrap();
  await subscribe(env, org.api_key, rx.url('/fault-a'), 'call_completed');
  await subscribe(env, org.api_key, rx.url('/fault-b'), 'call_completed');
  const ids = await emitMany(env, org.organization_id, 600, 'fault');
  const doomed = spawnWorkers({ OUTBOX_RELAY_FAULT: 'kill-after-enqueue' });
  const code = await doomed.exited;
  t.equal(code, null, 'the workers process killed itself (SIGKILL) right after enqueueing');
  const pending = await env.db.one('SELECT count(*)::int AS n FROM events WHERE relayed_at IS NULL AND organization_id = $1', [org.organization_id]);
  t.equal(pending.n, 600, 'the relay transaction never committed: all 600 events still unrelayed');

  const workers = spawnWorkers();
  await workers.ready();
  await rx.waitForCount(600, { path: '/fault-a', unique: true, timeoutMs: 90_000 });
  await rx.waitForCount(600, { path: '/fault-b', unique: true, timeoutMs: 90_000 });
  await sleep(1500);
  assertExactlyOnce(t, '/fault-a', ids);
  assertExactlyOnce(t, '/fault-b', ids);
  const relayed = await env.db.one('SELECT count(*)::int AS n FROM events WHERE relayed_at IS NULL AND organization_id = $1', [org.organization_id]);
  t.equal(relayed.n, 0, 'all relayed after the restart');
  await workers.kill('SIGTERM');
});

t.test('SIGKILL while events stream in: every event arrives exactly once after dedupe', async (t) => {
  const org = await env.bootstrap();
  await subscribe(env, org.api_key, rx.url('/kill'), 'call_completed');
  let workers = spawnWorkers();
  await workers.ready();

  // 3,000 events in 60 transactions of 50, over a few seconds: the kill lands while relaying and delivering.
  const ids: string[] = [];
  const producer = (async () => {
    for (let batch = 0; batch < 60; batch++) {
      ids.push(...await emitMany(env, org.organization_id, 50, `kill-${batch}`));
      await sleep(25);
    }
  })();
  await rx.waitForCount(400, { path: '/kill', unique: true, timeoutMs: 60_000 });
  await workers.kill('SIGKILL');
  const atKill = rx.unique('/kill').length;
  t.comment(`killed after ${atKill} deliveries, ${ids.length} events committed so far`);
  await sleep(500);
  workers = spawnWorkers();
  await workers.ready();
  await producer;
  t.equal(ids.length, 3000);
  t.ok(atKill < 3000, 'the kill happened mid-stream');
  // Jobs that were active at the kill are retried once their lock expires (30 s), hence the long wait.
  await rx.waitForCount(3000, { path: '/kill', unique: true, timeoutMs: 120_000 });
  await sleep(1500);
  assertExactlyOnce(t, '/kill', ids);
  await workers.kill('SIGTERM');
});
