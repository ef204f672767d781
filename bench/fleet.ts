// Fleet benchmark: `npm run bench:fleet`. Prints figures; asserts nothing.
//
// How the platform's throughput moves with 1, 2 and 3 processes of each kind, measured as ratios in one run, and
// what one call costs each process, Redis and PostgreSQL. Real processes (as in the Procfile) on a database and Redis
// prefix of their own, the sandbox carrier (SANDBOX_TIME_SCALE 0.01: a bridge call lasts ~0.14 s).
//
//   A. calls end to end, N = 1, 2, 3 gateway processes + N workers processes: client loops POST /v1/calls/dial
//      round-robin over the N gateways, keeping at most BENCH_FLEET_OUTSTANDING calls dialed whose call_completed
//      webhook has not arrived (a closed loop: the system runs saturated with a bounded backlog). After a warm-up
//      (at least BENCH_FLEET_WARMUP s, default 8, and until 100 calls of the step completed), a window of BENCH_FLEET_SECONDS (default 20) counts the webhooks received: calls
//      progressed per second, dial -> terminal -> webhook delivered. Over the same window: CPU seconds of every
//      process (/proc/<pid>/stat), of the Redis server (INFO cpu, used_cpu_sys + used_cpu_user: all its clients,
//      the machine is shared), PostgreSQL's transactions and row writes of this database (pg_stat_database) and the
//      CPU of its backends (the pids pg_stat_activity lists for this database, /proc), the WAL written (the whole
//      server's: other databases too), and the bytes under this run's Redis prefix per call in flight.
//   B. browser-call ticket redemptions, N = 1, 2, 3 signaling processes (SIGNALING_MEDIA=off, as bench:signaling's
//      first phase): BENCH_FLEET_TICKETS tickets per process issued beforehand through the gateway (not timed), then
//      redeemed over WebSockets round-robin over the N processes: redemptions per second and signaling CPU each.
// Afterwards: PostgreSQL rows and bytes per call (this database's tables over the calls placed).
//
// The machine has 2 cores: 3 processes of a kind (plus Redis, PostgreSQL and this client) cannot scale past them,
// and the output says so. Every phase is bounded; the whole run takes about 3-5 minutes and stops by itself.
import { type ChildProcess } from 'node:child_process';
import { Agent } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { bootstrapOrganization } from '../shared/accounts/bootstrap.ts';
import { createApiKey } from '../shared/accounts/keys.ts';
import { setLimits } from '../shared/calls/limits.ts';
import { DEFAULT_ALL_SCOPES } from '../shared/scopes.ts';
import { startReceiver } from '../test/helpers/receiver.ts';
import { testEnv, type Proc } from '../test/helpers/env.ts';
import { call, cpuSeconds, freePort, post, waitHttp } from './harness.ts';
import { round, writeResult, type Figure } from './report.ts';
import { openWebSocket, type BenchSocket } from './ws-client.ts';

const MAX_PROCS = Number(process.env.BENCH_FLEET_MAX ?? 3);
const WARMUP_S = Number(process.env.BENCH_FLEET_WARMUP ?? 8);
/** The warm-up lasts until this many calls of the step have completed (or WARMUP_MAX_S passed). */
const WARM_CALLS = 100;
const WARMUP_MAX_S = 120;
const WINDOW_S = Number(process.env.BENCH_FLEET_SECONDS ?? 20);
const OUTSTANDING = Number(process.env.BENCH_FLEET_OUTSTANDING ?? 300);
const CLIENT_LOOPS = Number(process.env.BENCH_FLEET_LOOPS ?? 48);
const TICKETS_PER_PROC = Number(process.env.BENCH_FLEET_TICKETS ?? 1000);
const POOL = process.env.BENCH_FLEET_POOL ?? '8';
const CORES = availableParallelism();
/** A dialed call whose webhook has not come in this long is given up on (counted as lost, never waited for). */
const LOST_AFTER_MS = 30_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => process.stdout.write(`${line}\n`);
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');


