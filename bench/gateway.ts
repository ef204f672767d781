// Gateway benchmark: `npm run bench:gateway`. A figure, not a timed test.
//
// In one run, with wrk (-t1 -c50 -d5s --latency) on 127.0.0.1, in three alternating rounds:
//   (a) a bare uWebSockets.js hello-world, and
//   (b) the real gateway (startGateway) answering authenticated, rate-limited GET /v1/account through the whole
//       pipeline: credential cache, the per-key limit (Redis, in leased blocks), the account snapshot (kept in
//       memory, dropped by PostgreSQL change notices), JSON, metrics and an info-level access log written to a file
//       in the temp directory.
// Both servers run in their own child process, started the same way (node --import tsx), so the two figures are
// comparable. The key has a very high per-key limit so that (b) measures the full path, not the 429 path.
// Prints every round, the medians of (a) and (b), their ratio, b's worst p99 and a verdict against the target
// (b >= 0.5 x a, p99 < 10 ms). BENCH_DURATION, BENCH_ROUNDS, BENCH_CONNECTIONS change the run.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from '../gateway/http/types.ts';
import { runCommand as run } from './command.ts';
import { round, writeResult } from './report.ts';
import { unlinkPrefix } from './harness.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const DURATION = process.env.BENCH_DURATION ?? '5s';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = process.env.BENCH_CONNECTIONS ?? '50';

// ---------------------------------------------------------------------------------------------------------------
// Child modes: each prints one JSON line {"port": n} when listening.

async function serveHello(): Promise<void> {
  const { default: uWS } = await import('uWebSockets.js');
  uWS.App().get('/*', (res) => {
    res.writeHeader('content-type', 'text/plain');
    res.end('Hello, world!');
  }).listen('127.0.0.1', 0, (sock) => {
    if (!sock) throw new Error('hello-world: cannot listen');
    process.stdout.write(JSON.stringify({ port: uWS.us_socket_local_port(sock) }) + '\n');
  });
  process.on('SIGTERM', () => process.exit(0)); // exit normally, so a --cpu-prof profile is written
}

async function serveGateway(): Promise<void> {
  const { pino } = await import('pino');
  const { loadConfig } = await import('../shared/config.ts');
  const { startGateway } = await import('../gateway/start.ts');
  const config = loadConfig({ ...process.env, PORT: '0', METRICS_PORT: '0' });
  // The access log at info, as in production, into a file: its cost is counted, its output is not shown.
  const log = pino({ level: 'info', base: { proc: 'gateway' }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ dest: process.env.BENCH_LOG_FILE!, sync: false, mkdir: true }));
  const g = await startGateway(config, log, { plugins: process.env.BENCH_BREAKDOWN ? [breakdownRoutes] : [] });
  process.stdout.write(JSON.stringify({ port: g.port }) + '\n');
  const stop = async () => { await g.stop(); process.exit(0); };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
}

/** BENCH_BREAKDOWN=1: two bench-only routes on the same pipeline (auth, rate limit, log, metrics, JSON) whose
 *  handlers do no account work, and one Postgres round trip, to show what the snapshot itself costs. */
const breakdownRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/bench/pipeline', scope: 'account:read', tag: 'Bench', summary: 'Bench only.', response: { status: 200 },
    handler: async ({ principal }) => ({ status: 200, body: { data: { api_key_id: principal.keyId } } }),
  });
  routes.add({
    method: 'GET', path: '/v1/bench/select1', scope: 'account:read', tag: 'Bench', summary: 'Bench only.', response: { status: 200 },
    handler: async ({ deps }) => ({ status: 200, body: { data: await deps.db.one('SELECT 1 AS one') } }),
  });
};

// ---------------------------------------------------------------------------------------------------------------
// The driver.

interface WrkResult { rps: number; p50Ms: number; p99Ms: number; requests: number; non2xx: number; errors: string | null; raw: string }

