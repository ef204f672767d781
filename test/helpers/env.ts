// Test isolation: every test file gets its own PostgreSQL database (migrated), its own Redis key prefix, and
// real processes on ephemeral loopback ports. Nothing is mocked.
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import { bootstrapOrganization, type BootstrapResult } from '../../shared/accounts/bootstrap.ts';
import { createApiKey, type NewKeyInput } from '../../shared/accounts/keys.ts';
import type { Clock } from '../../shared/clock.ts';
import { loadConfig, type Config } from '../../shared/config.ts';
import { createDb, dropDatabase, type Db } from '../../shared/db.ts';
import { randomToken } from '../../shared/ids.ts';
import { createLogger } from '../../shared/log.ts';
import { QueueRegistry } from '../../shared/queues/registry.ts';
import { TokenKeys } from '../../shared/tokens/keys.ts';
import { connectRedis, isCluster, queuePrefix, type Redis } from '../../shared/redis.ts';
import { DEFAULT_ALL_SCOPES, type Scope } from '../../shared/scopes.ts';
import { startGateway, type RunningGateway } from '../../gateway/start.ts';
import type { Plugin } from '../../gateway/http/types.ts';
import { prepareDatabase } from '../../infra/prepare.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface TapLike { teardown(fn: () => unknown): void }

export interface EnvOptions {
  /** Start an in-process gateway (default true). */
  gateway?: boolean;
  clock?: Clock;
  plugins?: Plugin[];
  /** Extra environment for this file's config and spawned processes. */
  env?: Record<string, string>;
}

export interface Response<T = any> { status: number; headers: Record<string, string>; body: T; text: string; raw: Buffer }

export interface RequestOptions {
  key?: string | null;
  body?: unknown;
  /** Sent verbatim instead of JSON.stringify(body). */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

export class TestEnv {
  gateway: RunningGateway | null = null;
  private readonly children = new Set<ChildProcess>();
  /** Queues on this file's connection and prefix, for tests that add or inspect jobs themselves. */
  readonly queues: QueueRegistry;
  /** Token keys on this file's database, for tests that build a process's deps themselves. */
  readonly tokenKeys: TokenKeys;

  constructor(readonly config: Config, readonly env: Record<string, string>, readonly db: Db, readonly redis: Redis) {
    this.queues = new QueueRegistry(redis, queuePrefix(config));
    this.tokenKeys = new TokenKeys(db, config);
  }

  get url(): string {
    if (!this.gateway) throw new Error('no gateway in this test env');
    return this.gateway.url;
  }

  bootstrap(o: { org?: string; scopes?: Scope[]; numbers?: number; demo?: boolean; email?: string } = {}): Promise<BootstrapResult> {
    return bootstrapOrganization(this.db, {
      org: o.org ?? `Org ${randomToken(5)}`, scopes: o.scopes ?? [...DEFAULT_ALL_SCOPES], numbers: o.numbers ?? 2,
      demo: o.demo, email: o.email,
    });
  }

  createKey(input: NewKeyInput) { return createApiKey(this.db, input); }

  request<T = any>(method: string, path: string, o: RequestOptions = {}): Promise<Response<T>> {
    return httpCall<T>(this.url, method, path, o);
  }

