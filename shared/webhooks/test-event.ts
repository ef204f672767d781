// "Send a test event": one delivery of a clearly marked event (event_type webhook.test, data.test true) to one
// subscription, through the same path as every event: a job on the delivery queue with the delivery's deterministic
// id, signed per attempt by the workers, retried on the same schedule and logged in the attempt log (so it shows in
// GET .../deliveries). It is not written to the events outbox: it belongs to one subscription, not to the fan-out.
import type { Queue } from 'bullmq';
import { writeWithin, type Db, type WithinTx } from '../db.ts';
import { stateConflict } from '../errors.ts';
import { uuidv7 } from '../ids.ts';
import { webhookBody } from './body.ts';
import { DELIVERY_QUEUE, deliveryJobOptions, type DeliveryJob } from './delivery-jobs.ts';
import { deliveryId } from './signing.ts';
import { getSubscription } from './subscriptions.ts';

export const TEST_EVENT_TYPE = 'webhook.test';

export interface TestDelivery {
  webhook_id: string;
  event_id: string;
  event_type: typeof TEST_EVENT_TYPE;
  subscription_id: string;
  /** The exact JSON the receiver gets (signed on each attempt). */
  payload: Record<string, unknown>;
}

export interface QueueSource { get<T = unknown>(name: string): Queue<T> }

/** Enqueues one test delivery to an active subscription of the organization (not_found for another organization's or
 *  a deleted one; state_conflict for a disabled one, which would not be attempted). */
export async function sendTestEvent(db: Db, queues: QueueSource, organizationId: string, subscriptionId: string,
  retryScale: number, within?: WithinTx<TestDelivery>, now = new Date()): Promise<TestDelivery> {
  const sub = await getSubscription(db, organizationId, subscriptionId);
  if (sub.status !== 'active') {
    throw stateConflict('webhook_subscription', sub.status, 'The subscription is disabled: deliveries to it are not attempted.',
      { resolutionHint: 'Re-enable it (POST .../enable) once its receiver is back, then send the test event.' });
  }
  const eventId = uuidv7();
  const data = {
    test: true,
    subscription_id: sub.id,
    subscribed_event_type: sub.event_type,
    message: `A test event from openline: deliveries of ${sub.event_type} to this URL are signed with this subscription's secret.`,
  };
  const body = webhookBody({ id: eventId, event_type: TEST_EVENT_TYPE, occurred_at: now, data });
  const webhookId = deliveryId(eventId, sub.id);
  const job: DeliveryJob = { webhookId, subscriptionId: sub.id, organizationId, eventId, eventType: TEST_EVENT_TYPE, body };
  const result: TestDelivery = {
    webhook_id: webhookId, event_id: eventId, event_type: TEST_EVENT_TYPE, subscription_id: sub.id, payload: JSON.parse(body),
  };
  // With an Idempotency-Key the record commits with the enqueue (the job id is the delivery id: enqueuing twice is one job).
  return writeWithin(db, within, async () => {
    await queues.get<DeliveryJob>(DELIVERY_QUEUE).add(TEST_EVENT_TYPE, job, deliveryJobOptions(webhookId, retryScale));
    return result;
  });
}
