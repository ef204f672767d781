import type { Db } from '../db.ts';

/** Rows deleted per statement, so a large backlog never holds long locks or one huge transaction. */
export const RETENTION_BATCH = 5000;

export interface Pruned { events: number; attempts: number }

/** Deletes what is older than `days`: events already relayed (a delivery job carries its own body, so nothing
 *  reads them after the relay) and webhook delivery attempts (the longest delivery lasts under a day). Events not
 *  yet relayed are kept whatever their age. Runs batch after batch until nothing old is left. */
export async function pruneOldEvents(db: Db, days: number, batch = RETENTION_BATCH): Promise<Pruned> {
  const out: Pruned = { events: 0, attempts: 0 };
  for (;;) {
    const r = await db.result(
      `DELETE FROM events WHERE id IN (
         SELECT id FROM events WHERE relayed_at IS NOT NULL AND occurred_at < now() - make_interval(days => $1)
          ORDER BY occurred_at LIMIT $2)`, [days, batch]);
    out.events += r.rowCount;
    if (r.rowCount < batch) break;
  }
  for (;;) {
    const r = await db.result(
      `DELETE FROM webhook_delivery_attempts WHERE id IN (
         SELECT id FROM webhook_delivery_attempts WHERE attempted_at < now() - make_interval(days => $1)
          ORDER BY attempted_at LIMIT $2)`, [days, batch]);
    out.attempts += r.rowCount;
    if (r.rowCount < batch) break;
  }
  return out;
}
