import type { Static } from '@sinclair/typebox';
import type { Db } from '../db.ts';
import { computeResults, type OptimizeResults } from './results.ts';
import type { ResultsResponse } from './schemas.ts';
import { completeTest, getTest, type TestWithVariants } from './tests.ts';

// The completion rule: a running test whose results decide `winner` or `no_difference` completes (with
// winner_variant_id for a winner), firing optimize.test.winner or optimize.test.completed. The rollup applies it to
// every test it counted for; reading the results applies it too.

/** The results of a test from its daily counts (the rolled-up, exact counts in PostgreSQL). */
export async function testResults(db: Db, tw: TestWithVariants): Promise<OptimizeResults> {
  const daily = await db.any(
    `SELECT variant_id, to_char(day, 'YYYY-MM-DD') AS day, impressions, conversions, revenue_cents
       FROM optimize_daily_counts WHERE test_id = $1 ORDER BY day, variant_id`, [tw.test.id]);
  return computeResults(tw.variants.map((v) => ({ id: v.id, name: v.name, is_control: v.is_control, weight: Number(v.weight) })), daily);
}

/** Applies the rule to a running test; returns the results it decided on. */
export async function evaluateTest(db: Db, tw: TestWithVariants): Promise<{ results: OptimizeResults; completed: boolean }> {
  const results = await testResults(db, tw);
  let completed = false;
  if (tw.test.status === 'running' && (results.decision.reason === 'winner' || results.decision.reason === 'no_difference')) {
    completed = await completeTest(db, tw.test.id, results.decision.reason === 'winner' ? results.decision.winner_variant_id : null);
  }
  return { results, completed };
}

/** GET .../results: the results the rule decided on, with the status it left the test in. */
export const resultsView = (tw: TestWithVariants, { results, completed }: { results: OptimizeResults; completed: boolean }): Static<typeof ResultsResponse> =>
  ({ test_id: tw.test.id, status: completed ? 'completed' : tw.test.status, ...results });

/** The rollup's pass over the tests it counted for. */
export async function evaluateTests(db: Db, testIds: string[]): Promise<number> {
  if (!testIds.length) return 0;
  const rows = await db.any(`SELECT id, organization_id FROM optimize_tests WHERE id = ANY($1::uuid[]) AND status = 'running'`, [testIds]);
  let n = 0;
  for (const r of rows) if ((await evaluateTest(db, await getTest(db, r.organization_id, r.id))).completed) n++;
  return n;
}
