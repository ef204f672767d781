import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { webhookBody } from '../../shared/webhooks/body.ts';
import { attemptOffsetMs, deliveryJobOptions, MAX_ATTEMPTS, retryDelayMs } from '../../shared/webhooks/delivery-jobs.ts';
import { hasFlatBody, isSubscribable } from '../../shared/webhooks/event-types.ts';
import { WebhookPoster } from '../../shared/webhooks/http-post.ts';
import { deliveryId, newSigningSecret, signedHeaders } from '../../shared/webhooks/signing.ts';
import { checkWebhookUrl, isForbiddenAddress } from '../../shared/webhooks/url-guard.ts';
import { startReceiver } from '../helpers/receiver.ts';

t.test('forbidden address ranges', async (t) => {
  const forbidden = ['127.0.0.1', '127.255.0.1', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.0.1', '169.254.169.254',
    '169.254.1.1', '100.64.0.1', '100.127.255.255', '0.0.0.0', '224.0.0.1', '255.255.255.255', '198.18.0.1', '::', '::1',
    'fd00::1', 'fc00::1', 'fe80::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe',
    '64:ff9b::a9fe:a9fe', '2002:7f00:1::', '[::1]', 'fd00:ec2::254', 'not-an-ip'];
  const allowed = ['8.8.8.8', '93.184.216.34', '172.32.0.1', '100.128.0.1', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '2a00:1450::1'];
  for (const a of forbidden) t.equal(isForbiddenAddress(a), true, `${a} forbidden`);
  for (const a of allowed) t.equal(isForbiddenAddress(a), false, `${a} allowed`);
});

t.test('URL rule: https only, and WEBHOOK_ALLOW_INSECURE opens http and private addresses', async (t) => {
  t.same(await checkWebhookUrl('https://8.8.8.8/x', false), { ok: true, url: new URL('https://8.8.8.8/x') });
  t.match(await checkWebhookUrl('http://8.8.8.8/x', false), { ok: false, reason: /https/ });
  t.match(await checkWebhookUrl('https://localhost/x', false), { ok: false, reason: /resolves to .*127\.0\.0\.1|::1/ });
  t.match(await checkWebhookUrl('https://[::1]/x', false), { ok: false });
  t.match(await checkWebhookUrl('http://127.0.0.1:9/x', true), { ok: true });
  t.match(await checkWebhookUrl('ftp://127.0.0.1/x', true), { ok: false });
});

t.test('event types: the reference table, the other named events and Optimize are subscribable', async (t) => {
  for (const e of ['new_call', 'call_completed', 'number_purchased', 'workflow_contact_completed', 'phone_call.ended',
    'enterprise.status.updated', 'TEXTING_REGISTRATION_STATUS_CHANGED', 'optimize.test.shipped', 'optimize.conversion.created']) {
    t.ok(isSubscribable(e), e);
  }
  for (const e of ['number.purchased', 'optimize.test', 'texting_registration_status_changed', '']) t.notOk(isSubscribable(e), e);
  t.ok(hasFlatBody('optimize.conversion.created'));
  t.notOk(hasFlatBody('phone_call.ended'));
});

t.test('body shapes', async (t) => {
  const at = new Date('2026-01-02T03:04:05.678Z');
  t.same(JSON.parse(webhookBody({ id: 'e1', event_type: 'number_released', occurred_at: at, data: { id: 7 } })),
    { id: 'e1', event_type: 'number_released', occurred_at: '2026-01-02T03:04:05.678Z', data: { id: 7 } });
  const flat = JSON.parse(webhookBody({ id: 'e2', event_type: 'optimize.conversion.created', occurred_at: at,
    data: { conversion: { id: 'cv1' }, event: 'spoofed', occurred_at: 'spoofed' } }));
  t.same(flat, { event: 'optimize.conversion.created', occurred_at: '2026-01-02T03:04:05.678Z', conversion: { id: 'cv1' } });
  t.equal(Object.keys(flat)[0], 'event');
});