  /** Starts one Procfile process (node --import tsx <proc>/main.ts) with this file's environment. */
  spawn(proc: 'gateway' | 'signaling' | 'media' | 'workers', extra: Record<string, string> = {}): Proc {
    // BENCH_CPU_PROF=<dir>: a V8 CPU profile of the process there, written when it exits (as bench/harness.ts does).
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    const child = spawn(process.execPath, [...prof, '--import', 'tsx', `${proc}/main.ts`], {
      // At info so ready() sees the ready line; the output stays in memory unless a test prints it.
      // The IPC channel makes the test its supervisor (shared/process.ts): a test process that dies before its teardown
      // (an uncaught error) takes the child down with it, instead of leaving it holding PostgreSQL connections.
      cwd: ROOT, env: { ...process.env, ...this.env, LOG_LEVEL: 'info', ...extra }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.children.add(child);
    const p = new Proc(child);
    child.once('exit', () => this.children.delete(child));
    return p;
  }

  async close(): Promise<void> {
    for (const c of this.children) c.kill('SIGKILL');
    // pg-promise drops its pool error listener on $pool.end(), and pg-pool resolves end() before its idle
    // connections have closed: DROP DATABASE ... WITH (FORCE) then terminates them and the late 57P01 error would be
    // an unhandled 'error' event that kills the test process. Swallow errors of pools that are shutting down.
    for (const pool of [this.gateway?.db.$pool, this.db.$pool]) pool?.on('error', () => undefined);
    await this.gateway?.stop();
    await this.queues.close();
    // A Redis Cluster of the test's own is removed with its keys (test/helpers/redis-cluster.ts).
    let cursor = isCluster(this.redis) ? null : '0';
    while (cursor !== null) {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${this.config.redisPrefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await this.redis.unlink(...keys);
      if (cursor === '0') cursor = null;
    }
    await this.redis.quit();
    await this.db.$pool.end();
    await dropDatabase(this.config.databaseUrl);
  }
}

/** A spawned process: its output, readiness and exit. */
export class Proc {
  output = '';
  readonly exited: Promise<number | null>;
  constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (d) => { this.output += d; });
    child.stderr!.on('data', (d) => { this.output += d; });
    this.exited = new Promise((r) => child.once('exit', (code) => r(code)));
  }

  /** Resolves when the process logged its ready line (or rejects when it exits first). The default is generous: a
   *  process starting under tsx on a machine at load 20 (the suite with other work beside it) took over 30 s. */
  async ready(timeoutMs = 90_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!/"status":"ready"/.test(this.output)) {
      if (this.child.exitCode !== null) throw new Error(`process exited early:\n${this.output}`);
      if (Date.now() > until) throw new Error(`process not ready in ${timeoutMs} ms:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  kill(signal: NodeJS.Signals = 'SIGKILL') { this.child.kill(signal); return this.exited; }
}

export async function testEnv(t: TapLike, o: EnvOptions = {}): Promise<TestEnv> {
  const id = randomToken(8).toLowerCase();
  const env: Record<string, string> = {
    DATABASE_URL: `postgres://127.0.0.1:5432/ol_test_${id}`,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `olt_${id}`,
    PORT: '0', SIGNALING_PORT: '0', MEDIA_PORT: '0', WORKERS_PORT: '0', METRICS_PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    // Small pools: test files run two at a time, each with several processes, on one PostgreSQL (max_connections 100).
    DATABASE_POOL_MAX: '5',
    // Who Letters of Authorization authorize (generate-loa and signing answer 503 without it).
    PLATFORM_LEGAL_NAME: 'Openline Test Telecom, Inc.', PLATFORM_LEGAL_ADDRESS: '1 Test Plaza, Suite 9, Austin, TX 78701, USA',
    // Every gateway of the suite checks each answer against its route's declared response schema (a mismatch is a 500).
    RESPONSE_SCHEMA_CHECK: '1',
    ...o.env,
  };
  const config = loadConfig({ ...process.env, ...env });
  await prepareDatabase(config);
  const te = new TestEnv(config, env, createDb(config.databaseUrl, 10), connectRedis(config));
  t.teardown(() => te.close());
  if (o.gateway !== false) {
    te.gateway = await startGateway(config, createLogger('gateway', config.logLevel), { clock: o.clock, plugins: o.plugins });
  }
  return te;
}

export function httpCall<T = any>(base: string, method: string, path: string, o: RequestOptions = {}): Promise<Response<T>> {
  const headers: Record<string, string> = { connection: 'close', ...(o.headers ?? {}) };
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  let payload: string | Buffer | undefined = o.rawBody;
  if (payload === undefined && o.body !== undefined) {
    payload = JSON.stringify(o.body);
    headers['content-type'] ??= 'application/json';
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = raw.toString('utf8');
        let body: any = text;
        try { body = text ? JSON.parse(text) : undefined; } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body, text, raw });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** Polls until fn returns a truthy value. */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 15_000, stepMs = 50): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
