// A PostgreSQL cluster and a Redis server that one test file owns, on their own ports, so it can stop and start them
// (outages) without touching the shared ones other test files use. Both are removed by t.teardown; register them
// before testEnv so that they outlive it (tap runs teardowns last-registered first).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createDb } from '../../shared/db.ts';
import { freePort } from './ports.ts';

export { freePort };

interface TapLike { teardown(fn: () => unknown): void }

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const PG_BIN = join('/usr/lib/postgresql', readdirSync('/usr/lib/postgresql').sort().at(-1) ?? '15', 'bin');

/** A PostgreSQL cluster in a temporary directory, run as the `postgres` OS user (initdb refuses root). With
 *  `password`, every login over TCP needs a password (scram-sha-256): the shared server trusts every login from
 *  127.0.0.1, so a wrong password would pass there. */
export class OwnPostgres {
  private constructor(readonly dir: string, readonly port: number, private readonly password: string | null) {}

  static async create(t: TapLike, o: { password?: boolean } = {}): Promise<OwnPostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'ol-pg-'));
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
    const password = o.password ? `pw${Math.random().toString(36).slice(2)}` : null;
    const pg = new OwnPostgres(dir, await freePort(), password);
    const auth = ['--auth=trust'];
    if (password) {
      const pwfile = join(dir, 'pwfile');
      writeFileSync(pwfile, `${password}\n`);
      chownSync(pwfile, uid, gid);
      auth.splice(0, 1, '--auth=scram-sha-256', `--pwfile=${pwfile}`);
    }
    execFileSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'initdb'), '-D', join(dir, 'data'), '-U', 'postgres',
      ...auth, '--no-sync', '-E', 'UTF8'], { stdio: 'ignore' });
    t.teardown(() => pg.destroy());
    await pg.start();
    return pg;
  }

  /** A database URL on this cluster (as its superuser). */
  url(database = 'postgres'): string {
    return `postgres://postgres${this.password ? `:${this.password}` : ''}@127.0.0.1:${this.port}/${database}`;
  }

  /** Runs one statement as the superuser. */
  async sql(statement: string, database?: string): Promise<void> {
    const db = createDb(this.url(database), 1, 'own-postgres');
    try { await db.none(statement); } finally { await db.$pool.end(); }
  }

  private ctl(args: string[]): void {
    execFileSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'pg_ctl'), '-D', join(this.dir, 'data'), ...args],
      { stdio: 'ignore', timeout: 60_000 });
  }

  async start(): Promise<void> {
    this.ctl(['-l', join(this.dir, 'log'), '-w', '-t', '60', '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60`, 'start']);
    await until('PostgreSQL answers', () => this.answers(), 30_000);
  }

  /** Stops hard: every backend is killed at once (no checkpoint, crash recovery at the next start). */
  stopHard(): void { this.ctl(['-m', 'immediate', 'stop']); }

  async answers(): Promise<boolean> {
    const db = createDb(this.url('postgres'), 1, 'own-postgres-probe');
    db.$pool.on('error', () => undefined);
    try {
      await db.one('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await db.$pool.end().catch(() => undefined);
    }
  }

  private destroy(): void {
    try { this.ctl(['-m', 'immediate', 'stop']); } catch { /* not running */ }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A redis-server without persistence: killed and started again on the same port, it comes back empty. */
export class OwnRedis {
  private child: ChildProcess | null = null;
  private constructor(readonly port: number) {}

  static async create(t: TapLike): Promise<OwnRedis> {
    const r = new OwnRedis(await freePort());
    t.teardown(() => r.kill());
    await r.start();
    return r;
  }

  get url(): string { return `redis://127.0.0.1:${this.port}`; }

  async start(): Promise<void> {
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' });
    await until('Redis answers', () => this.answers(), 20_000);
  }

  /** Sends a signal to the server (SIGSTOP: it keeps its connections but answers nothing; SIGCONT resumes it). */
  signal(sig: NodeJS.Signals): void { this.child?.kill(sig); }

  /** SIGKILL: the server is gone at once, as in a crash. */
  async kill(): Promise<void> {
    const c = this.child;
    this.child = null;
    if (!c || c.exitCode !== null) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await gone;
  }

  async answers(): Promise<boolean> {
    const r = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
    r.on('error', () => undefined);
    try {
      await r.connect();
      return (await r.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      r.disconnect();
    }
  }
}