t.test('signatures verify with the standardwebhooks package; delivery ids are deterministic', async (t) => {
  const secret = newSigningSecret();
  t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  const body = '{"id":"e1","event_type":"new_call","occurred_at":"2026-01-02T03:04:05.678Z","data":{}}';
  const h = signedHeaders(secret, 'msg_abc', body);
  t.same(new Webhook(secret).verify(body, h), JSON.parse(body));
  t.throws(() => new Webhook(newSigningSecret()).verify(body, h));
  t.throws(() => new Webhook(secret).verify(body, { ...h, 'webhook-id': 'msg_other' }), 'the id is signed');
  t.equal(deliveryId('ev', 'whsub_1'), deliveryId('ev', 'whsub_1'));
  t.not(deliveryId('ev', 'whsub_1'), deliveryId('ev', 'whsub_2'));
  t.match(deliveryId('ev', 'whsub_1'), /^msg_[A-Za-z0-9_-]{27}$/);
  t.notOk(deliveryId('ev', 'whsub_1').includes(':'), 'usable as a BullMQ job id');
});

t.test('retry schedule: exponential from 10 s, 14 attempts over about 22.75 hours', async (t) => {
  t.equal(MAX_ATTEMPTS, 14);
  t.same(Array.from({ length: 13 }, (_, i) => retryDelayMs(i + 1, 1) / 1000),
    [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240, 20480, 40960]);
  t.equal(attemptOffsetMs(1, 1), 0);
  t.equal(attemptOffsetMs(14, 1), 81_910_000);
  t.equal(attemptOffsetMs(14, 0.01), 819_100);
  const o = deliveryJobOptions('msg_x', 1);
  t.match(o, { jobId: 'msg_x', attempts: 14, backoff: { type: 'exponential', delay: 10_000 }, deduplication: { id: 'msg_x' } });
});

t.test('the poster: success, non-2xx, redirect, timeout, and the SSRF rule at delivery time', async (t) => {
  const rx = await startReceiver(t);
  const open = new WebhookPoster({ timeoutMs: 300, allowInsecure: true });
  const strict = new WebhookPoster({ timeoutMs: 300, allowInsecure: false });
  t.teardown(() => { open.close(); strict.close(); });
  const h = { 'content-type': 'application/json', 'webhook-id': 'msg_1' };

  t.match(await open.post(rx.url('/ok'), h, '{}'), { ok: true, status: 200, error: null });
  t.equal(rx.received('/ok')[0].headers['content-length'], '2');
  rx.respond('/bad', 500);
  t.match(await open.post(rx.url('/bad'), h, '{}'), { ok: false, status: 500, error: 'HTTP 500' });
  rx.respond('/redir', { status: 301, headers: { location: rx.url('/ok') } });
  t.match(await open.post(rx.url('/redir'), h, '{}'), { ok: false, status: 301, error: /redirect/ });
  t.equal(rx.received('/ok').length, 1, 'redirect not followed');
  rx.respond('/slow', { delayMs: 1000 });
  const slow = await open.post(rx.url('/slow'), h, '{}');
  t.match(slow, { ok: false, status: null, error: 'timeout after 300 ms' });
  t.ok(slow.latencyMs >= 290 && slow.latencyMs < 900, `${slow.latencyMs} ms`);
  t.match(await open.post('http://127.0.0.1:1/closed', h, '{}'), { ok: false, status: null, error: /ECONNREFUSED/ });

  const before = rx.requests.length;
  t.match(await strict.post(rx.url('/x'), h, '{}'), { ok: false, error: /only https/ });
  t.match(await strict.post('https://127.0.0.1:1/x', h, '{}'), { ok: false, error: /refused: 127\.0\.0\.1/ });
  t.match(await strict.post('https://169.254.169.254/latest', h, '{}'), { ok: false, error: /refused/ });
  // A host name is checked when the connection is made (a DNS answer that changed since creation).
  t.match(await strict.post('https://localhost:1/x', h, '{}'), { ok: false, error: /refused: localhost resolves to a forbidden address/ });
  t.equal(rx.requests.length, before, 'nothing reached the receiver');
});
