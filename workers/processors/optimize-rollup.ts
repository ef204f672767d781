import { evaluateTests } from '../../shared/optimize/completion.ts';
import { rollupOnce, ROLLUP_QUEUE } from '../../shared/optimize/rollup.ts';
import type { Processor } from '../processor.ts';

// Every OPTIMIZE_ROLLUP_MS: the collector's Redis counters into PostgreSQL, exactly once (shared/optimize/rollup.ts),
// then the completion rule for the running tests that got new counts.
export const optimizeRollup: Processor = {
  queue: ROLLUP_QUEUE,
  concurrency: 1,
  // A killed worker's job comes back soon; the batch it held is resumed by whichever run comes next.
  workerOptions: { lockDuration: 15_000, stalledInterval: 5_000 },
  async process(_job, deps) {
    const out = await rollupOnce(deps.db, deps.redis, deps.key, deps.config.faults.optimizeRollup);
    const completed = out.applied ? await evaluateTests(deps.db, out.testIds) : 0;
    return { batch: out.batchId, applied: out.applied, impressions: out.impressions, conversions: out.conversions, completed };
  },
};
