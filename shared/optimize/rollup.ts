import type { Queue } from 'bullmq';
import type { QueueRegistry } from '../queues/registry.ts';
import type { Redis } from 'ioredis';
import type { Db } from '../db.ts';
import { uuidv7 } from '../ids.ts';
import type { Keyer } from '../redis.ts';
import { defineScript, script } from '../redis-scripts.ts';
import { liveKeys } from './collector.ts';

// The rollup moves the collector's Redis counters into PostgreSQL, exactly once, across crashes:
//   1. claim: the live keys are renamed to batch keys with a new batch id in one Lua step (or the batch a crashed run
//      left behind is resumed, same id);
//   2. apply: one PostgreSQL transaction inserts the batch id into optimize_rollup_batches and adds the batch's
//      assignments, impressions and conversions; a batch id already there means it was applied: skip;
//   3. finish: the batch keys are deleted.
// A crash before 2 commits leaves the batch in Redis (applied by the next run); a crash between 2 and 3 leaves an
// applied batch in Redis (recognised by its id and dropped). Nothing is lost or counted twice.

export const ROLLUP_QUEUE = 'optimize-rollup';
export const ROLLUP_SCHEDULER_ID = 'optimize-rollup-every';

function batchKeys(key: Keyer) {
  return { imp: key('opt', 'batch', 'imp'), asg: key('opt', 'batch', 'asg'), cnv: key('opt', 'batch', 'cnv'), id: key('opt', 'batch', 'id') };
}

export interface RollupOutcome { batchId: string | null; applied: boolean; impressions: number; assignments: number; conversions: number; testIds: string[] }


async function readHash(redis: Redis, k: string): Promise<[string, string][]> {
  const out: [string, string][] = [];
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(k, cursor, 'COUNT', 5000);
    cursor = next;
    for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  } while (cursor !== '0');
  return out;
}

