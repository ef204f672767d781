import t from 'tap';
import { eventually, testEnv } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { subscribe } from './helpers.ts';

// The delivery log keeps what each attempt sent (headers and the exact signed body) and the start of what came back
// (content type, the first 2 KiB of the body, whether it was cut), through the workers' real delivery path.
const env = await testEnv(t, {
  env: { WEBHOOK_ALLOW_INSECURE: '1', SANDBOX_TIME_SCALE: '0.01', WEBHOOK_RETRY_SCALE: '0.01', WEBHOOK_TIMEOUT_MS: '1000' },
});
const workers = env.spawn('workers');
await workers.ready();
const rx = await startReceiver(t);

interface Attempt {
  webhook_id: string; attempt: number; outcome: string; response_status: number | null;
  request: { headers: Record<string, string>; body: string } | null;
  response: { content_type: string | null; body: string; truncated: boolean } | null;
}
const deliveries = async (key: string, id: string) =>
  (await env.request('GET', `/api/v1/webhook_subscriptions/${id}/deliveries`, { key })).body.data as Attempt[];

t.test('each attempt shows the request it sent and the answer it got', async (t) => {
  const org = await env.bootstrap();
  rx.respond('/exchange', { status: 503, body: 'database is down', headers: { 'content-type': 'text/plain' } });
  const sub = await subscribe(env, org.api_key, rx.url('/exchange'), 'call_completed');
  const sent = await env.request('POST', `/api/v1/webhook_subscriptions/${sub.id}/test`, { key: org.api_key });
  t.equal(sent.status, 202, sent.text);
  const [first, second] = await rx.waitForCount(2, { path: '/exchange' });

  const log = await eventually(async () => {
    const list = await deliveries(org.api_key, sub.id);
    return list.length >= 2 && list.some((a) => a.outcome === 'succeeded') ? list : null;
  });
  const failed = log.find((a) => a.attempt === 1)!;
  const ok = log.find((a) => a.attempt === 2)!;
  t.equal(failed.response_status, 503);
  t.same(failed.response, { content_type: 'text/plain', body: 'database is down', truncated: false }, 'the failed answer is kept');
  t.equal(failed.request!.body, first.raw, 'the request body is exactly what the receiver got');
  for (const h of ['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'user-agent']) {
    t.equal(failed.request!.headers[h], first.headers[h], `${h} as sent`);
  }
  t.equal(ok.request!.body, second.raw, 'the retry sent the same body');
  t.equal(ok.request!.headers['webhook-signature'], second.headers['webhook-signature'], 'with its own signature');
  t.equal(ok.response_status, 200);
  t.ok(ok.response && !ok.response.truncated, 'the success answer is kept too');
});

t.test('a long answer is cut at 2 KiB and says so; no answer at all has none', async (t) => {
  const org = await env.bootstrap();
  const long = 'é'.repeat(3000); // 6,000 bytes of UTF-8
  rx.respond('/long', { status: 200, body: long, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  const sub = await subscribe(env, org.api_key, rx.url('/long'), 'call_completed');
  t.equal((await env.request('POST', `/api/v1/webhook_subscriptions/${sub.id}/test`, { key: org.api_key })).status, 202);
  const a = await eventually(async () => (await deliveries(org.api_key, sub.id)).find((x) => x.outcome === 'succeeded'));
  t.equal(a.response!.truncated, true, 'marked as cut');
  t.ok(Buffer.byteLength(a.response!.body) <= 2048 + 3, `at most 2 KiB kept (${Buffer.byteLength(a.response!.body)} bytes)`);
  t.ok(long.startsWith(a.response!.body.replace(/\uFFFD$/, '')), 'the start of the answer');

  rx.respond('/slow', { status: 200, delayMs: 3000 }); // beyond WEBHOOK_TIMEOUT_MS
  const slow = await subscribe(env, org.api_key, rx.url('/slow'), 'call_completed');
  t.equal((await env.request('POST', `/api/v1/webhook_subscriptions/${slow.id}/test`, { key: org.api_key })).status, 202);
  const timedOut = await eventually(async () => (await deliveries(org.api_key, slow.id)).find((x) => x.attempt === 1));
  t.equal(timedOut.response, null, 'a timeout has no answer');
  t.ok(timedOut.request && timedOut.request.body.includes('webhook.test'), 'but the request is there');
});
