// Every webhook delivery attempt's outcome, in the workers where it is attempted: one counter increment and one
// info log line (delivery id = webhook-id, the same on every retry of one delivery).
import type { Logger } from '../log.ts';
import type { DeliveryJob } from '../webhooks/delivery-jobs.ts';
import { processCounter } from './process-metrics.ts';

/** succeeded (2xx), retrying (failed, another attempt is scheduled), failed (failed for good: the last attempt, or
 *  410 Gone), skipped (not attempted: the subscription was deleted or disabled). */
export type DeliveryOutcomeLabel = 'succeeded' | 'retrying' | 'failed' | 'skipped';

export const webhookDeliveries = processCounter('openline_webhook_deliveries_total',
  'Webhook delivery attempts by outcome (succeeded, retrying, failed, skipped).', ['outcome']);

export interface DeliveryReport {
  outcome: DeliveryOutcomeLabel;
  attempt: number;
  /** The receiver's HTTP status; null when none arrived (timeout, refused) or nothing was sent. */
  status: number | null;
  ms: number;
  /** Why it was skipped or failed. */
  error?: string | null;
}

export type DeliveryReporter = (d: DeliveryJob, r: DeliveryReport) => void;

export function deliveryReporter(log?: Logger): DeliveryReporter {
  const out = log?.child({ event: 'webhook_delivery' });
  return (d, r) => {
    webhookDeliveries.inc({ outcome: r.outcome });
    out?.info({ webhook_id: d.webhookId, subscription_id: d.subscriptionId, event_type: d.eventType, status: r.status,
      attempt: r.attempt, outcome: r.outcome, ms: r.ms, ...(r.error ? { error: r.error } : {}) }, `webhook delivery ${r.outcome}`);
  };
}
