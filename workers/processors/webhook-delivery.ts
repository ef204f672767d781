import { loadConfig } from '../../shared/config.ts';
import { AttemptLog } from '../../shared/webhooks/attempt-log.ts';
import { attemptDelivery, SubscriptionCache, type DeliveryContext } from '../../shared/webhooks/deliver.ts';
import { DELIVERY_QUEUE, type DeliveryJob } from '../../shared/webhooks/delivery-jobs.ts';
import { WebhookPoster } from '../../shared/webhooks/http-post.ts';
import type { Processor, WorkerDeps } from '../processor.ts';

// One webhook delivery attempt per job run. A thrown error makes BullMQ retry with the job's exponential backoff
// (see shared/webhooks/delivery-jobs.ts); the last failure leaves the job failed. Every attempt is logged first.

const contexts = new WeakMap<WorkerDeps, DeliveryContext>();
function context(deps: WorkerDeps): DeliveryContext {
  let c = contexts.get(deps);
  if (!c) {
    c = {
      db: deps.db,
      poster: new WebhookPoster({ timeoutMs: deps.config.webhookTimeoutMs, allowInsecure: deps.config.webhookAllowInsecure, maxSockets: 256 }),
      attempts: new AttemptLog(deps.db),
      subscriptions: new SubscriptionCache(deps.db),
      retryScale: deps.config.webhookRetryScale,
    };
    contexts.set(deps, c);
  }
  return c;
}

export const webhookDelivery: Processor<DeliveryJob> = {
  queue: DELIVERY_QUEUE,
  // Read when the workers process creates the queue's Worker.
  get concurrency() { return loadConfig().webhookConcurrency; },
  // A delivery runs at most the 10 s timeout and its lock is renewed while it runs; a shorter lock than BullMQ's 30 s
  // default brings a crashed process's in-flight deliveries back within about 20 s instead of up to a minute.
  workerOptions: { lockDuration: 15_000, stalledInterval: 5_000 },
  async process(job, deps) {
    const r = await attemptDelivery(context(deps), job.data, job.attemptsMade + 1, job.opts.attempts ?? 1);
    if (r.kind === 'retry' || r.kind === 'failed') throw new Error(`delivery ${job.data.webhookId}: ${r.error}`);
    return r;
  },
};
