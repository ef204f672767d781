import t from 'tap';
import { MAX_ATTEMPTS } from '../../shared/webhooks/delivery-jobs.ts';
import { eventually, testEnv } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { emit, sleep, subscribe } from './helpers.ts';

// The whole retry schedule, compressed 10,000 times (WEBHOOK_RETRY_SCALE=0.0001: about 8 s instead of 22.75 h):
// 14 attempts with the same webhook-id and doubling gaps, then the delivery is marked failed.
const env = await testEnv(t, { env: { WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: '0.0001' } });
const workers = env.spawn('workers');
await workers.ready();
const rx = await startReceiver(t);

t.test('a receiver that always fails gets 14 attempts, then the delivery is failed', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/down'), 'call_completed');
  rx.setDefault('/down', 503);
  await emit(env, org.organization_id, 'call_completed', { id: 'never' });
  const reqs = await rx.waitForCount(MAX_ATTEMPTS, { path: '/down', timeoutMs: 60_000 });
  t.equal(MAX_ATTEMPTS, 14);
  t.equal(new Set(reqs.map((r) => r.webhookId)).size, 1, 'one webhook-id for every attempt');
  const gaps = reqs.slice(1).map((r, i) => r.at - reqs[i].at);
  t.comment(`gaps (ms): ${gaps.join(', ')}`);
  t.ok(gaps[12] >= 4000, `the last gap is 2^12 x 1 ms (${gaps[12]} ms)`);
  t.ok(gaps[12] > gaps[9] * 4, 'gaps grow exponentially');
  const log = await eventually(async () => {
    const r = await env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}/deliveries?order=asc&limit=100`, { key: org.api_key });
    return r.body.data?.length === MAX_ATTEMPTS ? r.body.data : null;
  });
  t.same(log.map((a: any) => a.attempt), Array.from({ length: MAX_ATTEMPTS }, (_, i) => i + 1));
  t.ok(log.slice(0, -1).every((a: any) => a.outcome === 'retrying' && a.next_attempt_at), 'retrying until the last');
  t.equal(log[MAX_ATTEMPTS - 1].outcome, 'failed');
  t.equal(log[MAX_ATTEMPTS - 1].next_attempt_at, null);
  t.equal(log[MAX_ATTEMPTS - 1].error, 'HTTP 503');
  await sleep(3000);
  t.equal(rx.received('/down').length, MAX_ATTEMPTS, 'nothing after the last attempt');
  const s = await env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}`, { key: org.api_key });
  t.equal(s.body.data.status, 'active', 'failures other than 410 do not disable the subscription');
});
