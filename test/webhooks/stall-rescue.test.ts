import { Queue, Worker } from 'bullmq';
import t from 'tap';
import { createRedis } from '../../shared/redis.ts';
import { webhookBody } from '../../shared/webhooks/body.ts';
import { DELIVERY_QUEUE, deliveryJobOptions, type DeliveryJob } from '../../shared/webhooks/delivery-jobs.ts';
import { deliveryId } from '../../shared/webhooks/signing.ts';
import { testEnv } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { subscribe } from './helpers.ts';

// A delivery whose worker died under it twice is failed by BullMQ ("job stalled more than allowable limit").
// The relay service puts such jobs back, so the delivery still arrives.
const env = await testEnv(t, { env: { WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: '0.01' } });
const rx = await startReceiver(t);

t.test('a delivery failed for stalling twice is retried and arrives', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/stalled'), 'call_completed');
  const eventId = '0190f0f0-0000-7000-8000-000000000001';
  const webhookId = deliveryId(eventId, sub.id);
  const data: DeliveryJob = {
    webhookId, subscriptionId: sub.id, organizationId: org.organization_id, eventId, eventType: 'call_completed',
    body: webhookBody({ id: eventId, event_type: 'call_completed', occurred_at: new Date(), data: { id: 'stalled-call' } }),
  };
  const connection = createRedis(env.config.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(DELIVERY_QUEUE, { connection, prefix: env.config.redisPrefix });
  // attempts 1, so failing it lands in the failed set exactly as BullMQ's stall limit does.
  await queue.add('call_completed', data, { ...deliveryJobOptions(webhookId, 0.01), attempts: 1 });
  const grabberConnection = connection.duplicate();
  const grabber = new Worker(DELIVERY_QUEUE, null, { connection: grabberConnection, prefix: env.config.redisPrefix, autorun: false });
  const job = (await grabber.getNextJob('tok'))!;
  t.equal(job.id, webhookId);
  await job.moveToFailed(new Error('job stalled more than allowable limit'), 'tok');
  t.equal(await queue.getJobState(webhookId), 'failed');
  await grabber.close();
  grabberConnection.disconnect();

  const workers = env.spawn('workers');
  await workers.ready();
  const [req] = await rx.waitForCount(1, { path: '/stalled', timeoutMs: 60_000 });
  t.equal(req.webhookId, webhookId);
  rx.verify(req, sub.secret);
  await queue.close();
  connection.disconnect();
  await workers.kill('SIGTERM');
});