function median(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function durationMs(s: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(s.trim());
  if (!m) throw new Error(`cannot parse wrk duration "${s}"`);
  return Number(m[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000 }[m[2] as 'us' | 'ms' | 's' | 'm'];
}

export function parseWrk(out: string): WrkResult {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const p50 = /^\s+50%\s+(\S+)/m.exec(out);
  const p99 = /^\s+99%\s+(\S+)/m.exec(out);
  const total = /(\d+) requests in/.exec(out);
  if (!rps || !p50 || !p99 || !total) throw new Error(`cannot parse wrk output:\n${out}`);
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out);
  const errors = /Socket errors:.*$/m.exec(out);
  return {
    rps: Number(rps[1]), p50Ms: durationMs(p50[1]), p99Ms: durationMs(p99[1]), requests: Number(total[1]),
    non2xx: non2xx ? Number(non2xx[1]) : 0, errors: errors ? errors[0] : null, raw: out,
  };
}


const wrk = (url: string, headers: string[], duration = DURATION) =>
  run('wrk', ['-t1', `-c${CONNECTIONS}`, `-d${duration}`, '--latency', ...headers.flatMap((h) => ['-H', h]), url]).then(parseWrk);

/** Starts this file in a child mode and resolves with the process and its port. */
function startChild(mode: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    // BENCH_CPU_PROF=<dir>: the children write V8 CPU profiles there (node --cpu-prof) for `where does the time go`.
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    const child = spawn(process.execPath, [...prof, '--import', 'tsx', SELF, mode], {
      cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const onData = (d: Buffer) => {
      out += d;
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) { child.stdout!.off('data', onData); resolve({ child, port: Number(m[1]) }); }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => { out += d; });
    child.once('exit', (code) => reject(new Error(`${mode} exited (${code}) before listening:\n${out}`)));
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => { clearTimeout(force); resolve(); });
    child.kill('SIGTERM');
  });
}

function get(url: string, headers: Record<string, string>): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    request(url, { headers: { connection: 'close', ...headers } }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    }).on('error', reject).end();
  });
}

