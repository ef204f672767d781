import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { Config } from '../shared/config.ts';
import { adminUrl, createDb } from '../shared/db.ts';

const isLocal = (host: string) => ['127.0.0.1', 'localhost', '::1', '[::1]', ''].includes(host);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const onPath = (bin: string) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;

async function postgresUp(url: string): Promise<boolean> {
  const db = createDb(adminUrl(url), 1);
  try {
    await db.one('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await db.$pool.end();
  }
}

async function redisUp(url: string): Promise<boolean> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000 });
  r.on('error', () => undefined);
  try {
    await r.connect();
    await r.ping();
    return true;
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

async function waitFor(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await sleep(250);
  }
  return false;
}

/** Makes sure PostgreSQL and Redis answer. Local ones that are installed but stopped are started from the
 *  system's binaries; a missing one ends with one line that says what to install. */
export async function ensureServices(config: Config, say: (line: string) => void): Promise<void> {
  const pgUrl = new URL(config.databaseUrl);
  if (!(await postgresUp(config.databaseUrl))) {
    if (!isLocal(pgUrl.hostname)) throw new Error(`PostgreSQL at ${pgUrl.host} is not reachable; check DATABASE_URL.`);
    if (!existsSync('/etc/postgresql') || !onPath('pg_ctlcluster')) {
      throw new Error('PostgreSQL is not installed: run `apt-get install -y postgresql` (or set DATABASE_URL).');
    }
    for (const version of readdirSync('/etc/postgresql')) {
      say(`starting PostgreSQL ${version}`);
      try {
        execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'], { stdio: 'ignore' });
      } catch { /* already running or failed: the wait below tells */ }
    }
    if (!(await waitFor(() => postgresUp(config.databaseUrl), 15_000))) {
      throw new Error('PostgreSQL did not start; see `pg_lsclusters` and its log under /var/log/postgresql.');
    }
  }
  const rUrl = new URL(config.redisUrl);
  if (!(await redisUp(config.redisUrl))) {
    if (!isLocal(rUrl.hostname)) throw new Error(`Redis at ${rUrl.host} is not reachable; check REDIS_URL.`);
    if (!onPath('redis-server')) throw new Error('Redis is not installed: run `apt-get install -y redis-server` (or set REDIS_URL).');
    say('starting Redis');
    execFileSync('redis-server', ['--daemonize', 'yes', '--bind', '127.0.0.1', '-::1', '--port', rUrl.port || '6379',
      '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    if (!(await waitFor(() => redisUp(config.redisUrl), 10_000))) throw new Error('Redis did not start.');
  }
}
