// Optimize benchmark: `npm run bench:optimize`. Figures, not timed tests.
//
// (1) Collector throughput: a real gateway (in this process) takes beacons from wrk (-t1, 50 connections, 10 s) on
//     127.0.0.1 while a real workers process rolls the Redis counters up to PostgreSQL every second. Each beacon is a
//     new visitor's first page view: 3 impressions (3 running tests on the page) and 1 goal, as the tag batches
//     them. Figure: events accepted into Redis per second (target >= 20,000/s), and a check that after the rollup
//     drained PostgreSQL holds exactly 3 impressions and 1 conversion per accepted beacon.
// (2) Results computation for a test with 1 million impressions over 90 days (the statistics engineer's
//     bench/optimize-results.ts, benchResults()).
// Many browsers send beacons at once and each beacon waits on one Redis round trip, so the main run uses 200
// connections; a shorter run at 50 shows the latency-bound figure on a loaded machine.
// BENCH_DURATION (default 10s) and BENCH_CONNECTIONS (200) change the run. Needs wrk (apt-get install -y wrk).
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../gateway/start.ts';
import { bootstrapOrganization } from '../shared/accounts/bootstrap.ts';
import { loadConfig } from '../shared/config.ts';
import { createDb, dropDatabase } from '../shared/db.ts';
import { randomToken } from '../shared/ids.ts';
import { createLogger } from '../shared/log.ts';
import { createRedis } from '../shared/redis.ts';
import { DEFAULT_ALL_SCOPES } from '../shared/scopes.ts';
import { prepareDatabase } from '../infra/prepare.ts';
import { benchResults } from './optimize-results.ts';
import { runCommand as run } from './command.ts';
import { round, writeResult, type Figure } from './report.ts';
import { unlinkPrefix } from './harness.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const DURATION = process.env.BENCH_DURATION ?? '10s';
const CONNECTIONS = process.env.BENCH_CONNECTIONS ?? '200';
const EVENTS_PER_BEACON = 4;

const id = randomToken(8).toLowerCase();
const envVars: Record<string, string> = {
  DATABASE_URL: `postgres://127.0.0.1:5432/ol_bench_optimize_${id}`,
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  REDIS_PREFIX: `olb_${id}`, PORT: '0', METRICS_PORT: '0', WORKERS_PORT: '0', LOG_LEVEL: 'warn', DATABASE_POOL_MAX: '10',
  OPTIMIZE_ROLLUP_MS: '1000',
  // One client address sends every beacon here: lift the per-address bound so the bench measures the counting path.
  OPTIMIZE_COLLECT_LIMIT: '1000000000',
};
// The in-process gateway takes these through its config, the workers process through its environment.
const config = loadConfig({ ...process.env, ...envVars });


