// npm run bench:webhooks [-- --events 20000 --batch 500 --paced-rate 1000 --paced-events 10000]
//
// Events through the whole spine: committed outbox rows -> relay (workers) -> BullMQ -> signed HTTP delivery to a
// local receiver. Real PostgreSQL, Redis and a spawned workers process, as in production; the receiver runs in
// this process. Two phases:
//   burst: --events events committed as fast as possible in transactions of --batch rows; deliveries/s counts
//          from the first commit to the last receipt; latency includes the time spent queued behind the burst.
//   paced: --paced-events events at --paced-rate events/s (below capacity): commit-to-receipt latency of a
//          steady load. Skipped with --paced-events 0.
// The receiver is a minimal keep-alive HTTP server in this process that notes the webhook-id header and answers
// 204 (a real receiver's own work is not ours to measure). Figures are printed, never asserted. Compare runs on the same machine: these machines are shared.
import { parseArgs } from 'node:util';
import { eventsInsertSql, wakeRelay } from '../shared/events/outbox.ts';
import { uuidv7 } from '../shared/ids.ts';
import { createSubscription } from '../shared/webhooks/subscriptions.ts';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { deliveryId } from '../shared/webhooks/signing.ts';
import { testEnv } from '../test/helpers/env.ts';
import { round, writeResult, type Figure } from './report.ts';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '500' },
    'paced-rate': { type: 'string', default: '1000' },
    'paced-events': { type: 'string', default: '10000' },
    timeline: { type: 'boolean', default: false },
  },
});
const EVENTS = Number(args.events);
const BATCH = Number(args.batch);
const PACED_RATE = Number(args['paced-rate']);
const PACED_EVENTS = Number(args['paced-events']);

const teardowns: (() => unknown)[] = [];
const env = await testEnv({ teardown: (fn) => teardowns.push(fn) }, { gateway: false, env: { WEBHOOK_ALLOW_INSECURE: '1', DATABASE_POOL_MAX: '' } }); // '': the processes' own pool sizes, not the tests' 5

