import t from 'tap';
import { eventually, testEnv } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { emit, sleep, subscribe } from './helpers.ts';

// Delivery through the real workers process: relay, signing, fan-out, retries, 410, isolation, the attempt log.
const env = await testEnv(t, {
  env: { WEBHOOK_ALLOW_INSECURE: '1', SANDBOX_TIME_SCALE: '0.01', WEBHOOK_RETRY_SCALE: '0.01', WEBHOOK_TIMEOUT_MS: '1000' },
});
const workers = env.spawn('workers');
await workers.ready();
const rx = await startReceiver(t);

const callRecord = (id: string) => ({
  id, from_number: '+14155550100', to_number: '+14155550199', direction: 'outbound', duration_seconds: 0, status: 'FAILED',
  failure_code: 'busy', failure_category: 'unreachable', disconnection_reason: null, created_at: new Date().toISOString(),
});

t.test('body, the three Standard Webhooks headers and a signature the standardwebhooks package accepts', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/basic'), 'call_busy');
  t.match(sub.id, /^whsub_/);
  t.match(sub.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  const payload = callRecord('call_1');
  const eventId = await emit(env, org.organization_id, 'call_busy', payload);
  const [req] = await rx.waitForCount(1, { path: '/basic' });
  t.equal(req.method, 'POST');
  t.equal(req.headers['content-type'], 'application/json');
  t.match(req.headers['webhook-id'], /^msg_[A-Za-z0-9_-]+$/);
  t.match(req.headers['webhook-timestamp'], /^\d{10}$/);
  t.ok(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000) < 30, 'timestamp is now');
  t.match(req.headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
  const verified = rx.verify(req, sub.secret);
  t.same(Object.keys(req.body).sort(), ['data', 'event_type', 'id', 'occurred_at']);
  t.equal(req.body.id, eventId);
  t.equal(req.body.event_type, 'call_busy');
  t.match(req.body.occurred_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.strictSame(req.body.data, payload, 'the payload is carried as data, unchanged');
  t.same(verified, req.body, 'verify() returns the body');
  t.throws(() => rx.verify({ ...req, raw: req.raw.replace('call_1', 'call_2') }, sub.secret), 'a tampered body fails verification');
  t.throws(() => rx.verify(req, 'whsec_' + Buffer.alloc(32, 1).toString('base64')), 'another secret fails verification');

  const log = await eventually(async () => {
    const r = await env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}/deliveries`, { key: org.api_key });
    return r.body.data?.length === 1 ? r : null;
  });
  const a = log.body.data[0];
  t.equal(a.webhook_id, req.headers['webhook-id']);
  t.equal(a.event_id, eventId);
  t.equal(a.event_type, 'call_busy');
  t.equal(a.attempt, 1);
  t.equal(a.outcome, 'succeeded');
  t.equal(a.response_status, 200);
  t.type(a.latency_ms, 'number');
  t.equal(a.error, null);
  t.equal(a.next_attempt_at, null);
  t.equal(log.body.meta.total_results, 1);
});

t.test('fan-out: two subscriptions to one type both receive, each with its own webhook-id and secret', async (t) => {
  const org = await env.bootstrap();
  const a = await subscribe(env, org.api_key, rx.url('/fan-a'), 'number_purchased');
  const b = await subscribe(env, org.api_key, rx.url('/fan-b'), 'number_purchased');
  const other = await subscribe(env, org.api_key, rx.url('/fan-other'), 'number_released');
  t.not(a.secret, b.secret);
  const eventId = await emit(env, org.organization_id, 'number_purchased',
    { id: 1, phone_number: '+14155550111', area_code: '415', status: 'ACTIVE', organization_id: org.organization_id });
  const [ra] = await rx.waitForCount(1, { path: '/fan-a' });
  const [rb] = await rx.waitForCount(1, { path: '/fan-b' });
  t.equal(ra.body.id, eventId);
  t.equal(rb.body.id, eventId);
  t.not(ra.webhookId, rb.webhookId, 'one delivery id per subscription');
  rx.verify(ra, a.secret);
  rx.verify(rb, b.secret);
  t.throws(() => rx.verify(ra, b.secret));
  await sleep(300);
  t.equal(rx.received('/fan-other').length, 0, 'a subscription to another type receives nothing');
  t.ok(other.id);
});

t.test('500s are retried with backoff and the same webhook-id, then succeed; every attempt is logged', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/flaky'), 'call_failed');
  rx.respond('/flaky', 500, 503);
  await emit(env, org.organization_id, 'call_failed', callRecord('call_retry'));
  const reqs = await rx.waitForCount(3, { path: '/flaky' });
  t.same(reqs.map((r) => r.status), [500, 503, 200]);
  t.equal(new Set(reqs.map((r) => r.webhookId)).size, 1, 'same webhook-id on every attempt');
  t.equal(new Set(reqs.map((r) => r.raw)).size, 1, 'same body on every attempt');
  for (const r of reqs) rx.verify(r, sub.secret);
  t.ok(reqs[1].at - reqs[0].at >= 90, `first retry waited the scaled 10 s (${reqs[1].at - reqs[0].at} ms)`);
  t.ok(reqs[2].at - reqs[1].at >= 190, `second retry waited twice as long (${reqs[2].at - reqs[1].at} ms)`);
  const log = await eventually(async () => {
    const r = await env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}/deliveries?order=asc`, { key: org.api_key });
    return r.body.data?.length === 3 ? r.body.data : null;
  });
  t.same(log.map((a: any) => [a.attempt, a.outcome, a.response_status]), [[1, 'retrying', 500], [2, 'retrying', 503], [3, 'succeeded', 200]]);
  t.equal(log[0].error, 'HTTP 500');
  t.ok(log[0].next_attempt_at, 'a retrying attempt says when the next one happens');
  t.equal(log[2].next_attempt_at, null);
  const one = await env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}/deliveries?webhook_id=${reqs[0].webhookId}`, { key: org.api_key });
  t.equal(one.body.data.length, 3, 'filter by webhook_id');
});

t.test('a timeout is retried with the same webhook-id', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/slow'), 'call_no_answer');
  rx.respond('/slow', { status: 200, delayMs: 2500 });
  await emit(env, org.organization_id, 'call_no_answer', callRecord('call_slow'));
  const reqs = await rx.waitForCount(2, { path: '/slow' });
  t.equal(reqs[0].webhookId, reqs[1].webhookId);
  const log = await eventually(async () => {
    const r = await env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}/deliveries?order=asc`, { key: org.api_key });
    return r.body.data?.length === 2 ? r.body.data : null;
  });
  t.equal(log[0].outcome, 'retrying');
  t.equal(log[0].response_status, null);
  t.equal(log[0].error, 'timeout after 1000 ms');
  t.ok(log[0].latency_ms >= 990 && log[0].latency_ms < 2400, `gave up at the timeout (${log[0].latency_ms} ms)`);
  t.equal(log[1].outcome, 'succeeded');
});

