import type { JobsOptions, Queue } from 'bullmq';
import type { Config } from '../config.ts';
import type { QueueRegistry } from '../queues/registry.ts';

// The sandbox carrier provisions a number after a short delay (SANDBOX_PROVISIONING_MS, scaled by
// SANDBOX_TIME_SCALE); a delayed BullMQ job survives restarts. The job id is per number, so enqueuing twice
// (the gateway after commit, the workers' sweep of stale rows) provisions once.

export const PROVISIONING_QUEUE = 'number-provisioning';
export const SANDBOX_PROVISIONING_MS = 2000;

export interface ProvisioningJob { phoneId: number }

export const provisioningQueue = (queues: QueueRegistry): Queue<ProvisioningJob> => queues.get<ProvisioningJob>(PROVISIONING_QUEUE);

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

export async function enqueueProvisioning(queues: QueueRegistry, config: Pick<Config, 'sandboxTimeScale'>, phoneId: number): Promise<void> {
  await provisioningQueue(queues).add('provision', { phoneId }, provisioningJobOptions(phoneId, config));
}