const committedAt = new Map<string, number>(); // by webhook-id
const receivedAt = new Map<string, number>();
let duplicates = 0;
const server = createServer((req, res) => {
  const id = req.headers['webhook-id'] as string;
  req.resume();
  req.on('end', () => {
    if (receivedAt.has(id)) duplicates++;
    else receivedAt.set(id, performance.timeOrigin + performance.now());
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as { port: number }).port;

const org = await env.bootstrap({ numbers: 0 });
const sub = await createSubscription(env.db, org.organization_id, { webhook_url: `http://127.0.0.1:${port}/bench`, event_type: 'call_completed' }, true);

async function commitBatch(n: number, tag: string): Promise<void> {
  const rows = Array.from({ length: n }, (_, i) => ({
    id: uuidv7(), organizationId: org.organization_id, eventType: 'call_completed',
    data: { id: `${tag}-${i}`, from_number: '+14155550100', to_number: '+14155550199', direction: 'outbound', status: 'COMPLETED', duration_seconds: 10 },
  }));
  await env.db.none(eventsInsertSql(rows)); // one statement: one transaction
  wakeRelay(env.db);
  const now = performance.timeOrigin + performance.now();
  for (const r of rows) committedAt.set(deliveryId(r.id, sub.id), now);
}

async function waitAll(total: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (receivedAt.size < total) {
    if (Date.now() > until) throw new Error(`only ${receivedAt.size} of ${total} deliveries arrived within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** CPU seconds used so far by: the workers process, this process (producer + receiver), Redis. PostgreSQL's
 *  share is not counted. Shared machines make throughput noisy; CPU per delivery is the steadier figure. */
async function cpu(workersPid: number) {
  const stat = readFileSync(`/proc/${workersPid}/stat`, 'utf8').split(') ')[1].split(' ');
  const workers = (Number(stat[11]) + Number(stat[12])) / 100;
  const own = process.cpuUsage();
  const info = await env.redis.info('cpu');
  const num = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return { workers, bench: (own.user + own.system) / 1e6, redis: num('used_cpu_sys') + num('used_cpu_user') };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
function latencies(ids: string[]) {
  const l = ids.map((id) => receivedAt.get(id)! - committedAt.get(id)!).sort((a, b) => a - b);
  return { p50: pct(l, 50), p99: pct(l, 99), max: l[l.length - 1] };
}
const idsSince = (from: number) => [...committedAt.keys()].slice(from);

const workers = env.spawn('workers', { LOG_LEVEL: 'info', ...(process.env.BENCH_WORKERS_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_WORKERS_NODE_OPTIONS } : {}) });
try {
  await workers.ready();
  // Warm-up: connections, JIT, queue keys.
  for (let i = 0; i < 4; i++) await commitBatch(250, `warm-${i}`);
  await waitAll(1000, 60_000);

  // Burst
  const burstFrom = committedAt.size;
  const cpu0 = await cpu(workers.child.pid!);
  const t0 = performance.timeOrigin + performance.now();
  for (let i = 0; i < EVENTS / BATCH; i++) await commitBatch(BATCH, `burst-${i}`);
  const tCommitted = performance.timeOrigin + performance.now();
  await waitAll(burstFrom + EVENTS, 300_000);
  const cpu1 = await cpu(workers.child.pid!);
  const burstIds = idsSince(burstFrom);
  const tLast = Math.max(...burstIds.map((id) => receivedAt.get(id)!));
  const burst = latencies(burstIds);
  const rate = EVENTS / ((tLast - t0) / 1000);
  const relayed = await env.db.one('SELECT extract(epoch FROM max(relayed_at)) * 1000 AS at FROM events');
  console.log(`burst: ${EVENTS} events committed in ${Math.round(tCommitted - t0)} ms (${BATCH} per transaction); `
    + `all relayed after ${Math.round(Number(relayed.at) - t0)} ms; last delivery after ${Math.round(tLast - t0)} ms`);
  console.log(`burst: ${Math.round(rate)} deliveries/s; commit-to-receipt p50 ${Math.round(burst.p50)} ms, p99 ${Math.round(burst.p99)} ms, max ${Math.round(burst.max)} ms`);
  if (args.timeline) {
    const perSecond = new Map<number, number>();
    for (const id of burstIds) {
      const s = Math.floor((receivedAt.get(id)! - t0) / 1000);
      perSecond.set(s, (perSecond.get(s) ?? 0) + 1);
    }
    console.log(`burst: deliveries per second since the first commit: ${[...perSecond].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}s:${n}`).join(' ')}`);
  }
  const per = (k: keyof typeof cpu0) => ((cpu1[k] - cpu0[k]) * 1e6 / EVENTS).toFixed(0);
  const figures: Figure[] = [
    { name: `burst of ${EVENTS} events, deliveries per second`, value: Math.round(rate), unit: 'deliveries/s', target: '>= 2,000/s', met: rate >= 2000 },
    { name: 'burst, commit → receipt p50', value: round(burst.p50 / 1000), unit: 's' },
    { name: 'burst, commit → receipt p99', value: round(burst.p99 / 1000), unit: 's' },
    { name: 'CPU per delivery, workers process', value: Number(per('workers')), unit: 'µs' },
    { name: 'CPU per delivery, Redis server (all its clients)', value: Number(per('redis')), unit: 'µs' },
    { name: 'CPU per delivery, producer + receiver', value: Number(per('bench')), unit: 'µs' },
  ];
  console.log(`burst: CPU per delivery: workers ${per('workers')} µs, redis server ${per('redis')} µs (all its clients), producer+receiver ${per('bench')} µs `
    + `(load average ${(await import('node:os')).loadavg()[0].toFixed(1)} on ${(await import('node:os')).availableParallelism()} cores)`);

  // Paced
  if (PACED_EVENTS > 0) {
    const pacedFrom = committedAt.size;
    const per = Math.max(1, Math.round(PACED_RATE / 100)); // 100 commits per second
    const start = performance.now();
    for (let sent = 0; sent < PACED_EVENTS; sent += per) {
      const due = start + (sent / PACED_RATE) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      await commitBatch(Math.min(per, PACED_EVENTS - sent), `paced-${sent}`);
    }
    await waitAll(pacedFrom + PACED_EVENTS, 300_000);
    const paced = latencies(idsSince(pacedFrom));
    console.log(`paced: ${PACED_EVENTS} events at ${PACED_RATE}/s in commits of ${per}; commit-to-receipt p50 ${Math.round(paced.p50)} ms, `
      + `p99 ${Math.round(paced.p99)} ms, max ${Math.round(paced.max)} ms`);
    figures.push({ name: `paced ${PACED_RATE}/s, commit → receipt p50`, value: Math.round(paced.p50), unit: 'ms' },
      { name: `paced ${PACED_RATE}/s, commit → receipt p99`, value: Math.round(paced.p99), unit: 'ms' });
  }
  console.log(`duplicates (same event delivered twice): ${duplicates}`);
  console.log(JSON.stringify({ events: EVENTS, deliveries_per_s: Math.round(rate), burst_p50_ms: Math.round(burst.p50), burst_p99_ms: Math.round(burst.p99) }));
  figures.push({ name: 'duplicates', value: duplicates, unit: 'deliveries', target: '0', met: duplicates === 0 });
  writeResult('webhooks', figures, { note: `${EVENTS} events in transactions of ${BATCH}` });
} finally {
  await workers.kill('SIGTERM');
  server.closeAllConnections();
  server.close();
  for (const fn of teardowns.reverse()) await fn();
}
