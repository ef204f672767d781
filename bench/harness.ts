// What the bench scripts share: free ports, the real processes started as in the Procfile, readiness polling, a
// keep-alive JSON POST, and a wrk run parsed into figures.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { dropDatabase, type Db } from '../shared/db.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

export function startProc(proc: 'gateway' | 'workers', env: Record<string, string>, logFile: string): ChildProcess {
  const fd = openSync(logFile, 'a');
  // BENCH_CPU_PROF=<dir>: write a V8 CPU profile of each process there (on SIGTERM).
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...prof, '--import', 'tsx', `${proc}/main.ts`], { cwd: ROOT, env: { ...process.env, METRICS_PORT: '0', ...env }, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return child;
}

export async function waitHttp(url: string, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = request(url, { agent: false }, (res) => { res.resume(); resolve(res.statusCode === 200); });
      req.on('error', () => resolve(false));
      req.end();
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`${url} not ready in ${timeoutMs} ms`);
    await sleep(200);
  }
}

export function call(agent: Agent, base: string, method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: any }> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(base + path, { method, agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json',
      'content-length': Buffer.byteLength(payload) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

export const post = (agent: Agent, base: string, path: string, key: string, body: unknown) => call(agent, base, 'POST', path, key, body);

export interface Wrk { rps: number; requests: number; non2xx: number; p50: string; p99: string; socketErrors: string | null }

export function runWrk(url: string, luaFile: string, o: { threads: number; connections: number; seconds: number }): Wrk {
  const r = spawnSync('wrk', [`-t${o.threads}`, `-c${o.connections}`, `-d${o.seconds}s`, '--latency', '-s', luaFile, url], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr || r.stdout}`);
  const out = r.stdout;
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? 0);
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    requests: num(/(\d+) requests in/),
    non2xx: num(/Non-2xx or 3xx responses:\s+(\d+)/),
    p50: /^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? '?',
    p99: /^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? '?',
    socketErrors: /Socket errors:[^\n]*/.exec(out)?.[0] ?? null,
  };
}


/** Removes what a bench run left: its Redis keys (by prefix) and its database; closes both connections. */
/** Deletes every Redis key under a bench run's prefix. */
export async function unlinkPrefix(redis: Redis, redisPrefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
}

export async function dropBenchData(redis: Redis, db: Db, databaseUrl: string, redisPrefix: string): Promise<void> {
  await unlinkPrefix(redis, redisPrefix);
  redis.disconnect();
  await db.$pool.end();
  await sleep(200);
  await dropDatabase(databaseUrl);
}

/** CPU seconds a process has used so far (utime + stime from /proc/<pid>/stat, USER_HZ 100); NaN once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}
