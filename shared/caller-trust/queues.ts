import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';

// The caller-trust providers' delayed jobs (sandbox vetting, DIR review and rollout): one Queue per connection,
// prefix and name, created on first use.
const queues = new WeakMap<Redis, Map<string, Queue>>();

export function callerTrustQueue<T>(redis: Redis, prefix: string, name: string): Queue<T> {
  let byKey = queues.get(redis);
  if (!byKey) queues.set(redis, (byKey = new Map()));
  const key = `${prefix}\u0000${name}`;
  let q = byKey.get(key);
  if (!q) byKey.set(key, (q = new Queue(name, { connection: redis, prefix })));
  return q as Queue<T>;
}

/** Options of a provider's delayed job: one job per id, retried with back-off, removed once done. */
export const delayedJob = (jobId: string, delayMs: number) => ({
  jobId, delay: Math.max(0, Math.round(delayMs)), attempts: 8, backoff: { type: 'exponential' as const, delay: 1000 },
  removeOnComplete: true, removeOnFail: true,
});
