import { advanceRemediation, isTerminal } from '../../shared/caller-trust/reputation/remediation.ts';
import { enqueueRemediationPoll, REMEDIATION_QUEUE, type RemediationJob } from '../../shared/caller-trust/reputation/queue.ts';
import { reputationProvider } from '../../shared/caller-trust/reputation/settings.ts';
import type { Processor } from '../processor.ts';

// Moves a remediation case along: files it with the provider if not yet filed, applies the provider's answer, and
// polls again after the provider's poll interval (the sandbox's, scaled by SANDBOX_TIME_SCALE) until the case is
// resolved or rejected. Each poll is its own delayed job (id per case and poll number), so a restart loses none.
export const reputationRemediation: Processor<RemediationJob> = {
  queue: REMEDIATION_QUEUE,
  concurrency: 10,
  async process(job, deps) {
    const provider = reputationProvider(deps.db, deps.config.sandboxTimeScale);
    const row = await advanceRemediation(deps.db, provider, job.data.caseId);
    if (!row) return 'missing';
    if (!isTerminal(row.status)) {
      await enqueueRemediationPoll(deps.redis, deps.config.redisPrefix, row.id, job.data.poll + 1, provider.remediationPollMs);
    }
    return row.status;
  },
};
