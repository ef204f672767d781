import { userInfo } from 'node:os';
import pgPromise from 'pg-promise';

// One pg-promise root per process; databases are created from it. Large integers (bigint) come back as numbers
// because every bigint we store (phone ids, cents) stays far below 2^53.
export const pgp = pgPromise({ capSQL: true });
pgp.pg.types.setTypeParser(20, (v: string) => Number(v));

export type Db = ReturnType<typeof createDb>;
export type Tx = pgPromise.ITask<unknown>;

// Several pools in one process are legitimate (tests run gateway replicas and several databases side by side; the
// admin helpers open short-lived ones). Each gets its own application_name (owner#n from the second pool of an
// owner on), so pg_stat_activity tells them apart and pg-promise does not take them for one Database object
// created twice (it compares connections with the port and database name masked, so counting per URL is not enough).
const poolsOpened = new Map<string, number>();

export function createDb(url: string, max = 10, owner = 'openline') {
  const n = (poolsOpened.get(owner) ?? 0) + 1;
  poolsOpened.set(owner, n);
  return pgp({ connectionString: withUser(url), max, allowExitOnIdle: true, application_name: n === 1 ? owner : `${owner}#${n}` });
}

/** The role a URL logs in as: its user, else (as libpq does) the login name; node-postgres needs $USER for that,
 *  which service environments often lack. PGUSER is put into the URL by loadConfig (shared/config.ts). */
export function databaseUser(url: string): string {
  const u = new URL(url);
  return decodeURIComponent(u.username) || userInfo().username;
}

function withUser(url: string): string {
  const u = new URL(url);
  if (!u.username) u.username = databaseUser(url);
  return u.toString();
}

/** Connection string of the maintenance database on the same server (to create or drop databases). */
export function adminUrl(url: string): string {
  const u = new URL(url);
  u.pathname = '/postgres';
  return u.toString();
}
export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
}

export async function ensureDatabase(url: string): Promise<boolean> {
  const name = databaseName(url);
  const admin = createDb(adminUrl(url), 1);
  try {
    const found = await admin.oneOrNone('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found) return false;
    try {
      await admin.none('CREATE DATABASE $1:name', [name]);
    } catch (err) {
      if ((err as { code?: string }).code !== '42P04') throw err; // created concurrently
    }
    return true;
  } finally {
    await admin.$pool.end();
  }
}

export async function dropDatabase(url: string): Promise<void> {
  const admin = createDb(adminUrl(url), 1);
  try {
    await admin.none('DROP DATABASE IF EXISTS $1:name WITH (FORCE)', [databaseName(url)]);
  } finally {
    await admin.$pool.end();
  }
}

/** Work that must commit together with a transaction's own writes (e.g. a request's idempotency record); it gets
 *  the transaction and what the transaction produced. */
export type WithinTx<T> = (tx: Tx, result: T) => Promise<void>;

/** Runs a write (one statement or several) and, when `within` is given, in one transaction together with it. */
export async function writeWithin<T>(db: Db, within: WithinTx<T> | undefined, write: (q: Db | Tx) => Promise<T>): Promise<T> {
  if (!within) return write(db);
  return db.tx(async (tx) => {
    const result = await write(tx);
    await within(tx, result);
    return result;
  });
}