/** `fault` (OPTIMIZE_ROLLUP_FAULT, crash tests only): SIGKILL this process after reading a batch, or after committing it. */
export async function rollupOnce(db: Db, redis: Redis, key: Keyer, fault: 'kill-after-read' | 'kill-after-commit' | null = null): Promise<RollupOutcome> {
  defineScript(redis, 'olOptimizeRollupClaim', new URL('./rollup-claim.lua', import.meta.url), 7);
  defineScript(redis, 'olOptimizeRollupFinish', new URL('./rollup-finish.lua', import.meta.url), 4);
  const live = liveKeys(key);
  const batch = batchKeys(key);
  const claimed = await script(redis, 'olOptimizeRollupClaim')(live.imp, live.asg, live.cnv, batch.imp, batch.asg, batch.cnv, batch.id, uuidv7());
  if (!claimed) return { batchId: null, applied: false, impressions: 0, assignments: 0, conversions: 0, testIds: [] };
  const batchId = String(claimed);

  const [imp, asg, cnv] = await Promise.all([readHash(redis, batch.imp), readHash(redis, batch.asg), readHash(redis, batch.cnv)]);
  if (fault === 'kill-after-read') process.kill(process.pid, 'SIGKILL');

  const impressions = { test: [] as string[], variant: [] as string[], day: [] as string[], n: [] as number[] };
  let impressionTotal = 0;
  for (const [field, n] of imp) {
    const [test, variant, day] = field.split('|');
    impressions.test.push(test); impressions.variant.push(variant); impressions.day.push(day); impressions.n.push(Number(n));
    impressionTotal += Number(n);
  }
  const assignments = { test: [] as string[], visitor: [] as string[], variant: [] as string[], at: [] as string[] };
  for (const [field, value] of asg) {
    const [test, visitor] = field.split('|');
    const [variant, ms] = value.split('|');
    assignments.test.push(test); assignments.visitor.push(visitor); assignments.variant.push(variant);
    assignments.at.push(new Date(Number(ms)).toISOString());
  }
  const conversions = { id: [] as string[], test: [] as string[], visitor: [] as string[], variant: [] as string[], at: [] as string[], goal: [] as string[] };
  for (const [field, value] of cnv) {
    const [test, visitor] = field.split('|');
    const [variant, ms, goal] = value.split('|');
    conversions.id.push(uuidv7(Number(ms))); conversions.test.push(test); conversions.visitor.push(visitor);
    conversions.variant.push(variant); conversions.at.push(new Date(Number(ms)).toISOString()); conversions.goal.push(goal);
  }

  const applied = await db.tx(async (tx) => {
    const fresh = await tx.oneOrNone(
      `INSERT INTO optimize_rollup_batches (id, impressions, conversions) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING id`,
      [batchId, impressionTotal, cnv.length]);
    if (!fresh) return false;
    if (assignments.test.length) {
      await tx.none(
        `INSERT INTO optimize_assignments (test_id, visitor_id, variant_id, assigned_at)
         SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::timestamptz[]) ON CONFLICT DO NOTHING`,
        [assignments.test, assignments.visitor, assignments.variant, assignments.at]);
    }
    if (impressions.test.length) {
      await tx.none(
        `INSERT INTO optimize_daily_counts (test_id, variant_id, day, impressions)
         SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::date[], $4::bigint[])
         ON CONFLICT (test_id, variant_id, day) DO UPDATE SET impressions = optimize_daily_counts.impressions + EXCLUDED.impressions`,
        [impressions.test, impressions.variant, impressions.day, impressions.n]);
    }
    if (conversions.test.length) {
      // A visitor's first conversion of a test is the counted one (an API conversion may have come first): a tag goal
      // of a visitor who already converted is kept in the list, not counted.
      await tx.none(
        `WITH x AS (
           SELECT x.*, t.organization_id
             FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::timestamptz[], $6::text[])
                  AS x(id, test_id, visitor_id, variant_id, at, goal)
             JOIN optimize_tests t ON t.id = x.test_id),
         c AS (
           INSERT INTO optimize_conversions (id, organization_id, test_id, variant_id, visitor_id, source, goal_type, counted, created_at)
           SELECT id, organization_id, test_id, variant_id, visitor_id, 'tag', goal, true, at FROM x
           ON CONFLICT (test_id, visitor_id) WHERE counted DO NOTHING
           RETURNING id, test_id, variant_id, created_at),
         later AS (
           INSERT INTO optimize_conversions (id, organization_id, test_id, variant_id, visitor_id, source, goal_type, counted, created_at)
           SELECT id, organization_id, test_id, variant_id, visitor_id, 'tag', goal, false, at FROM x
            WHERE id NOT IN (SELECT id FROM c)
           ON CONFLICT (id) DO NOTHING)
         INSERT INTO optimize_daily_counts (test_id, variant_id, day, conversions)
         SELECT test_id, variant_id, (created_at AT TIME ZONE 'UTC')::date, count(*) FROM c GROUP BY 1, 2, 3
         ON CONFLICT (test_id, variant_id, day) DO UPDATE SET conversions = optimize_daily_counts.conversions + EXCLUDED.conversions`,
        [conversions.id, conversions.test, conversions.visitor, conversions.variant, conversions.at, conversions.goal]);
    }
    return true;
  });
  if (fault === 'kill-after-commit') process.kill(process.pid, 'SIGKILL');
  await script(redis, 'olOptimizeRollupFinish')(batch.imp, batch.asg, batch.cnv, batch.id, batchId);
  const testIds = [...new Set([...impressions.test, ...conversions.test])];
  return { batchId, applied, impressions: impressionTotal, assignments: assignments.test.length, conversions: cnv.length, testIds };
}

/** The rollup's queue; the workers' scheduler service adds one repeating job to it (one at a time). */
export const rollupQueue = (queues: QueueRegistry): Queue => queues.get(ROLLUP_QUEUE);
