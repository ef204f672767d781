// A PostgreSQL server of a test's own (own data directory, own port, password authentication over TCP), for what the
// shared server cannot show: it trusts every login from 127.0.0.1, so a wrong password would pass there.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../../shared/db.ts';
import { freePorts } from './process-tree.ts';

interface TapLike { teardown(fn: () => unknown): void }

export interface OwnPostgres {
  port: number;
  /** The superuser `postgres` and its password, over TCP. */
  superUrl(database?: string): string;
  sql(statement: string, database?: string): Promise<void>;
}

/** Starts the newest installed PostgreSQL's server binaries on a fresh data directory with scram-sha-256
 *  authentication everywhere; stopped and deleted at teardown. As root the server runs as the `postgres` user
 *  (PostgreSQL refuses to run as root). */
export async function ownPostgres(t: TapLike): Promise<OwnPostgres> {
  const version = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))[0];
  const bin = (name: string) => `/usr/lib/postgresql/${version}/bin/${name}`;
  const dir = mkdtempSync(join(tmpdir(), 'ol-own-pg-'));
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  const run = (args: string[]) => {
    const cmd = asRoot ? ['runuser', '-u', 'postgres', '--', ...args] : args;
    const r = spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${args.join(' ')} failed: ${r.stderr}${r.stdout}`);
  };
  const password = `pw${Math.random().toString(36).slice(2)}`;
  const pwfile = join(dir, 'pwfile');
  writeFileSync(pwfile, `${password}\n`);
  if (asRoot) execFileSync('chown', ['postgres', pwfile]);
  const data = join(dir, 'data');
  run([bin('initdb'), '-D', data, '-U', 'postgres', `--pwfile=${pwfile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-sync']);
  const [port] = await freePorts(1);
  t.teardown(() => {
    try { run([bin('pg_ctl'), '-D', data, '-m', 'immediate', 'stop']); } catch { /* not running */ }
    rmSync(dir, { recursive: true, force: true });
  });
  // Its socket lives in its own folder; it listens on 127.0.0.1 only, and small: tests never load it.
  run([bin('pg_ctl'), '-D', data, '-w', '-l', join(dir, 'log'), '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=20 -c shared_buffers=16MB -c fsync=off`, 'start']);
  const superUrl = (database = 'postgres') => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`;
  return {
    port, superUrl,
    async sql(statement, database) {
      const db = createDb(superUrl(database), 1);
      try { await db.none(statement); } finally { await db.$pool.end(); }
    },
  };
}
