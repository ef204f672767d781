import type { JobsOptions, Queue } from 'bullmq';
import type { QueueRegistry } from '../../queues/registry.ts';

// The two reputation queues: the background refresh (a repeatable 'scan' job that queues one 'check' job per stale
// number; the workers' limiter paces the checks towards the provider) and the remediation progression (one job per
// case, id 'remediation-<case id>', moved back to delayed between polls: one poller per case at a time).

export const REFRESH_QUEUE = 'reputation-refresh';
export const REMEDIATION_QUEUE = 'reputation-remediation';
export const SCAN_SCHEDULER_ID = 'reputation-scan';

export type RefreshJob = { kind: 'scan' } | { kind: 'check'; phoneId: number; window: number };
export interface RemediationJob { caseId: string }

export const refreshQueue = (queues: QueueRegistry): Queue<RefreshJob> => queues.get<RefreshJob>(REFRESH_QUEUE);
export const remediationQueue = (queues: QueueRegistry): Queue<RemediationJob> => queues.get<RemediationJob>(REMEDIATION_QUEUE);

/** A check job per number and freshness window: queuing the same number twice in a window queues it once. */
export function checkJobOptions(phoneId: number, window: number): JobsOptions {
  return {
    jobId: `check-${phoneId}-${window}`,
    attempts: 8,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: true,
    removeOnFail: { age: 86_400 },
  };
}

export const remediationJobId = (caseId: string) => `remediation-${caseId}`;

/** Queues the case's poller (a no-op while it exists). */
export async function enqueueRemediationPoll(queues: QueueRegistry, caseId: string, delayMs: number): Promise<void> {
  await remediationQueue(queues).add('advance', { caseId }, {
    jobId: remediationJobId(caseId), delay: Math.round(delayMs),
    attempts: 10, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: true, removeOnFail: { age: 7 * 86_400 },
  });
}
