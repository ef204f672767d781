import t from 'tap';
import { eventually, testEnv } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { subscribe } from './helpers.ts';

// POST /api/v1/webhook_subscriptions/{id}/test: one signed webhook.test delivery through the workers' delivery path
// (signing, retries, attempt log), tenant-scoped, webhooks:write.
const env = await testEnv(t, {
  env: { WEBHOOK_ALLOW_INSECURE: '1', SANDBOX_TIME_SCALE: '0.01', WEBHOOK_RETRY_SCALE: '0.01', WEBHOOK_TIMEOUT_MS: '1000' },
});
const workers = env.spawn('workers');
await workers.ready();
const rx = await startReceiver(t);

const test = (key: string, id: string, headers: Record<string, string> = {}) =>
  env.request('POST', `/api/v1/webhook_subscriptions/${id}/test`, { key, headers });
const deliveries = async (key: string, id: string, webhookId?: string) =>
  (await env.request('GET', `/api/v1/webhook_subscriptions/${id}/deliveries${webhookId ? `?webhook_id=${webhookId}` : ''}`, { key })).body.data as
    { webhook_id: string; event_type: string; outcome: string; attempt: number; response_status: number | null }[];

t.test('the receiver gets a signed webhook.test event and the attempt is in the deliveries list', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/test-basic'), 'call_completed', { campaign_id: 'spring' });
  const r = await test(org.api_key, sub.id);
  t.equal(r.status, 202, r.text);
  const d = r.body.data;
  t.match(d, { event_type: 'webhook.test', subscription_id: sub.id, webhook_id: /^msg_/ });
  const [req] = await rx.waitForCount(1, { path: '/test-basic' });
  t.equal(req.headers['webhook-id'], d.webhook_id, 'the delivery id is the one answered');
  const verified = rx.verify(req, sub.secret);
  t.same(verified, d.payload, 'signed with the subscription\'s secret; the body is the payload answered');
  t.match(req.body, { id: d.event_id, event_type: 'webhook.test', data: { test: true, subscription_id: sub.id, subscribed_event_type: 'call_completed' } },
    'clearly marked as a test (and sent although it has no campaign)');
  const logged = await eventually(async () => (await deliveries(org.api_key, sub.id, d.webhook_id)).find((a) => a.outcome === 'succeeded'));
  t.match(logged, { webhook_id: d.webhook_id, event_type: 'webhook.test', attempt: 1, response_status: 200 });
});

t.test('a failing receiver: the test delivery is retried on the same schedule, every attempt logged', async (t) => {
  const org = await env.bootstrap();
  rx.respond('/test-retry', 500, 503);
  const sub = await subscribe(env, org.api_key, rx.url('/test-retry'), 'new_call');
  const r = await test(org.api_key, sub.id);
  t.equal(r.status, 202, r.text);
  const got = await rx.waitForCount(3, { path: '/test-retry' });
  t.same(got.map((q) => q.status), [500, 503, 200]);
  t.same(new Set(got.map((q) => q.webhookId)), new Set([r.body.data.webhook_id]), 'one delivery id across retries');
  const log = await eventually(async () => {
    const a = await deliveries(org.api_key, sub.id);
    return a.length === 3 ? a : undefined;
  });
  t.same(log.map((a) => [a.attempt, a.outcome]), [[3, 'succeeded'], [2, 'retrying'], [1, 'retrying']]);
});

