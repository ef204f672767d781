import { refreshQueue, SCAN_SCHEDULER_ID } from '../../shared/caller-trust/reputation/queue.ts';
import type { Service } from '../processor.ts';

// Keeps the background reputation refresh's repeatable scan scheduled (every REPUTATION_SCAN_MS). Every workers
// process upserts the same scheduler id, so there is one schedule however many processes run. The first scan comes
// one period after the start, not at once (a restart does not add to start-up load).
export const reputationRefreshSchedule: Service = {
  name: 'reputation-refresh-schedule',
  async start(deps) {
    const { scanMs } = deps.config.reputation;
    await refreshQueue(deps.queues).upsertJobScheduler(SCAN_SCHEDULER_ID, { every: scanMs, startDate: Date.now() + scanMs },
      { name: 'scan', data: { kind: 'scan' }, opts: { removeOnComplete: true, removeOnFail: { age: 3600 } } });
    return { stop: async () => undefined };
  },
};
