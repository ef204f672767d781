import type { Db } from '../db.ts';

// Monthly partitions of calls, sms_messages, events and webhook_delivery_attempts (migration 040 made them; the
// table partitioned_tables says how each is keyed). The workers keep PARTITION_MONTHS_AHEAD months ready ahead of
// time so rows never wait for a partition; the DEFAULT partition only catches what no month covers (see
// docs/operations.md "Partitions"). The SQL function ol_ensure_month_partition holds the rule for making one.

/** Months created ahead of the current one (the migration made the same number). */
export const PARTITION_MONTHS_AHEAD = 3;

export interface PartitionInfo {
  table: string;
  partition: string;
  /** Every row of the partition has a key below this instant (null: the DEFAULT partition, unbounded). */
  upper: Date | null;
}

/** Creates the partitions of the current UTC month of `at` and the `ahead` months after it, for every partitioned
 *  table, where missing. Idempotent; returns the names created now. */
export async function ensureMonthPartitions(db: Db, at = new Date(), ahead = PARTITION_MONTHS_AHEAD): Promise<string[]> {
  const tables = (await db.any<{ name: string }>('SELECT name FROM partitioned_tables ORDER BY name')).map((r) => r.name);
  const created: string[] = [];
  for (const table of tables) {
    for (let i = 0; i <= ahead; i++) {
      const month = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + i, 1));
      // Its own transaction each: a partition that moves rows out of DEFAULT commits on its own.
      const r = await db.tx('ensure-partition', (tx) => tx.one<{ name: string | null }>(
        'SELECT ol_ensure_month_partition($1, $2) AS name', [table, month]));
      if (r.name) created.push(r.name);
    }
  }
  return created;
}

/** The partitions of every partitioned table (or of one), with the bound their keys stay under. For id-keyed
 *  tables the bound is the UUIDv7 time of the upper id bound. */
export async function listPartitions(db: Db, table?: string): Promise<PartitionInfo[]> {
  return db.any<PartitionInfo>(
    `SELECT t.name AS table, c.relname AS partition,
            CASE WHEN b.expr = 'DEFAULT' THEN NULL
                 WHEN t.key_kind = 'time' THEN b.hi::timestamptz
                 ELSE to_timestamp((('x' || substr(replace(b.hi, '-', ''), 1, 12))::bit(48)::bigint) / 1000.0) END AS upper
       FROM partitioned_tables t
       JOIN pg_inherits i ON i.inhparent = to_regclass(t.name)
       JOIN pg_class c ON c.oid = i.inhrelid
       CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS expr) e
       CROSS JOIN LATERAL (SELECT e.expr, (regexp_match(e.expr, 'TO \\(''([^'']+)''\\)'))[1] AS hi) b
      WHERE $1::text IS NULL OR t.name = $1
      ORDER BY t.name, upper NULLS LAST`, [table ?? null]);
}

/** Drops the partitions of `table` whose every row is older than `cutoff` (the partition's upper bound is at or
 *  before it). Events partitions holding an event not yet relayed are kept (the relay still owes it). Returns the
 *  names dropped. A partition whose lock is not granted within a few seconds waits for the next sweep. */
export async function dropPartitionsBefore(db: Db, table: string, cutoff: Date): Promise<string[]> {
  const dropped: string[] = [];
  for (const p of await listPartitions(db, table)) {
    if (!p.upper || p.upper.getTime() > cutoff.getTime()) continue;
    const done = await db.tx('drop-partition', async (tx) => {
      await tx.none(`SET LOCAL lock_timeout = '5s'`);
      if (table === 'events') {
        const pending = await tx.one<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM $1:name WHERE relayed_at IS NULL) AS any', [p.partition]);
        if (pending.any) return false;
      }
      await tx.none('DROP TABLE $1:name', [p.partition]);
      return true;
    }).catch((err: { code?: string }) => {
      if (err.code === '55P03') return false; // lock_not_available: busy now, the next sweep tries again
      throw err;
    });
    if (done) dropped.push(p.partition);
  }
  return dropped;
}
