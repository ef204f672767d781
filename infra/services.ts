import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { Config } from '../shared/config.ts';
import { adminUrl, createDb } from '../shared/db.ts';
import { postgresProblem } from './postgres-errors.ts';

const isLocal = (host: string) => ['127.0.0.1', 'localhost', '::1', '[::1]', ''].includes(host);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const onPath = (bin: string) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;

/** null when PostgreSQL accepts the login, else the connection error. */
async function postgresError(url: string): Promise<unknown> {
  const db = createDb(adminUrl(url), 1);
  try {
    await db.one('SELECT 1');
    return null;
  } catch (err) {
    return err ?? new Error('unknown error');
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
  // A server that answers but refuses the login (password, role, pg_hba.conf, database) is reported as such at once:
  // starting it again would not help.
  const loginProblem = (err: unknown) => {
    const line = postgresProblem(err, config.databaseUrl);
    if (line) throw new Error(line);
  };
  let err = await postgresError(config.databaseUrl);
  if (err) {
    loginProblem(err);
    if (!isLocal(pgUrl.hostname)) {
      throw new Error(`PostgreSQL at ${pgUrl.host} is not reachable (${(err as Error).message}); check DATABASE_URL.`);
    }
    if (!existsSync('/etc/postgresql') || !onPath('pg_ctlcluster')) {
      throw new Error('PostgreSQL is not installed: run `apt-get install -y postgresql` (or set DATABASE_URL).');
    }
    for (const version of readdirSync('/etc/postgresql')) {
      say(`starting PostgreSQL ${version}`);
      try {
        execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'], { stdio: 'ignore' });
      } catch { /* already running or failed: the wait below tells */ }
    }
    const until = Date.now() + 15_000;
    while (err && Date.now() < until) {
      await sleep(250);
      err = await postgresError(config.databaseUrl);
      if (err) loginProblem(err);
    }
    if (err) {
      throw new Error(`PostgreSQL at ${pgUrl.host || 'the local socket'} did not start (${(err as Error).message}); ` +
        'see `pg_lsclusters` and its log under /var/log/postgresql.');
    }
  }
  // A Redis Cluster (REDIS_CLUSTER_NODES) is the operator's to run: the processes connect to it, nothing is started.
  if (config.redisClusterNodes) return;
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
