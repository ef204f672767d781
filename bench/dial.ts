// Dial benchmark: `npm run bench:dial`. Prints figures; asserts nothing.
//
// Runs the real processes (gateway/main.ts and workers/main.ts, as in the Procfile) against a database and Redis
// prefix of its own, with the sandbox carrier (SANDBOX_TIME_SCALE, default 0.01: a bridge call lasts ~0.14 s) and
// an organization whose channel limit, call rate and spend cap are out of the way, through a key whose request
// rate limit is raised. Three phases:
//   1. paced:      BENCH_PACED_RATE dials/s (default 50) for 10 s with keep-alive; the delay from the carrier's
//                  end of call (the `at` of its ended event, which is the call's ended_at) to the receipt of the
//                  call_completed webhook: p50 / p99 / max.
//   2. saturation: wrk (BENCH_THREADS x BENCH_CONNECTIONS, BENCH_SECONDS) POSTing /v1/calls/dial while the workers
//                  run: accepted dials per second (rows inserted / seconds; every 202 is a row), the dial request's
//                  latency, then the same end-of-call -> webhook delay for those calls while the backlog drains.
//   3. gateway alone: the same wrk run with the workers stopped (dials are accepted and queued; nothing progresses).
//   4. progression: the backlog phase 3 left is drained by 1 workers process, then a new backlog (the same wrk
//                  run, workers stopped) by BENCH_MAX_WORKERS (default 2) workers processes: calls reaching a terminal
//                  state per second (whole drain from the workers' start, and the steady rate between 10 % and
//                  90 % of the calls ended), so what N workers processes add is measured on the same machine.
// Targets: >= 1,000 accepted dials/s; calls progressed end to end per second (printed, see docs/benchmarks.md).
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapOrganization } from '../shared/accounts/bootstrap.ts';
import { createApiKey } from '../shared/accounts/keys.ts';
import { setLimits } from '../shared/calls/limits.ts';
import { loadConfig } from '../shared/config.ts';
import { createDb } from '../shared/db.ts';
import { randomToken } from '../shared/ids.ts';
import { createRedis } from '../shared/redis.ts';
import { DEFAULT_ALL_SCOPES } from '../shared/scopes.ts';
import { prepareDatabase } from '../infra/prepare.ts';
import { startReceiver } from '../test/helpers/receiver.ts';
import { dropBenchData, freePort, post, runWrk as runWrkWith, startProc, waitHttp } from './harness.ts';
import { round, writeResult, type Figure } from './report.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const THREADS = Number(process.env.BENCH_THREADS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const PACED_RATE = Number(process.env.BENCH_PACED_RATE ?? 50);
const PACED_SECONDS = 10;
const DRAIN_SECONDS = Number(process.env.BENCH_DRAIN_SECONDS ?? 180);
const SCALE = process.env.SANDBOX_TIME_SCALE ?? '0.01';
const MAX_WORKERS = Number(process.env.BENCH_MAX_WORKERS ?? 2);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const ms = (x: number) => `${x.toFixed(1)} ms`;

const runWrk = (url: string, luaFile: string) => runWrkWith(url, luaFile, { threads: THREADS, connections: CONNECTIONS, seconds: SECONDS });