async function main() {
  await prepareDatabase(config);
  const db = createDb(config.databaseUrl, 4, 'bench-optimize');
  const redis = createRedis(config.redisUrl);
  const gateway = await startGateway(config, createLogger('gateway', 'warn'));
  const workers = spawn(process.execPath, ['--import', 'tsx', 'workers/main.ts'], {
    cwd: ROOT, env: { ...process.env, ...envVars, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let workersOut = '';
  workers.stdout!.on('data', (d) => { workersOut += d; });
  workers.stderr!.on('data', (d) => { workersOut += d; });
  const luaFile = join(tmpdir(), `bench-optimize-${id}.lua`);
  try {
    for (let i = 0; !/"status":"ready"/.test(workersOut); i++) {
      if (i > 1200 || workers.exitCode !== null) throw new Error(`workers did not start:\n${workersOut}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const org = await bootstrapOrganization(db, { org: 'Bench Optimize', scopes: [...DEFAULT_ALL_SCOPES], numbers: 0 });
    const api = async (method: string, path: string, body: unknown) => {
      const r = await fetch(`${gateway.url}${path}`, { method, headers: { authorization: `Bearer ${org.api_key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const j = await r.json() as { data: { id: string; public_key: string } };
      if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(j)}`);
      return j.data;
    };
    const prop = await api('POST', '/v1/optimize/properties', { domain: 'www.example.com' });
    const tests: string[] = [];
    for (let i = 0; i < 3; i++) {
      tests.push((await api('POST', '/v1/optimize/tests', { name: `Bench ${i}`, page_url: 'https://www.example.com/', start: true,
        goal: { type: 'cta_click', selector: '#buy' },
        variants: [{ name: 'Control' }, { name: 'B', ops: [{ op: 'setText', selector: 'h1', value: `Headline ${i}` }] }] })).id);
    }
    // Each request is a new visitor's first page view: 3 impressions and the first test's goal.
    const events = JSON.stringify([...tests.map((x) => ({ t: 'i', x })), { t: 'g', x: tests[0] }]);
    const writeLua = (file: string, salt: string) => writeFileSync(file, `
wrk.method = "POST"
wrk.headers["content-type"] = "text/plain;charset=UTF-8"
wrk.headers["user-agent"] = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
wrk.headers["origin"] = "https://www.example.com"
local n = 0
local salt = "${salt}"
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"k":"${prop.public_key}","v":"bench' .. salt .. '_' .. n .. '","e":${events.replace(/"/g, '\\"')}}')
end
`);
    writeLua(luaFile, 'a');
    console.log(`bench:optimize: wrk -t1 -c${CONNECTIONS} -d${DURATION} POST /v1/optimize/collect (${EVENTS_PER_BEACON} events per beacon), rollup every 1 s`);
    const started = Date.now();
    const out = await run('wrk', ['-t1', `-c${CONNECTIONS}`, `-d${DURATION}`, '--latency', '-s', luaFile, `${gateway.url}/v1/optimize/collect`]);
    const seconds = (Date.now() - started) / 1000;
    const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
    const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
    const p99 = /^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? '?';
    const accepted = requests - non2xx;

    // Wait for the rollup to drain (no live or batch keys left), then check PostgreSQL. wrk counts only the beacons
    // answered within its duration; up to one per connection was accepted after that, so the check is: every beacon
    // rolled up whole (3 impressions, 1 conversion, 3 assignments) and their number within [answered, answered + C].
    const drainStart = Date.now();
    const k = (...p: string[]) => `${config.redisPrefix}:opt:${p.join(':')}`;
    while (Date.now() - drainStart < 120_000
      && (await redis.exists(k('live', 'imp'), k('live', 'asg'), k('live', 'cnv'), k('batch', 'id'))) > 0) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const drainSeconds = (Date.now() - drainStart) / 1000;
    const t = await db.one(`SELECT (SELECT coalesce(sum(impressions), 0) FROM optimize_daily_counts)::bigint AS imp,
      (SELECT coalesce(sum(conversions), 0) FROM optimize_daily_counts)::bigint AS conv,
      (SELECT count(*) FROM optimize_assignments)::bigint AS asg`);
    const beacons = Number(t.conv);
    const exact = Number(t.imp) === 3 * beacons && Number(t.asg) === 3 * beacons
      && beacons >= accepted && beacons <= accepted + Number(CONNECTIONS);
    // The latency-bound figure: 50 connections, new visitors.
    writeLua(luaFile, 'b');
    const fewer = await run('wrk', ['-t1', '-c50', '-d5s', '-s', luaFile, `${gateway.url}/v1/optimize/collect`]);
    const fewerRps = Number(/Requests\/sec:\s+([\d.]+)/.exec(fewer)?.[1] ?? NaN);

    if (process.env.BENCH_NULL_POST) {
      // Diagnostic: the same beacons to a POST route that only answers 202.
      gateway.gateway.addRaw('POST', '/v1/optimize/null', () => ({ status: 202, contentType: 'application/json', body: '{}' }));
      const nul = await run('wrk', ['-t1', `-c${CONNECTIONS}`, '-d5s', '-s', luaFile, `${gateway.url}/v1/optimize/null`]);
      console.log(`  diagnostic: same beacons to a POST route that does nothing: ${/Requests\/sec:\s+([\d.]+)/.exec(nul)?.[1]} requests/s`);
    }
    // The same gateway's floor in the same run: a raw route that does nothing (GET /healthz), for a ratio.
    const base = await run('wrk', ['-t1', `-c${CONNECTIONS}`, '-d5s', `${gateway.url}/healthz`]);
    const baseRps = Number(/Requests\/sec:\s+([\d.]+)/.exec(base)?.[1] ?? NaN);

    const eventsPerSecond = rps * EVENTS_PER_BEACON;
    console.log(`  beacons: ${requests} (${non2xx} non-2xx) in ${round(seconds, 1)} s; ${round(rps, 0)} beacons/s = ${round(eventsPerSecond, 0)} events/s; p99 ${p99}`);
    console.log(`  with 50 connections: ${round(fewerRps, 0)} beacons/s = ${round(fewerRps * EVENTS_PER_BEACON, 0)} events/s`);
    console.log(`  same gateway, GET /healthz (does nothing): ${round(baseRps, 0)} requests/s; collector beacons / healthz = ${round(rps / baseRps, 2)}`);
    console.log(`  rolled up: ${t.imp} impressions, ${t.asg} assignments, ${t.conv} conversions for ${accepted} answered beacons (+ at most ${CONNECTIONS} in flight): `
      + `${exact ? 'exact' : 'MISMATCH'}; drained ${round(drainSeconds, 1)} s after the load`);

    console.log('bench:optimize: results computation (bench/optimize-results.ts)');
    const stats = await benchResults({ databaseUrl: config.databaseUrl });
    for (const f of stats) console.log(`  ${f.name}: ${f.value} ${f.unit}${f.target ? ` (target ${f.target}: ${f.met ? 'met' : 'NOT met'})` : ''}`);

    const figures: Figure[] = [
      { name: `collector (${CONNECTIONS} connections): events accepted into Redis per second, rollup running (4 events per beacon)`, value: round(eventsPerSecond, 0), unit: 'events/s',
        target: '>= 20,000/s', met: eventsPerSecond >= 20_000 },
      { name: 'collector: beacons per second', value: round(rps, 0), unit: 'beacons/s' },
      { name: 'collector with 50 connections (latency-bound): events accepted per second', value: round(fewerRps * EVENTS_PER_BEACON, 0), unit: 'events/s' },
      { name: 'collector beacons/s ÷ the same gateway\'s GET /healthz requests/s, same run', value: round(rps / baseRps, 2), unit: 'ratio' },
      { name: 'rollup: PostgreSQL counts equal the accepted events (1 = exact)', value: exact ? 1 : 0, unit: 'boolean', target: '1', met: exact },
      { name: 'rollup: drained after the load stopped', value: round(drainSeconds, 1), unit: 's' },
      ...stats,
    ];
    const load = loadavg().map((l) => round(l, 2));
    const path = writeResult('optimize', figures, { note: `wrk -t1 -c${CONNECTIONS} -d${DURATION} on 127.0.0.1, gateway in the bench process, `
      + `one workers process rolling up every second; the machine is shared with other engineers' runs (load ${load.join(', ')} at the end), `
      + 'so the collector figure is a floor on a busy 2-core machine' });
    console.log(`wrote ${path}`);
  } finally {
    rmSync(luaFile, { force: true });
    workers.kill('SIGTERM');
    await gateway.stop();
    await unlinkPrefix(redis, config.redisPrefix);
    await redis.quit();
    db.$pool.on('error', () => undefined);
    await db.$pool.end();
    await new Promise((r) => setTimeout(r, 500));
    await dropDatabase(config.databaseUrl);
  }
}

await main();
process.exit(0);
