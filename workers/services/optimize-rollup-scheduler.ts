import { rollupQueue, ROLLUP_SCHEDULER_ID } from '../../shared/optimize/rollup.ts';
import type { Service } from '../processor.ts';

// Keeps the rollup's repeating job scheduled every OPTIMIZE_ROLLUP_MS (an upsert: every replica may do it, there is
// still one scheduler).
export const optimizeRollupScheduler: Service = {
  name: 'optimize-rollup-scheduler',
  async start(deps) {
    await rollupQueue(deps.queues).upsertJobScheduler(ROLLUP_SCHEDULER_ID, { every: deps.config.optimize.rollupMs },
      { name: 'rollup', opts: { removeOnComplete: true, removeOnFail: 100 } });
    return { stop: async () => undefined };
  },
};
