import type { JobsOptions } from 'bullmq';

// The delivery queue and its retry schedule. One BullMQ job per (event, subscription); its id is the delivery id
// (the webhook-id header), so a relay re-run after a crash cannot enqueue the same delivery twice.

export const DELIVERY_QUEUE = 'webhook-delivery';

/** Attempts per delivery (the first plus 13 retries). */
export const MAX_ATTEMPTS = 14;
/** Delay before the first retry; each later retry waits twice as long as the one before (BullMQ exponential). */
export const BASE_RETRY_DELAY_MS = 10_000;
/** How long a delivery id stays deduplicated after it was enqueued (covers a relay re-run after a crash). */
export const DEDUPE_TTL_MS = 3600_000;

export interface DeliveryJob {
  /** Delivery id: the webhook-id header, stable across retries. */
  webhookId: string;
  subscriptionId: string;
  organizationId: string;
  eventId: string;
  eventType: string;
  /** The exact JSON body, built once by the relay and signed on every attempt. */
  body: string;
  /** Attempts made before this job (a delivery re-armed after Redis lost its state): its attempts continue their
   *  numbering and schedule. */
  attemptsBefore?: number;
}

const baseDelay = (scale: number) => Math.max(1, Math.round(BASE_RETRY_DELAY_MS * scale));

/** Delay after failed attempt n (1-based): base x 2^(n-1). Unscaled: 10 s, 20 s, 40 s, ... 40,960 s; the 14th and
 *  last attempt happens 81,910 s (about 22 h 45 min) after the first. */
export const retryDelayMs = (attempt: number, scale: number) => baseDelay(scale) * 2 ** (attempt - 1);

/** When attempt n (1-based) happens, counted from the first attempt, in ms. */
export const attemptOffsetMs = (attempt: number, scale: number) => baseDelay(scale) * (2 ** (attempt - 1) - 1);

/** attemptsBefore: attempts made by an earlier job of the same delivery (see DeliveryJob.attemptsBefore). */
export function deliveryJobOptions(webhookId: string, retryScale: number, attemptsBefore = 0): JobsOptions {
  return {
    jobId: webhookId,
    deduplication: { id: webhookId, ttl: DEDUPE_TTL_MS },
    attempts: MAX_ATTEMPTS - attemptsBefore,
    // BullMQ waits delay x 2^(n-1) after this job's n-th failure, i.e. retryDelayMs(attemptsBefore + n).
    backoff: { type: 'exponential', delay: baseDelay(retryScale) * 2 ** attemptsBefore },
    // The attempt log in PostgreSQL is the record; Redis keeps only a short tail for inspection.
    removeOnComplete: { count: 1000 },
    removeOnFail: { age: 7 * 86400, count: 10_000 },
  };
}