const teardowns: (() => unknown)[] = [];
const env = await testEnv({ teardown: (fn) => { teardowns.push(fn); } }, {
  gateway: false,
  env: { SANDBOX_TIME_SCALE: '0.01', LOG_LEVEL: 'warn', WEBHOOK_ALLOW_INSECURE: '1', RESPONSE_SCHEMA_CHECK: '0',
    TICKET_CLEANUP_SECONDS: '600', DATABASE_POOL_MAX: POOL },
});
const dbName = new URL(env.config.databaseUrl).pathname.slice(1);
const figures: Figure[] = [];
const children: Proc[] = [];

function spawn(kind: 'gateway' | 'workers' | 'signaling', extra: Record<string, string> = {}): Proc {
  const p = env.spawn(kind, { LOG_LEVEL: 'info', ...extra });
  children.push(p);
  return p;
}

/** Waits for the ready line, then stops keeping the process's output (an info line per call transition would pile
 *  up in this client); the process still logs as it would in production. */
async function ready(p: Proc): Promise<void> {
  await p.ready(60_000);
  p.child.stdout!.removeAllListeners('data');
  p.child.stdout!.resume();
}

async function stopAll(procs: Proc[]): Promise<void> {
  await Promise.all(procs.map(async (p) => {
    if (p.child.exitCode !== null) return;
    const killer = setTimeout(() => p.child.kill('SIGKILL'), 12_000);
    await p.kill('SIGTERM');
    clearTimeout(killer);
  }));
}

async function redisCpu(): Promise<number> {
  const info = await env.redis.info('cpu');
  return Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]);
}

interface PgSnapshot { xacts: number; writes: number; wal: string; backends: Map<number, number> }
async function pgSnapshot(): Promise<PgSnapshot> {
  const s = await env.db.one(`SELECT xact_commit::float8 AS xacts, (tup_inserted + tup_updated + tup_deleted)::float8 AS writes,
    pg_current_wal_lsn()::text AS wal FROM pg_stat_database WHERE datname = $1`, [dbName]);
  const pids = await env.db.any('SELECT pid FROM pg_stat_activity WHERE datname = $1', [dbName]);
  return { xacts: s.xacts, writes: s.writes, wal: s.wal, backends: new Map(pids.map((r) => [r.pid as number, cpuSeconds(r.pid)])) };
}
/** PostgreSQL figures between two snapshots: a backend there at both counts its CPU between them; one that started
 *  in between counts all of its CPU (a pool connecting); one gone by the end is not counted (CPU unread). */
async function pgDelta(a: PgSnapshot): Promise<{ xacts: number; writes: number; walBytes: number; backendCpu: number }> {
  await sleep(600); // the backends flush their statistics at most once a second (PostgreSQL 15+)
  const b = await pgSnapshot();
  let cpu = 0;
  for (const [pid, now] of b.backends) {
    if (!Number.isFinite(now)) continue;
    const before = a.backends.get(pid);
    cpu += before !== undefined && Number.isFinite(before) ? now - before : now;
  }
  const wal = await env.db.one('SELECT pg_wal_lsn_diff($1, $2)::float8 AS d', [b.wal, a.wal]);
  return { xacts: b.xacts - a.xacts, writes: b.writes - a.writes, walBytes: wal.d, backendCpu: cpu };
}

