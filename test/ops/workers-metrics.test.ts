// The workers process's /metrics, /healthz and /readyz (WORKERS_PORT), and its log lines: a sandbox call placed and
// hung up moves the call transition counter (workers) and the live-calls, channels-in-use and queue-depth gauges
// (while live, then back to 0); webhook deliveries are counted by outcome; SMS hand-overs and receipts by status,
// with the messages not final yet as a gauge. /metrics needs METRICS_TOKEN when it is set.
import t from 'tap';
import { eventually, httpCall, testEnv, type Proc } from '../helpers/env.ts';
import { assertMetricsRefused, find, scrape, total, type Sample } from '../helpers/prometheus.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { callOrg, dial, getCall, settled } from '../calls/helpers.ts';
import { send, subscribe, textingOrg, waitMessage } from '../sms/helpers.ts';

const TOKEN = 'workers-metrics-token-0123456789';
// 0.2: a sandbox call rings 0.4 s; a slow SMS receipt ('0009') comes 12 s after the hand-over, long enough to see
// the message counted as sent.
const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '0.2', WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: '0.01',
  SMS_NUMBER_RATE_PER_SECOND: '50', METRICS_TOKEN: TOKEN } });
const workers = env.spawn('workers');
await workers.ready();
const base = /"health":"(http:\/\/[^"]+)\/healthz"/.exec(workers.output)![1];

const metrics = async () => (await scrape(base, TOKEN)).samples;
const value = (s: Sample[], name: string, labels: Record<string, string> = {}) => total(s, name, labels);
/** Polls the workers' /metrics until `check` holds (global gauges are reused for 5 s, so allow for that). */
const until = (what: string, check: (s: Sample[]) => boolean) =>
  eventually(async () => { const s = await metrics(); return check(s) ? s : null; }, 40_000, 200)
    .catch((err) => { throw new Error(`${what}: ${(err as Error).message}`); });

/** The JSON log lines of a process that match `fields`. */
function logLines(p: Proc, fields: Record<string, unknown>): Record<string, unknown>[] {
  return p.output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => Object.entries(fields).every(([k, v]) => l[k] === v));
}

t.test('/healthz, /readyz; /metrics refuses without the token', async (t) => {
  const h = await httpCall(base, 'GET', '/healthz');
  t.equal(h.status, 200);
  t.match(h.body, { status: 'ok', proc: 'workers' });
  const r = await httpCall(base, 'GET', '/readyz');
  t.equal(r.status, 200);
  t.same(r.body, { status: 'ready', postgres: 'ok', redis: 'ok' });
  await assertMetricsRefused(t, base, [undefined, 'Bearer not-the-token-0123456789']);
});