async function main(): Promise<void> {
  try {
    await run('wrk', ['--version']).catch((e: Error) => { if (/ENOENT/.test(e.message)) throw e; return ''; });
  } catch {
    console.error('bench:gateway needs wrk: apt-get install -y wrk');
    process.exit(1);
  }
  const { randomToken } = await import('../shared/ids.ts');
  const { loadConfig } = await import('../shared/config.ts');
  const { createDb, dropDatabase } = await import('../shared/db.ts');
  const { createRedis } = await import('../shared/redis.ts');
  const { prepareDatabase } = await import('../infra/prepare.ts');
  const { bootstrapOrganization } = await import('../shared/accounts/bootstrap.ts');
  const { createApiKey } = await import('../shared/accounts/keys.ts');

  const id = randomToken(8).toLowerCase();
  const env = {
    DATABASE_URL: `postgres://127.0.0.1:5432/ol_bench_${id}`,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `olbench_${id}`,
    LOG_LEVEL: 'info',
    BENCH_LOG_FILE: join(tmpdir(), `ol-bench-gateway-${id}.log`),
  };
  const config = loadConfig({ ...process.env, ...env });
  const children: ChildProcess[] = [];
  let dbCreated = false;
  const cleanup = async () => {
    await Promise.all(children.map(stopChild));
    if (dbCreated) await dropDatabase(config.databaseUrl).catch((e) => console.error(`could not drop ${config.databaseUrl}: ${e.message}`));
    const redis = createRedis(config.redisUrl);
    await unlinkPrefix(redis, config.redisPrefix);
    await redis.quit();
    rmSync(env.BENCH_LOG_FILE, { force: true });
  };
  process.on('SIGINT', () => { void cleanup().finally(() => process.exit(130)); });

  try {
    console.log(`wrk -t1 -c${CONNECTIONS} -d${DURATION} --latency on 127.0.0.1; each server in its own child process; ` +
      `${ROUNDS} alternating rounds of (a) and (b)\n`);

    // (b)'s database: fresh, with an organization and a high-limit key
    await prepareDatabase(config);
    dbCreated = true;
    const db = createDb(config.databaseUrl, 2);
    const org = await bootstrapOrganization(db, { org: 'Bench Co', scopes: ['account:read'], numbers: 5 });
    const key = await createApiKey(db, {
      organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'], rateLimitPerMinute: 1_000_000_000,
    });
    await db.$pool.end();

    const hello = await startChild('--serve-hello');
    children.push(hello.child);
    const gw = await startChild('--serve-gateway', env);
    children.push(gw.child);
    const helloUrl = `http://127.0.0.1:${hello.port}/`;
    const path = process.env.BENCH_PATH ?? '/v1/account';
    const url = `http://127.0.0.1:${gw.port}${path}`;
    const auth = `Authorization: Bearer ${key.apiKey}`;
    const probe = await get(url, { authorization: `Bearer ${key.apiKey}` });
    if (probe.status !== 200) throw new Error(`GET ${path} answered ${probe.status}: ${probe.body}`);
    if (probe.headers['x-ratelimit-limit'] !== '1000000000') throw new Error('the benchmark key is not on its own high limit');
    await wrk(helloUrl, [], '2s'); // warm-up (JIT, connection pools)
    await wrk(url, [auth], '2s');

    // The machine's speed drifts over seconds (other tenants, CPU frequency), so (a) and (b) alternate and each
    // figure is the median of its rounds.
    const as: WrkResult[] = [];
    const bs: WrkResult[] = [];
    const line = (label: string, r: WrkResult) =>
      `${label} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50Ms.toFixed(2)} ms   p99 ${r.p99Ms.toFixed(2)} ms`;
    for (let i = 1; i <= ROUNDS; i++) {
      const a = await wrk(helloUrl, []);
      const b = await wrk(url, [auth]);
      as.push(a);
      bs.push(b);
      console.log(`round ${i}: ${line('(a)', a)}\n         ${line('(b)', b)}   ratio ${(b.rps / a.rps).toFixed(3)}`);
    }
    const breakdown: [string, WrkResult][] = [];
    if (process.env.BENCH_BREAKDOWN) {
      for (const path of ['/v1/bench/pipeline', '/v1/bench/select1']) {
        const u = `http://127.0.0.1:${gw.port}${path}`;
        await wrk(u, [auth], '2s');
        breakdown.push([path, await wrk(u, [auth])]);
      }
    }
    const after = await get(url, { authorization: `Bearer ${key.apiKey}` });
    await Promise.all([stopChild(hello.child), stopChild(gw.child)]);

    const a = median(as.map((r) => r.rps));
    const b = median(bs.map((r) => r.rps));
    const p99 = Math.max(...bs.map((r) => r.p99Ms));
    const non2xx = bs.reduce((n, r) => n + r.non2xx, 0);
    const errors = bs.map((r) => r.errors).filter(Boolean);
    console.log(`\n(a) uWS hello-world         median ${a.toFixed(0).padStart(8)} req/s`);
    console.log(`(b) gateway GET ${path.padEnd(11)} median ${b.toFixed(0).padStart(8)} req/s   worst p99 ${p99.toFixed(2)} ms`);
    if (non2xx || errors.length) console.log(`    (b) non-2xx responses: ${non2xx}${errors.length ? `; ${errors.join('; ')}` : ''}`);
    for (const [path, r] of breakdown) console.log(`    breakdown ${path.padEnd(19)} ${line('', r)}`);
    if (after.status !== 200) console.log(`    (b) a request after the run answered ${after.status}`);

    const ratio = b / a;
    const ok = ratio >= 0.5 && p99 < 10 && non2xx === 0;
    console.log(`\nratio b/a ${ratio.toFixed(3)} (rounds: ${bs.map((r, i) => (r.rps / as[i].rps).toFixed(2)).join(', ')})   b p99 ${p99.toFixed(2)} ms`);
    console.log(`verdict: ${ok ? 'PASS' : 'MISS'} (target b >= 0.5 x a and p99 < 10 ms${non2xx ? ', all responses 200' : ''}): ` +
      `ratio ${ratio.toFixed(2)} ${ratio >= 0.5 ? '>=' : '<'} 0.5, p99 ${p99.toFixed(2)} ms ${p99 < 10 ? '<' : '>='} 10 ms`);
    writeResult('gateway', [
      { name: '(a) bare uWebSockets.js hello-world, median of the rounds', value: Math.round(a), unit: 'req/s' },
      { name: `(b) authenticated GET ${path} through the full pipeline, median of the rounds`, value: Math.round(b), unit: 'req/s' },
      { name: '(b) worst p99', value: round(p99), unit: 'ms', target: '< 10 ms', met: p99 < 10 },
      { name: 'ratio of the medians (b)/(a)', value: round(ratio, 3), unit: '×', target: '>= 0.5', met: ratio >= 0.5 },
      { name: '(b) non-2xx responses', value: non2xx, unit: 'responses', target: '0', met: non2xx === 0 },
    ], { note: `wrk -t1 -c${CONNECTIONS} -d${DURATION}, ${bs.length} alternating rounds` });
  } finally {
    await cleanup();
  }
}

const mode = process.argv[2];
if (mode === '--serve-hello') await serveHello();
else if (mode === '--serve-gateway') await serveGateway();
else await main();
