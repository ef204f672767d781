import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';

// The two reputation queues: the background refresh (a repeatable 'scan' job that queues one 'check' job per stale
// number; the workers' limiter paces the checks towards the provider) and the remediation progression (one delayed
// 'advance' job per case and poll).

export const REFRESH_QUEUE = 'reputation-refresh';
export const REMEDIATION_QUEUE = 'reputation-remediation';
export const SCAN_SCHEDULER_ID = 'reputation-scan';

export type RefreshJob = { kind: 'scan' } | { kind: 'check'; phoneId: number; window: number };
export interface RemediationJob { caseId: string; poll: number }

const queues = new WeakMap<Redis, Map<string, Queue>>();

function queue<T>(redis: Redis, prefix: string, name: string): Queue<T> {
  let byName = queues.get(redis);
  if (!byName) queues.set(redis, (byName = new Map()));
  let q = byName.get(`${prefix}|${name}`);
  if (!q) byName.set(`${prefix}|${name}`, (q = new Queue(name, { connection: redis, prefix })));
  return q as Queue<T>;
}

export const refreshQueue = (redis: Redis, prefix: string) => queue<RefreshJob>(redis, prefix, REFRESH_QUEUE);
export const remediationQueue = (redis: Redis, prefix: string) => queue<RemediationJob>(redis, prefix, REMEDIATION_QUEUE);

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

export async function enqueueRemediationPoll(redis: Redis, prefix: string, caseId: string, poll: number, delayMs: number): Promise<void> {
  await remediationQueue(redis, prefix).add('advance', { caseId, poll }, {
    jobId: `remediation-${caseId}-${poll}`, delay: Math.round(delayMs),
    attempts: 10, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: true, removeOnFail: { age: 7 * 86_400 },
  });
}
