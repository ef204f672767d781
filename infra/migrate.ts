import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Db } from '../shared/db.ts';

const DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// Any constant works; it only has to be the same for every process that migrates this database.
const LOCK_ID = 727_001;

/** Applies pending migrations in file-name order, each in its own transaction, under an advisory lock so that
 *  processes starting together never apply one twice. Returns the names applied now. `until` (a file name) stops
 *  after that migration: tests build a database as an older release left it. */
export async function migrate(db: Db, o: { until?: string } = {}): Promise<string[]> {
  const files = (await readdir(DIR)).filter((f) => f.endsWith('.sql') && (!o.until || f <= o.until)).sort();
  return db.task(async (t) => {
    await t.any('SELECT pg_advisory_lock($1)', [LOCK_ID]);
    try {
      await t.none('CREATE EXTENSION IF NOT EXISTS pgcrypto');
      await t.none(`CREATE TABLE IF NOT EXISTS schema_migrations (
        name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
      const done = new Set((await t.any('SELECT name FROM schema_migrations')).map((r) => r.name as string));
      const applied: string[] = [];
      for (const file of files) {
        if (done.has(file)) continue;
        const sql = await readFile(DIR + file, 'utf8');
        await t.tx(async (tx) => {
          await tx.none(sql);
          await tx.none('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
        });
        applied.push(file);
      }
      return applied;
    } finally {
      await t.any('SELECT pg_advisory_unlock($1)', [LOCK_ID]);
    }
  });
}