t.test('another organization\'s key: 404 and nothing is sent; a missing scope: 403; a disabled subscription: 409', async (t) => {
  const mine = await env.bootstrap();
  const theirs = await env.bootstrap();
  const sub = await subscribe(env, mine.api_key, rx.url('/test-iso'), 'new_call');
  const other = await test(theirs.api_key, sub.id);
  t.equal(other.status, 404);
  t.equal(other.body.error.code, 'not_found');
  t.notMatch(other.text, sub.id, 'the answer does not echo the id');
  t.equal((await test(mine.api_key, 'whsub_doesnotexist')).status, 404);

  const reader = await env.bootstrap({ scopes: ['webhooks:read'] });
  const readerSub = await env.db.one<{ id: string }>(
    `INSERT INTO webhook_subscriptions (id, organization_id, webhook_url, event_type, secret)
     VALUES ('whsub_reader' || substr(md5(random()::text), 1, 12), $1, $2, 'new_call', 'whsec_AAAA') RETURNING id`,
    [reader.organization_id, rx.url('/test-iso')]);
  const denied = await test(reader.api_key, readerSub.id);
  t.equal(denied.status, 403);
  t.equal(denied.body.error.code, 'scope_missing');

  await env.db.none(`UPDATE webhook_subscriptions SET status = 'disabled', disabled_reason = 'test', disabled_at = now() WHERE id = $1`, [sub.id]);
  const disabled = await test(mine.api_key, sub.id);
  t.equal(disabled.status, 409);
  t.match(disabled.body.error, { code: 'state_conflict', fields: { entity: 'webhook_subscription', status: 'disabled' } });

  // Nothing reached the receiver for any of these (a later delivery to the same path would show up here).
  await env.db.none(`UPDATE webhook_subscriptions SET status = 'active', disabled_reason = NULL, disabled_at = NULL WHERE id = $1`, [sub.id]);
  const ok = await test(mine.api_key, sub.id);
  t.equal(ok.status, 202);
  const got = await rx.waitForCount(1, { path: '/test-iso' });
  t.same(got.map((q) => q.webhookId), [ok.body.data.webhook_id], 'only the allowed request delivered anything');
});

t.test('an Idempotency-Key replays the first answer and sends one event', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/test-idem'), 'new_call');
  const h = { 'idempotency-key': 'test-event-once' };
  const a = await test(org.api_key, sub.id, h);
  const b = await test(org.api_key, sub.id, h);
  t.equal(a.status, 202);
  t.equal(b.status, 202);
  t.equal(b.body.data.webhook_id, a.body.data.webhook_id, 'the same delivery');
  await rx.waitForCount(1, { path: '/test-idem' });
  const c = await test(org.api_key, sub.id);
  await rx.waitForCount(2, { path: '/test-idem', unique: true });
  t.same(new Set(rx.unique('/test-idem').map((q) => q.webhookId)), new Set([a.body.data.webhook_id, c.body.data.webhook_id]),
    'two deliveries: the replay sent none');
});

t.test('deliveries?call_id= lists only the attempts of the events of that call, in one organization', async (t) => {
  const { recordEvent, wakeRelay } = await import('../../shared/events/outbox.ts');
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/by-call'), 'call_completed');
  const callA = '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c01';
  const callB = '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c02';
  const emitFor = (id: string) => env.db.tx((tx) => recordEvent(tx, { organizationId: org.organization_id, eventType: 'call_completed', data: { id } }));
  const [a, b] = [await emitFor(callA), await emitFor(callB)];
  wakeRelay(env.db);
  await rx.waitForCount(2, { path: '/by-call', unique: true });
  const q = (key: string, call: string) => env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}/deliveries?call_id=${call}`, { key });
  const onlyA = await eventually(async () => {
    const r = await q(org.api_key, callA);
    return r.body.data?.length ? r : undefined;
  });
  t.equal(onlyA.status, 200);
  t.same(onlyA.body.data.map((x: { event_id: string }) => x.event_id), [a], 'only the event of call A');
  t.equal(onlyA.body.meta.total_results, 1);
  t.same((await q(org.api_key, callB)).body.data.map((x: { event_id: string }) => x.event_id), [b]);
  t.same((await q(org.api_key, '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c03')).body.data, [], 'a call without events: none');
  const bad = await q(org.api_key, 'not-a-uuid');
  t.equal(bad.status, 400);
  t.match(bad.body.error, { code: 'validation_error', fields: { call_id: /.+/ } });
  const other = await env.bootstrap();
  t.equal((await q(other.api_key, callA)).status, 404, 'another organization: not_found');
  // The filter's subquery matches the partial index's predicate (with sequential scans off, the planner picks it).
  const plan = await env.db.task(async (q) => {
    await q.none('SET enable_seqscan = off');
    const rows = await q.any(`EXPLAIN SELECT id FROM events WHERE organization_id = $1 AND data->>'id' = $2
      AND event_type IN ('new_call', 'call_completed', 'call_no_answer', 'call_voicemail', 'call_busy', 'call_failed', 'phone_call.ended')`,
    [org.organization_id, callA]);
    await q.none('RESET enable_seqscan');
    return JSON.stringify(rows);
  });
  t.match(plan, /events_call_id/, 'the index serves the filter');
});
