import { NumberBusyError, ReputationRefresher } from '../../shared/caller-trust/reputation/refresh.ts';
import { sweepRemediations } from '../../shared/caller-trust/reputation/remediation.ts';
import { checkJobOptions, REFRESH_QUEUE, refreshQueue, type RefreshJob } from '../../shared/caller-trust/reputation/queue.ts';
import type { Processor } from '../processor.ts';

// The background reputation refresh. A repeatable 'scan' job (every REPUTATION_SCAN_MS, scheduled by
// services/reputation-refresh-schedule.ts) picks up to REPUTATION_BATCH_SIZE stale numbers — enrolled
// (phone_numbers.reputation_enrolled_at set), ACTIVE, with evidence older than REPUTATION_FRESHNESS_SECONDS or
// missing for some carrier — oldest evidence first, and queues one 'check' job per number (job id per number and
// freshness window, so a number is queued once per window however often the scan runs). The queue's limiter paces
// every job towards the provider (REPUTATION_RATE_PER_SECOND across all workers processes); a check that meets a
// number being refreshed (its lock) fails and is retried with back-off. Checks are the platform's cost: nothing is
// charged to the organization. A process killed mid-batch leaves its jobs to be retried: a check whose lookup had
// completed finds it (lookup ref) and stops; only lookups in flight at the kill are asked again. The scan also
// re-queues the poller of a remediation case whose job was lost. The settings are deps.config.reputation.

export const reputationRefresh: Processor<RefreshJob> = {
  queue: REFRESH_QUEUE,
  concurrency: (config) => config.reputation.concurrency,
  workerOptions: (config) => ({
    limiter: { max: config.reputation.ratePerSecond, duration: 1000 },
    // A killed process's checks come back within seconds (their lookups are recorded, so a retry is cheap).
    lockDuration: 10_000, stalledInterval: 5_000, maxStalledCount: 3,
  }),
  async process(job, deps) {
    const data = job.data;
    const settings = deps.config.reputation;
    if (data.kind === 'scan') {
      const now = Date.now();
      const window = Math.floor(now / settings.freshnessMs);
      const stale = await deps.db.any<{ id: number }>(
        `SELECT p.id::int AS id FROM phone_numbers p
           LEFT JOIN LATERAL (SELECT count(*) AS n, min(r.checked_at) AS oldest FROM number_reputation r WHERE r.phone_id = p.id) e ON true
          WHERE p.status = 'ACTIVE' AND p.reputation_enrolled_at IS NOT NULL
            AND (e.n < 3 OR e.oldest < now() - make_interval(secs => $1))
          ORDER BY e.oldest NULLS FIRST, p.id LIMIT $2`,
        [settings.freshnessMs / 1000, settings.batchSize]);
      if (stale.length) {
        await refreshQueue(deps.queues).addBulk(stale.map(({ id }) => ({
          name: 'check', data: { kind: 'check' as const, phoneId: id, window }, opts: checkJobOptions(id, window),
        })));
      }
      // Remediation cases whose poller was lost: quiet for ten poll intervals (at least a second) and no job.
      const quietMs = Math.max(1000, 10 * deps.reputation.remediationPollMs);
      const requeued = await sweepRemediations(deps.db, deps.queues, quietMs);
      return { queued: stale.length, remediations_requeued: requeued };
    }
    const refresher = new ReputationRefresher({
      db: deps.db, redis: deps.redis, key: deps.key, provider: deps.reputation,
    });
    try {
      return await refresher.background(data.phoneId, data.window, settings.freshnessMs, String(job.id));
    } catch (err) {
      if (err instanceof NumberBusyError) deps.log.debug({ phoneId: data.phoneId }, 'number busy; retrying later');
      throw err;
    }
  },
};
