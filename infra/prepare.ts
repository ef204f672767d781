import type { Config } from '../shared/config.ts';
import { createDb, ensureDatabase } from '../shared/db.ts';
import { migrate } from './migrate.ts';
import { postgresProblem } from './postgres-errors.ts';

/** Creates the database when missing and applies pending migrations. A login or privilege failure becomes one line
 *  saying what to fix (infra/postgres-errors.ts). */
export async function prepareDatabase(config: Config): Promise<{ created: boolean; applied: string[] }> {
  try {
    const created = await ensureDatabase(config.databaseUrl);
    const db = createDb(config.databaseUrl, 1);
    try {
      return { created, applied: await migrate(db) };
    } finally {
      await db.$pool.end();
    }
  } catch (err) {
    const line = postgresProblem(err, config.databaseUrl);
    throw line ? new Error(line, { cause: err }) : err;
  }
}