t.test('410 Gone disables the subscription: no retry, nothing more delivered to it', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/gone'), 'sms_failed');
  rx.setDefault('/gone', 410);
  await emit(env, org.organization_id, 'sms_failed', { id: 'sms_1' });
  await rx.waitForCount(1, { path: '/gone' });
  const got = await eventually(async () => {
    const r = await env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}`, { key: org.api_key });
    return r.body.data.status === 'disabled' ? r.body.data : null;
  });
  t.match(got.disabled_reason, /410/);
  t.ok(got.disabled_at);
  const log = await env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}/deliveries`, { key: org.api_key });
  t.equal(log.body.data.length, 1);
  t.equal(log.body.data[0].outcome, 'failed');
  t.equal(log.body.data[0].response_status, 410);
  await emit(env, org.organization_id, 'sms_failed', { id: 'sms_2' });
  await sleep(800);
  t.equal(rx.received('/gone').length, 1, 'neither a retry nor a later event reached the receiver');

  // The receiver is back: the subscription is enabled again and receives the events that follow.
  rx.setDefault('/gone', 200);
  const enabled = await env.request('POST', `/api/v1/webhook_subscriptions/${sub.id}/enable`, { key: org.api_key });
  t.equal(enabled.status, 200);
  t.equal(enabled.body.data.status, 'active');
  t.equal(enabled.body.data.disabled_reason, null);
  t.equal(enabled.body.data.disabled_at, null);
  t.notOk('secret' in enabled.body.data, 'the secret is not shown again');
  await emit(env, org.organization_id, 'sms_failed', { id: 'sms_3' });
  const [, back] = await rx.waitForCount(2, { path: '/gone' });
  t.equal(back.body.data.id, 'sms_3', 'the next event arrives; sms_2, sent while disabled, does not');
  const again = await env.request('POST', `/api/v1/webhook_subscriptions/${sub.id}/enable`, { key: org.api_key });
  t.equal(again.status, 200, 'enabling an active subscription is a no-op');
  const other = await env.bootstrap();
  const foreign = await env.request('POST', `/api/v1/webhook_subscriptions/${sub.id}/enable`, { key: other.api_key });
  t.equal(foreign.status, 404, 'another organization cannot enable it');
  t.equal(foreign.body.error.code, 'not_found');
});