async function main(): Promise<void> {
  if (spawnSync('sh', ['-c', 'command -v wrk']).status !== 0) throw new Error('wrk is not installed (apt-get install -y wrk)');
  const id = randomToken(8).toLowerCase();
  const dir = mkdtempSync(join(tmpdir(), 'bench-dial-'));
  const [port, workersPort] = [await freePort(), await freePort()];
  const env: Record<string, string> = {
    DATABASE_URL: `postgres://127.0.0.1:5432/ol_bench_dial_${id}`, REDIS_PREFIX: `olb_${id}`,
    PORT: String(port), WORKERS_PORT: String(workersPort), SIGNALING_PORT: '0', MEDIA_PORT: '0',
    SANDBOX_TIME_SCALE: SCALE, WEBHOOK_ALLOW_INSECURE: '1', LOG_LEVEL: 'info',
  };
  const config = loadConfig({ ...process.env, ...env });
  await prepareDatabase(config);
  const db = createDb(config.databaseUrl, 4);
  const redis = createRedis(config.redisUrl);
  const children: ChildProcess[] = [];
  // call id -> ms from the carrier's end of call to the webhook's receipt, and the part of it before the event row
  // was written (the call's end transition: queue lag + transaction); the rest is relay + delivery.
  const received = new Map<string, number>();
  const toEvent = new Map<string, number>();
  const rx = await startReceiver(undefined, {
    record: false,
    onRequest: (r) => {
      const d = r.body?.data;
      if (r.body?.event_type !== 'call_completed' || !d?.id || !d.ended_at || received.has(d.id)) return;
      received.set(d.id, r.at - Date.parse(d.ended_at));
      toEvent.set(d.id, Date.parse(r.body.occurred_at) - Date.parse(d.ended_at));
    },
  });
  const split = (ids: string[]) => {
    const a = ids.filter((c) => toEvent.has(c)).map((c) => toEvent.get(c)!);
    const b = ids.filter((c) => toEvent.has(c)).map((c) => received.get(c)! - toEvent.get(c)!);
    return { end_to_event_row_p50: pct(a, 50), end_to_event_row_p99: pct(a, 99), event_row_to_webhook_p50: pct(b, 50), event_row_to_webhook_p99: pct(b, 99) };
  };
  try {
    const org = await bootstrapOrganization(db, { org: `Bench Dial ${id}`, scopes: [...DEFAULT_ALL_SCOPES], numbers: 1 });
    await setLimits(db, org.organization_id, { channel_limit: 1_000_000, calls_per_minute: 10_000_000, daily_spend_cap_cents: 1_000_000_000_000 });
    const { apiKey } = await createApiKey(db, { organizationId: org.organization_id, userId: org.user_id, scopes: [...DEFAULT_ALL_SCOPES], rateLimitPerMinute: 100_000_000 });
    const from = org.phone_numbers[0];
    const dialBody = { from_number: from, to_number: '+14155554567', connect_number: '+14155559999' };

    const gateway = startProc('gateway', env, join(dir, 'gateway.log'));
    children.push(gateway);
    let workers = startProc('workers', env, join(dir, 'workers.log'));
    children.push(workers);
    const base = `http://127.0.0.1:${port}`;
    await waitHttp(`${base}/readyz`);
    await waitHttp(`http://127.0.0.1:${workersPort}/healthz`);
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const sub = await post(agent, base, '/api/v1/webhook_subscriptions', apiKey, { webhook_url: rx.url('/calls'), event_type: 'call_completed' });
    if (sub.status !== 201) throw new Error(`subscription failed: ${sub.status} ${JSON.stringify(sub.body)}`);

    // Warm-up (JIT, connection pools), then let those calls finish so the paced phase starts on a quiet system.
    const warm = await Promise.all(Array.from({ length: 200 }, () => post(agent, base, '/v1/calls/dial', apiKey, dialBody)));
    const warmIds = warm.filter((r) => r.status === 202).map((r) => r.body.data.call_id as string);
    const warmUntil = Date.now() + 60_000;
    while (warmIds.some((c) => !received.has(c)) && Date.now() < warmUntil) await sleep(100);
    await sleep(1000);

    // 1. Paced dials: end-of-call -> webhook delay on an unsaturated system.
    const pacedIds: string[] = [];
    const t0 = Date.now();
    const total = PACED_RATE * PACED_SECONDS;
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / PACED_RATE;
      if (due > Date.now()) await sleep(due - Date.now());
      inflight.push(post(agent, base, '/v1/calls/dial', apiKey, dialBody).then((r) => { if (r.status === 202) pacedIds.push(r.body.data.call_id); }));
    }
    await Promise.all(inflight);
    const pacedUntil = Date.now() + 60_000;
    while (pacedIds.some((c) => !received.has(c)) && Date.now() < pacedUntil) await sleep(100);
    const paced = pacedIds.filter((c) => received.has(c)).map((c) => received.get(c)!);
    if (process.env.BENCH_SERIES) {
      // Per second of the paced run: p50 of the delay of the calls dialed in that second.
      const per = Math.max(1, PACED_RATE);
      const series = [];
      for (let i = 0; i < pacedIds.length; i += per) series.push(pct(pacedIds.slice(i, i + per).filter((c) => received.has(c)).map((c) => received.get(c)!), 50));
      console.log('paced p50 by second:', series.join(' '));
    }

    // 2. Saturation with the workers running.
    const lua = join(dir, 'dial.lua');
    writeFileSync(lua, [
      'wrk.method = "POST"',
      `wrk.body = '${JSON.stringify(dialBody)}'`,
      'wrk.headers["Content-Type"] = "application/json"',
      `wrk.headers["Authorization"] = "Bearer ${apiKey}"`,
    ].join('\n'));
    const count = async () => (await db.one('SELECT count(*)::int AS n FROM calls')).n as number;
    // Transactions the bench's PostgreSQL database committed (a statement outside a transaction counts as one).
    const xactsNow = async () => (await db.one('SELECT xact_commit::float8 AS n FROM pg_stat_database WHERE datname = current_database()')).n as number;
    const before = await count();
    const satStart = new Date();
    const sat = runWrk(`${base}/v1/calls/dial`, lua);
    const satRows = (await count()) - before;
    const satIds = (await db.any('SELECT id FROM calls WHERE created_at >= $1', [satStart])).map((r) => r.id as string);
    const drainStart = Date.now();
    while (satIds.some((c) => !received.has(c)) && Date.now() - drainStart < DRAIN_SECONDS * 1000) await sleep(250);
    const drainSeconds = (Date.now() - drainStart) / 1000;
    const satDelays = satIds.filter((c) => received.has(c)).map((c) => received.get(c)!);

    // 3. Gateway alone.
    workers.kill('SIGTERM');
    await new Promise((r) => workers.once('exit', r));
    const before3 = await count();
    const aloneXacts0 = await xactsNow();
    const alone = runWrk(`${base}/v1/calls/dial`, lua);
    const aloneRows = (await count()) - before3;
    const aloneXacts = (await xactsNow()) - aloneXacts0 - 2; // less the two counts around it

    // 4. Progression: backlogs drained by 1, then 2 workers processes (calls reaching a terminal state per second).
    const liveCount = async () => (await db.one('SELECT count(*)::int AS n FROM calls WHERE ended_at IS NULL')).n as number;
    // CPU seconds a process used so far (Linux /proc), and the Redis server's (INFO cpu): where the drain's time goes.
    const procCpu = (pid: number) => {
      try {
        const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
        return (Number(f[11]) + Number(f[12])) / 100;
      } catch { return NaN; }
    };
    const redisCpu = async () => {
      const info = await redis.info('cpu');
      return Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]);
    };
    // Jobs a workers process completed, by queue (its /metrics; the process is new, so its counters start at 0).
    const jobsBy = async (workersPort: number) => {
      const text = await (await fetch(`http://127.0.0.1:${workersPort}/metrics`)).text();
      const out: Record<string, number> = {};
      for (const m of text.matchAll(/^openline_queue_jobs_completed_total\{queue="([^"]+)"\} (\d+)/gm)) out[m[1]] = Number(m[2]);
      return out;
    };
    // The insert of an accepted dial (the gateway's side of the call), measured on phase 3's backlog.
    const insertXactsPerCall = aloneRows ? aloneXacts / aloneRows : NaN;
    const progression: { workers: number; calls: number; drain_seconds: number; calls_per_second: number; steady_calls_per_second: number;
      workers_cpu_ms_per_call: number; redis_cpu_ms_per_call: number; jobs_per_call: number; jobs_per_call_by_queue: Record<string, number>;
      pg_transactions_per_call: number }[] = [];
    for (let n = 1; n <= MAX_WORKERS; n++) {
      if (n > 1) {
        // A fresh backlog with the workers stopped, the same wrk run as phase 3.
        runWrk(`${base}/v1/calls/dial`, lua);
      }
      const calls = await liveCount();
      const procs: ChildProcess[] = [];
      const ports: number[] = [];
      for (let i = 0; i < n; i++) {
        const wp = await freePort();
        ports.push(wp);
        const w = startProc('workers', { ...env, WORKERS_PORT: String(wp) }, join(dir, `workers-${n}-${i}.log`));
        children.push(w);
        procs.push(w);
      }
      const started = Date.now();
      const redis0 = await redisCpu();
      const xacts0 = await xactsNow();
      const marks: [number, number][] = [];
      for (;;) {
        const left = await liveCount();
        marks.push([Date.now(), calls - left]);
        if (left === 0 || Date.now() - started > DRAIN_SECONDS * 1000) break;
        await sleep(250);
      }
      const drain = (marks[marks.length - 1][0] - started) / 1000;
      const at = (frac: number) => marks.find(([, done]) => done >= frac * calls)?.[0] ?? NaN;
      const steady = (0.8 * calls) / ((at(0.9) - at(0.1)) / 1000);
      const done = calls - (await liveCount());
      const workersCpu = procs.reduce((sum, w) => sum + procCpu(w.pid!), 0);
      // Less this loop's own reads (about four a second) and the liveCount above.
      const drainXacts = (await xactsNow()) - xacts0 - marks.length - 2;
      const byQueue: Record<string, number> = {};
      for (const wp of ports) for (const [q, k] of Object.entries(await jobsBy(wp))) byQueue[q] = (byQueue[q] ?? 0) + k;
      const jobsTotal = Object.values(byQueue).reduce((a, b) => a + b, 0);
      // Includes the workers' start-up (~1-2 s of CPU each) and other clients of this Redis (the machine is shared).
      progression.push({ workers: n, calls, drain_seconds: Math.round(drain), calls_per_second: Math.round(done / drain),
        steady_calls_per_second: Math.round(steady), workers_cpu_ms_per_call: +(1000 * workersCpu / done).toFixed(2),
        redis_cpu_ms_per_call: +(1000 * ((await redisCpu()) - redis0) / done).toFixed(2),
        jobs_per_call: +(jobsTotal / done).toFixed(2),
        jobs_per_call_by_queue: Object.fromEntries(Object.entries(byQueue).map(([q, k]) => [q, +(k / done).toFixed(2)])),
        // The workers' transactions (the periodic services' included) plus the dial's insert.
        pg_transactions_per_call: +(drainXacts / done + insertXactsPerCall).toFixed(2) });
      for (const w of procs) w.kill('SIGTERM');
      await Promise.all(procs.map((w) => w.exitCode === null ? new Promise((r) => w.once('exit', r)) : null));
    }

    const figures = {
      machine: { cpus: (await import('node:os')).cpus().length, node: process.version },
      settings: { time_scale: Number(SCALE), wrk: `-t${THREADS} -c${CONNECTIONS} -d${SECONDS}s`, paced_rate: PACED_RATE },
      paced: { dials: pacedIds.length, webhooks: paced.length, end_to_webhook_ms: { p50: pct(paced, 50), p99: pct(paced, 99), max: pct(paced, 100) },
        split_ms: split(pacedIds) },
      saturation_with_workers: {
        accepted_per_second: Math.round(satRows / SECONDS), wrk_requests_per_second: sat.rps, non_2xx: sat.non2xx,
        dial_latency: { p50: sat.p50, p99: sat.p99 }, socket_errors: sat.socketErrors,
        calls: satIds.length, webhooks_received: satDelays.length, drain_seconds: Math.round(drainSeconds),
        // Calls the workers carried from dial to delivered webhook per second while saturated.
        workers_calls_per_second: Math.round(satDelays.length / (SECONDS + drainSeconds)),
        end_to_webhook_ms: { p50: pct(satDelays, 50), p99: pct(satDelays, 99), max: pct(satDelays, 100) }, split_ms: split(satIds),
      },
      gateway_alone: { accepted_per_second: Math.round(aloneRows / SECONDS), wrk_requests_per_second: alone.rps, non_2xx: alone.non2xx,
        dial_latency: { p50: alone.p50, p99: alone.p99 }, socket_errors: alone.socketErrors },
      progression,
    };
    console.log('\nbench:dial — real gateway + workers, sandbox carrier, Postgres, Redis, BullMQ\n');
    console.log(`paced ${PACED_RATE} dials/s x ${PACED_SECONDS} s: carrier end of call -> call_completed webhook  p50 ${ms(figures.paced.end_to_webhook_ms.p50)}  p99 ${ms(figures.paced.end_to_webhook_ms.p99)}  max ${ms(figures.paced.end_to_webhook_ms.max)}  (${paced.length}/${pacedIds.length} webhooks)`);
    const sp = figures.paced.split_ms;
    console.log(`  of which end of call -> event row committed p50 ${ms(sp.end_to_event_row_p50)} p99 ${ms(sp.end_to_event_row_p99)}; event row -> webhook p50 ${ms(sp.event_row_to_webhook_p50)} p99 ${ms(sp.event_row_to_webhook_p99)}`);
    console.log(`saturation, workers running: ${figures.saturation_with_workers.accepted_per_second} accepted dials/s (wrk ${sat.rps} req/s, non-2xx ${sat.non2xx}), dial p50 ${sat.p50} p99 ${sat.p99}`);
    console.log(`  backlog of ${satIds.length} calls drained in ${Math.round(drainSeconds)} s (workers: ~${figures.saturation_with_workers.workers_calls_per_second} calls/s end to end); end of call -> webhook p50 ${ms(figures.saturation_with_workers.end_to_webhook_ms.p50)} p99 ${ms(figures.saturation_with_workers.end_to_webhook_ms.p99)} (${satDelays.length}/${satIds.length} webhooks)`);
    console.log(`gateway alone (workers stopped): ${figures.gateway_alone.accepted_per_second} accepted dials/s (wrk ${alone.rps} req/s, non-2xx ${alone.non2xx}), dial p50 ${alone.p50} p99 ${alone.p99}`);
    for (const p of progression) {
      console.log(`progression, ${p.workers} workers process${p.workers > 1 ? 'es' : ''}: backlog of ${p.calls} calls to a terminal state in ${p.drain_seconds} s: ${p.calls_per_second} calls/s (steady, 10-90 %: ${p.steady_calls_per_second} calls/s); CPU per call: workers ${p.workers_cpu_ms_per_call} ms, Redis ${p.redis_cpu_ms_per_call} ms`);
      console.log(`  per call: ${p.jobs_per_call} jobs (${Object.entries(p.jobs_per_call_by_queue).map(([q, k]) => `${q} ${k}`).join(', ')}), ${p.pg_transactions_per_call} PostgreSQL transactions (the dial's insert included)`);
    }
    if (progression.length > 1) {
      console.log(`  ${progression[progression.length - 1].workers} processes / 1 process, steady rate: ${(progression[progression.length - 1].steady_calls_per_second / progression[0].steady_calls_per_second).toFixed(2)}x`);
    }
    const target = figures.saturation_with_workers.accepted_per_second >= 1000;
    console.log(`target >= 1,000 accepted dials/s with the workers running: ${target ? 'met' : 'NOT met'}`);
    const one = progression[0];
    if (one) {
      const met = (ok: boolean) => ok ? 'met' : 'NOT met';
      console.log(`targets per answered bridge call (1 workers process): jobs ${one.jobs_per_call} <= 3 ${met(one.jobs_per_call <= 3)}; ` +
        `transactions ${one.pg_transactions_per_call} <= 3 ${met(one.pg_transactions_per_call <= 3)}; workers CPU ${one.workers_cpu_ms_per_call} ms <= 2.5 ` +
        `${met(one.workers_cpu_ms_per_call <= 2.5)}; Redis CPU ${one.redis_cpu_ms_per_call} ms <= 1 ${met(one.redis_cpu_ms_per_call <= 1)}`);
    }
    console.log(JSON.stringify(figures));
    const results: Figure[] = [
      { name: 'accepted dials/s, gateway alone (workers stopped)', value: figures.gateway_alone.accepted_per_second, unit: 'dials/s' },
      { name: 'accepted dials/s with the workers running', value: figures.saturation_with_workers.accepted_per_second, unit: 'dials/s',
        target: '>= 1,000/s', met: target },
      { name: `end of call → call_completed webhook at ${PACED_RATE} dials/s, p50`, value: round(figures.paced.end_to_webhook_ms.p50, 1), unit: 'ms' },
      { name: `end of call → call_completed webhook at ${PACED_RATE} dials/s, p99`, value: round(figures.paced.end_to_webhook_ms.p99, 1), unit: 'ms' },
      { name: 'workers\' capacity, dial → webhook delivered (saturated)', value: figures.saturation_with_workers.workers_calls_per_second, unit: 'calls/s' },
    ];
    for (const p of progression) {
      const w = `${p.workers} workers process${p.workers > 1 ? 'es' : ''}`;
      results.push({ name: `${w}: backlog → terminal, whole drain`, value: p.calls_per_second, unit: 'calls/s' },
        { name: `${w}: backlog → terminal, steady`, value: p.steady_calls_per_second, unit: 'calls/s',
          ...(p.workers === 1 ? { target: '>= 1,000/s per process', met: p.steady_calls_per_second >= 1000 } : {}) },
        { name: `${w}: CPU per call, workers`, value: p.workers_cpu_ms_per_call, unit: 'ms',
          target: '<= 2.5 ms', met: p.workers_cpu_ms_per_call <= 2.5 },
        { name: `${w}: CPU per call, Redis server`, value: p.redis_cpu_ms_per_call, unit: 'ms', target: '<= 1 ms', met: p.redis_cpu_ms_per_call <= 1 },
        { name: `${w}: BullMQ jobs per call`, value: p.jobs_per_call, unit: 'jobs', target: '<= 3', met: p.jobs_per_call <= 3 },
        { name: `${w}: PostgreSQL transactions per call`, value: p.pg_transactions_per_call, unit: 'xacts', target: '<= 3', met: p.pg_transactions_per_call <= 3 });
    }
    writeResult('dial', results, { note: `wrk ${figures.settings.wrk}, SANDBOX_TIME_SCALE=${SCALE}` });
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill(process.env.BENCH_CPU_PROF ? 'SIGTERM' : 'SIGKILL');
    if (process.env.BENCH_CPU_PROF) await sleep(3000);
    await rx.close();
    await dropBenchData(redis, db, config.databaseUrl, env.REDIS_PREFIX);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