t.test('a call: transitions, live calls, channels in use and a queued timer while live; 0 after the hang-up', async (t) => {
  const org = await callOrg(env);
  const rx = await startReceiver(t);
  const path = `/${org.organization_id}/new_call`;
  rx.respond(path, 500); // the first delivery attempt fails and is retried
  const sub = await env.request('POST', '/api/v1/webhook_subscriptions', { key: org.api_key, body: { webhook_url: rx.url(path), event_type: 'new_call' } });
  t.equal(sub.status, 201);
  const before = await metrics();

  // 0008 answers and never hangs up: the call stays ANSWERED, holding two channels (bridge), until the hang-up.
  const placed = await dial(env, org, '+14155550008', '+12125550008');
  t.equal(placed.status, 202);
  const callId: string = placed.body.data.call_id;
  await eventually(async () => (await getCall(env, org, callId)).status === 'ANSWERED', 30_000);
  const live = await until('the live call in the gauges', (s) => value(s, 'openline_calls', { status: 'ANSWERED' }) === 1
    && value(s, 'openline_channels_in_use') === 2);
  t.equal(value(live, 'openline_calls', { status: 'QUEUED' }), 0);
  t.equal(value(live, 'openline_calls', { status: 'RINGING' }), 0);
  t.equal(value(live, 'openline_queue_jobs', { queue: 'call-timers', state: 'delayed' }), 1, 'its call-length limit waits in call-timers');
  for (const [from, to] of [['QUEUED', 'RINGING'], ['RINGING', 'ANSWERED']]) {
    t.equal(value(live, 'openline_call_transitions_total', { from, to }) - value(before, 'openline_call_transitions_total', { from, to }), 1,
      `${from} -> ${to} counted once by the workers`);
  }
  const logged = logLines(workers, { event: 'call_transition', call_id: callId });
  t.match(logged[0], { level: 30, organization_id: org.organization_id, from: 'QUEUED', to: 'RINGING', cause: 'originate' },
    'one info line per transition: call, organization, from, to, cause');
  t.ok(logged.some((l) => l.from === 'RINGING' && l.to === 'ANSWERED' && /^carrier:(destination|connect):answered/.test(String(l.cause))));

  t.equal((await env.request('POST', `/v1/calls/${callId}/hangup`, { key: org.api_key })).status, 200);
  await settled(env, org, callId);
  const after = await until('nothing live after the hang-up', (s) => value(s, 'openline_calls', { status: 'ANSWERED' }) === 0
    && value(s, 'openline_channels_in_use') === 0 && value(s, 'openline_queue_jobs', { queue: 'call-timers', state: 'delayed' }) === 0);
  t.equal(value(after, 'openline_call_transitions_total', { from: 'ANSWERED', to: 'COMPLETED' })
    - value(before, 'openline_call_transitions_total', { from: 'ANSWERED', to: 'COMPLETED' }), 0,
  'the hang-up was applied by the gateway, so the workers did not count it');

  // The new_call delivery: 500 (retrying), then 200 (succeeded).
  await rx.waitForCount(2, { path });
  const delivered = await until('both delivery attempts counted', (s) =>
    value(s, 'openline_webhook_deliveries_total', { outcome: 'succeeded' }) - value(before, 'openline_webhook_deliveries_total', { outcome: 'succeeded' }) >= 1
    && value(s, 'openline_webhook_deliveries_total', { outcome: 'retrying' }) - value(before, 'openline_webhook_deliveries_total', { outcome: 'retrying' }) === 1);
  t.ok(value(delivered, 'openline_queue_job_failures_total', { queue: 'webhook-delivery' }) >= 1, 'the failed attempt is a failed job run');
  t.ok(value(delivered, 'openline_queue_jobs_completed_total', { queue: 'calls-dial' }) >= 1, 'the dial job completed');
  const webhookId = rx.received(path)[0].webhookId;
  const lines = logLines(workers, { event: 'webhook_delivery', webhook_id: webhookId });
  t.match(lines, [
    { level: 30, subscription_id: sub.body.data.id, event_type: 'new_call', status: 500, attempt: 1, outcome: 'retrying' },
    { level: 30, subscription_id: sub.body.data.id, event_type: 'new_call', status: 200, attempt: 2, outcome: 'succeeded' },
  ], 'one info line per attempt: delivery, subscription, event type, status, attempt, outcome');
  t.ok(lines.every((l) => typeof l.ms === 'number'), 'with the time it took');
});

t.test('queue depths: every queue, every state', async (t) => {
  const s = await scrape(base, TOKEN);
  t.equal(s.types.openline_queue_jobs, 'gauge');
  const queues = new Set(find(s.samples, 'openline_queue_jobs').map((x) => x.labels.queue));
  for (const q of ['webhook-delivery', 'calls-dial', 'carrier-events', 'call-timers', 'sms-send']) t.ok(queues.has(q), q);
  for (const q of queues) {
    const states = find(s.samples, 'openline_queue_jobs', { queue: q }).map((x) => x.labels.state).sort();
    t.same(states, ['active', 'delayed', 'failed', 'prioritized', 'waiting', 'waiting-children'], `${q}: every state`);
  }
});

t.test('SMS: hand-overs and receipts counted by status; messages waiting for a receipt are a gauge', async (t) => {
  const org = await textingOrg(env);
  const rx = await startReceiver(t);
  await subscribe(env, rx, org, ['sms_sent']);
  const before = await metrics();
  const changed = (s: Sample[], status: string) => value(s, 'openline_sms_status_changes_total', { status })
    - value(before, 'openline_sms_status_changes_total', { status });

  const slow = await send(env, org, '+14155550009'); // delivered 12 s after the hand-over
  const refused = await send(env, org, '+14155550005'); // refused by the carrier at hand-over
  t.equal(slow.status, 202);
  t.equal(refused.status, 202);
  await waitMessage(env, org, slow.body.data.id, ['sent']);
  await waitMessage(env, org, refused.body.data.id, ['failed']);
  const waiting = await until('the sent message in the gauge', (s) => value(s, 'openline_sms_messages', { status: 'sent' }) === 1);
  t.equal(value(waiting, 'openline_sms_messages', { status: 'queued' }), 0);
  t.equal(changed(waiting, 'sent'), 1);
  t.equal(changed(waiting, 'failed'), 1);

  await waitMessage(env, org, slow.body.data.id, ['delivered']);
  const done = await until('no message waiting', (s) => value(s, 'openline_sms_messages', { status: 'sent' }) === 0);
  t.equal(changed(done, 'delivered'), 1);
});
