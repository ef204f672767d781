import type { Config } from '../shared/config.ts';
import { createDb, ensureDatabase } from '../shared/db.ts';
import { migrate } from './migrate.ts';

/** Creates the database when missing and applies pending migrations. */
export async function prepareDatabase(config: Config): Promise<{ created: boolean; applied: string[] }> {
  const created = await ensureDatabase(config.databaseUrl);
  const db = createDb(config.databaseUrl, 1);
  try {
    return { created, applied: await migrate(db) };
  } finally {
    await db.$pool.end();
  }
}