t.test('a redirect is not followed and counts as a failed attempt', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/moved'), 'contact_created');
  rx.respond('/moved', { status: 302, headers: { location: rx.url('/moved-target') } });
  await emit(env, org.organization_id, 'contact_created', { id: 'c1' });
  await rx.waitForCount(2, { path: '/moved' });
  t.equal(rx.received('/moved-target').length, 0);
  const log = await env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}/deliveries?order=asc`, { key: org.api_key });
  t.equal(log.body.data[0].outcome, 'retrying');
  t.match(log.body.data[0].error, /redirect/);
});

t.test('cross-organization isolation: another organization\'s events never arrive', async (t) => {
  const mine = await env.bootstrap();
  const theirs = await env.bootstrap();
  await subscribe(env, mine.api_key, rx.url('/iso-mine'), 'call_completed');
  await subscribe(env, theirs.api_key, rx.url('/iso-theirs'), 'call_completed');
  for (let i = 0; i < 5; i++) await emit(env, theirs.organization_id, 'call_completed', { id: `theirs_${i}` });
  await emit(env, mine.organization_id, 'call_completed', { id: 'mine_0' });
  await rx.waitForCount(1, { path: '/iso-mine' });
  await rx.waitForCount(5, { path: '/iso-theirs' });
  await sleep(300);
  t.same(rx.received('/iso-mine').map((r) => r.body.data.id), ['mine_0']);
  t.equal(rx.received('/iso-theirs').filter((r) => r.body.data.id === 'mine_0').length, 0);
});

t.test('deleting a subscription stops its deliveries, pending retries included', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/deleted'), 'sms_sent');
  rx.setDefault('/deleted', 500);
  await emit(env, org.organization_id, 'sms_sent', { id: 'sms_del' });
  await rx.waitForCount(1, { path: '/deleted' });
  const del = await env.request('DELETE', `/api/v1/webhook_subscriptions/${sub.id}`, { key: org.api_key });
  t.equal(del.status, 204);
  const deletedAt = Date.now();
  // Without the delete, attempts would continue at +3.1 s and +6.3 s (scaled schedule); workers cache a
  // subscription for at most 1 s.
  await sleep(7000);
  const after = rx.received('/deleted').filter((r) => r.at > deletedAt + 1200);
  t.same(after.map((r) => r.at - deletedAt), [], 'no attempt once the delete took effect');
  t.ok(rx.received('/deleted').length <= 4, `${rx.received('/deleted').length} attempts in all`);
  const log = await env.request('GET', `/api/v1/webhook_subscriptions/${sub.id}/deliveries`, { key: org.api_key });
  t.equal(log.status, 200, 'the attempt log of a deleted subscription stays readable');
});

t.test('Optimize events keep their flat body with `event` in it', async (t) => {
  const org = await env.bootstrap();
  const sub = await subscribe(env, org.api_key, rx.url('/optimize'), 'optimize.test.winner');
  const test = { id: 'opt_1', name: 'Hero', status: 'completed', page_url: 'https://example.com/', winner_variant_id: 'v2', variants: [] };
  await emit(env, org.organization_id, 'optimize.test.winner', { test });
  const [req] = await rx.waitForCount(1, { path: '/optimize' });
  rx.verify(req, sub.secret);
  t.same(Object.keys(req.body).sort(), ['event', 'occurred_at', 'test']);
  t.equal(req.body.event, 'optimize.test.winner');
  t.same(req.body.test, test);
  t.ok(req.webhookId);
});

t.test('events without a subscription are relayed and dropped', async (t) => {
  const org = await env.bootstrap();
  const id = await emit(env, org.organization_id, 'new_call', { id: 'lonely' });
  await eventually(async () => (await env.db.one('SELECT relayed_at FROM events WHERE id = $1', [id])).relayed_at);
  t.pass('relayed');
});
