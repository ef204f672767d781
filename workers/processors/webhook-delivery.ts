import { attemptDelivery } from '../../shared/webhooks/deliver.ts';
import { DELIVERY_QUEUE, type DeliveryJob } from '../../shared/webhooks/delivery-jobs.ts';
import type { Processor } from '../processor.ts';

// One webhook delivery attempt per job run. A thrown error makes BullMQ retry with the job's exponential backoff
// (see shared/webhooks/delivery-jobs.ts); the last failure leaves the job failed. Every attempt is logged first.

export const webhookDelivery: Processor<DeliveryJob> = {
  queue: DELIVERY_QUEUE,
  concurrency: (config) => config.webhookConcurrency,
  // A delivery runs at most the 10 s timeout and its lock is renewed while it runs; a shorter lock than BullMQ's 30 s
  // default brings a crashed process's in-flight deliveries back within about 20 s instead of up to a minute.
  workerOptions: { lockDuration: 15_000, stalledInterval: 5_000 },
  async process(job, deps) {
    const before = job.data.attemptsBefore ?? 0;
    const r = await attemptDelivery(deps.webhooks, job.data, before + job.attemptsMade + 1, before + (job.opts.attempts ?? 1));
    if (r.kind === 'retry' || r.kind === 'failed') throw new Error(`delivery ${job.data.webhookId}: ${r.error}`);
    return r;
  },
};