/** Bytes Redis holds under this run's prefix (MEMORY USAGE of each key) and how many keys. */
async function prefixBytes(): Promise<{ bytes: number; keys: number }> {
  let cursor = '0';
  let bytes = 0;
  let keys = 0;
  do {
    const [next, batch] = await env.redis.scan(cursor, 'MATCH', `${env.config.redisPrefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (batch.length) {
      const pipe = env.redis.pipeline();
      for (const k of batch) pipe.memory('USAGE', k, 'SAMPLES', '0');
      for (const [, v] of (await pipe.exec()) ?? []) bytes += Number(v) || 0;
      keys += batch.length;
    }
  } while (cursor !== '0');
  return { bytes, keys };
}

const relationBytes = async () => (await env.db.one(`SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::float8 AS b FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')`)).b as number;

try {
  say(`bench:fleet — ${CORES} cores, load average at start ${load()}; window ${WINDOW_S} s after ${WARMUP_S} s of warm-up per step, ` +
    `at most ${OUTSTANDING} calls in flight, ${CLIENT_LOOPS} client loops, DATABASE_POOL_MAX=${POOL} per process`);
  if (MAX_PROCS > CORES) {
    say(`NOTE: this machine has ${CORES} cores; ${MAX_PROCS} processes of a kind (beside Redis, PostgreSQL and this client) cannot scale ` +
      `past them: steps beyond ${Math.max(1, Math.floor(CORES / 2))} process(es) of each kind show the cores running out, not the platform's limit.`);
  }
  const org = await bootstrapOrganization(env.db, { org: 'Bench Fleet', scopes: [...DEFAULT_ALL_SCOPES], numbers: 1 });
  await setLimits(env.db, org.organization_id, { channel_limit: 1_000_000, calls_per_minute: 10_000_000, daily_spend_cap_cents: 1_000_000_000_000 });
  const { apiKey } = await createApiKey(env.db, { organizationId: org.organization_id, userId: org.user_id, scopes: [...DEFAULT_ALL_SCOPES], rateLimitPerMinute: 100_000_000 });
  const dialBody = { from_number: org.phone_numbers[0], to_number: '+14155554567', connect_number: '+14155559999' };

  // call id -> dialed at; the receiver settles them.
  const pending = new Map<string, number>();
  const completedAt: number[] = [];
  /** Webhooks that arrived before the dial's 202 was read (the call was that quick). */
  const early = new Set<string>();
  const waker = { wake: () => {} };
  const rx = await startReceiver(undefined, {
    record: false,
    onRequest: (r) => {
      const id = r.body?.data?.id;
      if (r.body?.event_type !== 'call_completed' || !id) return;
      if (!pending.delete(id)) { early.add(id); return; }
      completedAt.push(r.at);
      waker.wake();
    },
  });
  teardowns.push(() => rx.close());
  const relBytes0 = await relationBytes();

  // A. Calls end to end with N gateways + N workers.
  const steps: { n: number; rate: number; lost: number; cpu: Record<string, number>; cpuShare: Record<string, number>;
    redisMs: number; pgXacts: number; pgWrites: number; pgCpuMs: number; walBytes: number; redisBytesPerInFlight: number; inFlight: number }[] = [];
  for (let n = 1; n <= MAX_PROCS; n++) {
    const gateways: { proc: Proc; base: string; agent: Agent }[] = [];
    const workers: Proc[] = [];
    for (let i = 0; i < n; i++) {
      const port = await freePort();
      gateways.push({ proc: spawn('gateway', { PORT: String(port) }), base: `http://127.0.0.1:${port}`, agent: new Agent({ keepAlive: true, maxSockets: 64 }) });
      workers.push(spawn('workers'));
    }
    await Promise.all([...gateways.map((g) => ready(g.proc)), ...workers.map((w) => ready(w))]);
    await Promise.all(gateways.map((g) => waitHttp(`${g.base}/readyz`)));
    if (n === 1) {
      const sub = await post(gateways[0].agent, gateways[0].base, '/api/v1/webhook_subscriptions', apiKey, { webhook_url: rx.url('/calls'), event_type: 'call_completed' });
      if (sub.status !== 201) throw new Error(`subscription failed: ${sub.status} ${JSON.stringify(sub.body)}`);
    }

    let running = true;
    let lost = 0;
    let refused = 0;
    let next = 0;
    const loops = Array.from({ length: CLIENT_LOOPS }, async () => {
      while (running) {
        if (pending.size >= OUTSTANDING) {
          // Give up on calls whose webhook never came, so a lost one cannot stall the loop.
          const now = Date.now();
          for (const [id, at] of pending) if (now - at > LOST_AFTER_MS) { pending.delete(id); lost++; }
          await new Promise<void>((r) => { const t = setTimeout(r, 100); waker.wake = () => { clearTimeout(t); r(); }; });
          continue;
        }
        const slot = `slot-${next}`;
        const g = gateways[next++ % gateways.length];
        pending.set(slot, Date.now()); // holds the place until the answer names the call
        try {
          const r = await post(g.agent, g.base, '/v1/calls/dial', apiKey, dialBody);
          if (r.status !== 202) refused++;
          else if (early.delete(r.body.data.call_id)) completedAt.push(Date.now()); // its webhook came first
          else pending.set(r.body.data.call_id, Date.now());
        } catch {
          refused++;
        } finally {
          pending.delete(slot);
        }
      }
    });

    // Warm-up: at least WARMUP_S, and until calls are coming through (a fresh fleet's first calls can take many seconds
    // on a busy machine: JIT, pools, the first workers' start-up pass), at most WARMUP_MAX_S.
    const warmFrom = completedAt.length;
    const warmUntil = Date.now() + WARMUP_MAX_S * 1000;
    await sleep(WARMUP_S * 1000);
    while (completedAt.length - warmFrom < WARM_CALLS && Date.now() < warmUntil) await sleep(200);
    const pids = { gateway: gateways.map((g) => g.proc.child.pid!), workers: workers.map((w) => w.child.pid!) };
    const cpu0 = Object.fromEntries(Object.entries(pids).map(([k, ps]) => [k, ps.reduce((s, p) => s + cpuSeconds(p), 0)]));
    const self0 = process.cpuUsage();
    const redis0 = await redisCpu();
    const pg0 = await pgSnapshot();
    const done0 = completedAt.length;
    const t0 = performance.now();
    await sleep(WINDOW_S * 1000);
    const done = completedAt.length - done0;
    const seconds = (performance.now() - t0) / 1000;
    const cpu = Object.fromEntries(Object.entries(pids).map(([k, ps]) => [k, ps.reduce((s, p) => s + cpuSeconds(p), 0) - cpu0[k]]));
    const self = process.cpuUsage(self0);
    cpu.client = (self.user + self.system) / 1e6;
    cpu.redis = (await redisCpu()) - redis0;
    const inFlight = pending.size;
    const mem = await prefixBytes();
    running = false;
    waker.wake();
    await Promise.all(loops);
    const pg = await pgDelta(pg0);
    cpu.postgres = pg.backendCpu;

    const perCall = (s: number) => (1000 * s) / done;
    const step = {
      n, rate: done / seconds, lost, inFlight,
      cpu: Object.fromEntries(Object.entries(cpu).map(([k, s]) => [k, perCall(s)])),
      cpuShare: Object.fromEntries(Object.entries(cpu).map(([k, s]) => [k, (100 * s) / seconds])),
      redisMs: perCall(cpu.redis), pgXacts: pg.xacts / done, pgWrites: pg.writes / done, pgCpuMs: perCall(pg.backendCpu),
      walBytes: pg.walBytes / done, redisBytesPerInFlight: mem.bytes / Math.max(1, inFlight),
    };
    steps.push(step);
    const ratio = step.rate / steps[0].rate;
    say(`\nA. ${n} gateway + ${n} workers process${n > 1 ? 'es each' : ''}: ${done} calls dial → terminal → webhook in ${seconds.toFixed(1)} s = ` +
      `${step.rate.toFixed(1)} calls/s (${ratio.toFixed(2)}× the 1-process step); ${refused} dials refused, ${lost} webhooks given up on; load ${load()}`);
    say(`   CPU per call (ms): ${Object.entries(step.cpu).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
    say(`   share of a core (%): ${Object.entries(step.cpuShare).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}; ` +
      `machine total ${Object.values(step.cpuShare).reduce((a, b) => a + b, 0).toFixed(0)} % of ${CORES * 100} %`);
    say(`   PostgreSQL per call: ${step.pgXacts.toFixed(2)} transactions, ${step.pgWrites.toFixed(1)} row writes, ${(step.walBytes / 1024).toFixed(1)} KiB WAL ` +
      `(whole server: other databases too); Redis: ${mem.keys} keys, ${(mem.bytes / 1024 / 1024).toFixed(1)} MiB under the prefix with ${inFlight} calls in flight`);
    const w = `${n}+${n} processes`;
    figures.push(
      { name: `${w} (gateway+workers): calls dial → webhook delivered`, value: round(step.rate, 1), unit: 'calls/s' },
      { name: `${w}: ratio to 1+1`, value: round(ratio), unit: '×' },
      { name: `${w}: CPU per call, gateway`, value: round(step.cpu.gateway), unit: 'ms' },
      { name: `${w}: CPU per call, workers`, value: round(step.cpu.workers), unit: 'ms' },
      { name: `${w}: CPU per call, Redis server`, value: round(step.redisMs), unit: 'ms' },
      { name: `${w}: CPU per call, PostgreSQL backends`, value: round(step.pgCpuMs), unit: 'ms' },
      { name: `${w}: PostgreSQL transactions per call`, value: round(step.pgXacts, 1), unit: 'xacts' },
      { name: `${w}: PostgreSQL row writes per call`, value: round(step.pgWrites, 1), unit: 'rows' },
    );
    if (n === 1) {
      figures.push({ name: '1+1: WAL per call (whole server, an upper bound)', value: round(step.walBytes / 1024, 1), unit: 'KiB' },
        { name: '1+1: Redis bytes under the prefix per call in flight', value: Math.round(step.redisBytesPerInFlight), unit: 'bytes' });
    }

    // Let the calls in flight finish (bounded) before the next step starts on a quiet fleet.
    const until = Date.now() + 30_000;
    while (pending.size > 0 && Date.now() < until) await sleep(200);
    pending.clear();
    for (const g of gateways) g.agent.destroy();
    await stopAll([...gateways.map((g) => g.proc), ...workers]);
  }
  if (steps.length > 1) {
    say(`\nA. ratios (calls/s to the 1+1 step): ${steps.map((s) => `${s.n}+${s.n}: ${(s.rate / steps[0].rate).toFixed(2)}×`).join(', ')} ` +
      `— ${CORES} cores; ideal scaling would stop at ${CORES} processes in all.`);
  }

  // Retained per call: what the calls left behind once finished (BullMQ's kept completed jobs, rows).
  await sleep(1000);
  const retained = await prefixBytes();
  const rows = await env.db.one(`SELECT coalesce(sum(n_live_tup), 0)::float8 AS n FROM pg_stat_user_tables`);
  const relBytes = (await relationBytes()) - relBytes0;
  const calls = (await env.db.one('SELECT count(*)::float8 AS n FROM calls')).n as number;
  say(`\nretained after ${calls} calls: Redis ${(retained.bytes / calls).toFixed(0)} bytes per call under the prefix (${retained.keys} keys); ` +
    `PostgreSQL ${(rows.n / calls).toFixed(1)} live rows and ${(relBytes / calls).toFixed(0)} bytes (tables + indexes + TOAST) per call`);
  figures.push(
    { name: 'Redis bytes kept per finished call (completed jobs kept by BullMQ)', value: Math.round(retained.bytes / calls), unit: 'bytes' },
    { name: 'PostgreSQL live rows per call (all tables)', value: round(rows.n / calls, 1), unit: 'rows' },
    { name: 'PostgreSQL bytes per call (tables + indexes + TOAST)', value: Math.round(relBytes / calls), unit: 'bytes' },
  );

  // B. Ticket redemptions over 1, 2, 3 signaling processes (no workers: redeemed calls stay queued).
  const gwPort = await freePort();
  const gw = spawn('gateway', { PORT: String(gwPort) });
  await gw.ready(60_000);
  const gwBase = `http://127.0.0.1:${gwPort}`;
  const gwAgent = new Agent({ keepAlive: true, maxSockets: 16 });
  const issue = async (count: number) => {
    const tokens: string[] = [];
    let i = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (i < count) {
        i++;
        const r = await call(gwAgent, gwBase, 'POST', '/v1/webrtc-token', apiKey, { from_number: org.phone_numbers[0], to_number: '+14155550008' });
        if (r.status !== 201) throw new Error(`webrtc-token: ${r.status} ${JSON.stringify(r.body)}`);
        tokens.push(r.body.data.token);
      }
    }));
    return tokens;
  };
  const sigSteps: number[] = [];
  for (let n = 1; n <= MAX_PROCS; n++) {
    const tokens = await issue(TICKETS_PER_PROC * n);
    const sigs = Array.from({ length: n }, () => spawn('signaling', { SIGNALING_MEDIA: 'off' }));
    await Promise.all(sigs.map((s) => s.ready(60_000)));
    const urls = sigs.map((s) => /"softphone":"(ws:[^"]+)"/.exec(s.output)?.[1] ?? '');
    if (urls.some((u) => !u)) throw new Error('a signaling process logged no softphone URL');
    const cpu0 = sigs.map((s) => cpuSeconds(s.child.pid!));
    const sockets: BenchSocket[] = [];
    let k = 0;
    let ok = 0;
    let failed = 0;
    const t0 = performance.now();
    const deadline = Date.now() + 60_000;
    await Promise.all(Array.from({ length: 100 }, async () => {
      while (k < tokens.length && Date.now() < deadline) {
        const idx = k++;
        try {
          const ws = await openWebSocket(urls[idx % n]);
          sockets.push(ws);
          ws.send(JSON.stringify({ type: 'hello', v: 1, ticket: tokens[idx] }));
          for (;;) {
            const m = JSON.parse(await ws.next());
            if (m.type === 'welcome') { ok++; break; }
            if (m.type === 'error') { failed++; break; }
          }
        } catch {
          failed++;
        }
      }
    }));
    const seconds = (performance.now() - t0) / 1000;
    const sigCpu = sigs.reduce((s, p, i) => s + cpuSeconds(p.child.pid!) - cpu0[i], 0);
    for (const ws of sockets) ws.close();
    const rate = ok / seconds;
    sigSteps.push(rate);
    say(`\nB. ${n} signaling process${n > 1 ? 'es' : ''}: ${ok} ticket redemptions (${failed} failed) in ${seconds.toFixed(2)} s = ${rate.toFixed(0)}/s ` +
      `(${(rate / sigSteps[0]).toFixed(2)}× 1 process); signaling CPU ${(1000 * sigCpu / ok).toFixed(2)} ms per redemption, ` +
      `${(100 * sigCpu / seconds).toFixed(0)} % of a core in all; load ${load()}`);
    figures.push(
      { name: `${n} signaling process${n > 1 ? 'es' : ''}: ticket redemptions (${failed} failed)`, value: Math.round(rate), unit: 'redemptions/s' },
      { name: `${n} signaling process${n > 1 ? 'es' : ''}: ratio to 1`, value: round(rate / sigSteps[0]), unit: '×' },
      { name: `${n} signaling process${n > 1 ? 'es' : ''}: signaling CPU per redemption`, value: round(1000 * sigCpu / ok), unit: 'ms' },
    );
    await stopAll(sigs);
  }
  gwAgent.destroy();
  await stopAll([gw]);

  say(`\nload average at the end: ${load()}`);
  const path = writeResult('fleet', figures, {
    note: `${CORES} cores shared with other work: 3 processes of a kind cannot scale past the cores, so read the ratios as ` +
      `what the cores allow; window ${WINDOW_S} s per step, ${OUTSTANDING} calls in flight at most, SANDBOX_TIME_SCALE=0.01; ` +
      'Redis CPU is the whole server (other clients too); WAL is the whole PostgreSQL server',
  });
  say(`wrote ${path}`);
} finally {
  await stopAll(children).catch(() => undefined);
  for (const fn of teardowns.reverse()) await fn();
}
