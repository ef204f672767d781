import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config.ts';

// The sandbox carrier provisions a number after a short delay (SANDBOX_PROVISIONING_MS, scaled by
// SANDBOX_TIME_SCALE); a delayed BullMQ job survives restarts. The job id is per number, so enqueuing twice
// (the gateway after commit, the workers' sweep of stale rows) provisions once.

export const PROVISIONING_QUEUE = 'number-provisioning';
export const SANDBOX_PROVISIONING_MS = 2000;

export interface ProvisioningJob { phoneId: number }

const queues = new WeakMap<Redis, Map<string, Queue>>();

/** One Queue per connection and prefix, created on first use. */
export function provisioningQueue(redis: Redis, prefix: string): Queue<ProvisioningJob> {
  let byPrefix = queues.get(redis);
  if (!byPrefix) queues.set(redis, (byPrefix = new Map()));
  let q = byPrefix.get(prefix);
  if (!q) byPrefix.set(prefix, (q = new Queue(PROVISIONING_QUEUE, { connection: redis, prefix })));
  return q as Queue<ProvisioningJob>;
}

export function provisioningJobOptions(phoneId: number, config: Pick<Config, 'sandboxTimeScale'>): JobsOptions {
  return {
    jobId: `number-${phoneId}`,
    delay: Math.round(SANDBOX_PROVISIONING_MS * config.sandboxTimeScale),
    attempts: 8,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: true,
    removeOnFail: true,
  };
}

export async function enqueueProvisioning(redis: Redis, config: Pick<Config, 'redisPrefix' | 'sandboxTimeScale'>, phoneId: number): Promise<void> {
  await provisioningQueue(redis, config.redisPrefix).add('provision', { phoneId }, provisioningJobOptions(phoneId, config));
}
