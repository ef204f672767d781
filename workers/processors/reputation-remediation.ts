import { DelayedError } from 'bullmq';
import { advanceRemediation, isRemediationClosed } from '../../shared/caller-trust/reputation/remediation.ts';
import { REMEDIATION_QUEUE, type RemediationJob } from '../../shared/caller-trust/reputation/queue.ts';
import type { Processor } from '../processor.ts';

// Moves a remediation case along: files it with the provider if not yet filed, applies the provider's answer, and
// polls again after the provider's poll interval (the sandbox's, scaled by SANDBOX_TIME_SCALE) until the case is
// resolved or rejected. One job per case, moved back to delayed between polls, so one poller per case at a time;
// a job lost from Redis is re-queued by the background scan (sweepRemediations).
export const reputationRemediation: Processor<RemediationJob> = {
  queue: REMEDIATION_QUEUE,
  concurrency: 10,
  async process(job, deps, token) {
    const provider = deps.reputation;
    const row = await advanceRemediation(deps.db, provider, job.data.caseId);
    if (!row) return 'missing';
    if (isRemediationClosed(row.status)) return row.status;
    await job.moveToDelayed(Date.now() + provider.remediationPollMs, token);
    throw new DelayedError();
  },
};
