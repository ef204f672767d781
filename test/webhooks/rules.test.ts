import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { webhookBody } from '../../shared/webhooks/body.ts';
import { attemptOffsetMs, deliveryJobOptions, MAX_ATTEMPTS, retryDelayMs } from '../../shared/webhooks/delivery-jobs.ts';
import { hasFlatBody, isSubscribable } from '../../shared/webhooks/event-types.ts';
import { WebhookPoster } from '../../shared/webhooks/http-post.ts';
import { deliveryId, newSigningSecret, signedHeaders } from '../../shared/webhooks/signing.ts';
import { checkWebhookUrl, isForbiddenAddress } from '../../shared/webhooks/url-guard.ts';
import { startReceiver } from '../helpers/receiver.ts';

t.test('forbidden address ranges: only globally reachable unicast passes (IANA special-purpose registries)', async (t) => {
  const forbidden: [string, string][] = [
    // IPv4
    ['0.0.0.0', 'this network 0/8'], ['0.1.2.3', '0/8'], ['10.0.0.1', 'private 10/8'], ['10.255.255.255', '10/8'],
    ['100.64.0.1', 'CGNAT 100.64/10'], ['100.127.255.255', 'CGNAT'], ['127.0.0.1', 'loopback'], ['127.255.0.1', 'loopback'],
    ['169.254.169.254', 'metadata service'], ['169.254.1.1', 'link-local'], ['172.16.0.1', 'private 172.16/12'],
    ['172.31.255.255', '172.16/12'], ['192.0.0.1', 'IETF protocol assignments 192.0.0/24'], ['192.0.0.170', 'NAT64 discovery'],
    ['192.0.2.1', 'TEST-NET-1'], ['192.31.196.1', 'AS112'], ['192.52.193.1', 'AMT'], ['192.88.99.1', '6to4 relay anycast'],
    ['192.168.0.1', 'private 192.168/16'], ['192.175.48.1', 'AS112 direct delegation'], ['198.18.0.1', 'benchmarking 198.18/15'],
    ['198.19.255.255', 'benchmarking'], ['198.51.100.7', 'TEST-NET-2'], ['203.0.113.9', 'TEST-NET-3'], ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'], ['240.0.0.1', 'reserved 240/4'], ['255.255.255.255', 'broadcast'],
    // IPv6 outside 2000::/3
    ['::', 'unspecified'], ['::1', 'loopback'], ['[::1]', 'bracketed loopback'], ['::7f00:1', 'IPv4-compatible ::/96'],
    ['::5db8:d822', 'IPv4-compatible, even of a public address'], ['::ffff:127.0.0.1', 'mapped loopback'],
    ['::ffff:7f00:1', 'mapped loopback, hex'], ['::ffff:10.0.0.1', 'mapped private'], ['::ffff:a9fe:a9fe', 'mapped metadata'],
    ['::ffff:0:7f00:1', 'SIIT ::ffff:0:0:0/96'], ['::ffff:0:5db8:d822', 'SIIT, even of a public address'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'], ['64:ff9b::a9fe:a9fe', 'NAT64 of the metadata service'],
    ['64:ff9b::a00:1', 'NAT64 of 10/8'], ['64:ff9b:1::7f00:1', 'local-use NAT64 64:ff9b:1::/48'],
    ['64:ff9b:1::5db8:d822', 'local-use NAT64, even of a public address'], ['100::1', 'discard-only 100::/64'],
    ['fc00::1', 'unique local'], ['fd00::1', 'unique local'], ['fd00:ec2::254', 'EC2 IPv6 metadata'], ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'], ['fec0::1', 'site-local'], ['ff02::1', 'multicast'], ['ff0e::1', 'global multicast'],
    ['1000::1', 'unassigned, outside 2000::/3'], ['4000::1', 'outside 2000::/3'],
    // IPv6 special-purpose blocks inside 2000::/3
    ['2001::1', 'Teredo 2001::/32'], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'], ['2001:1::1', 'IETF assignments'],
    ['2001:2::1', 'benchmarking 2001:2::/48'], ['2001:3::1', 'AMT'], ['2001:4:112::1', 'AS112'], ['2001:10::1', 'ORCHID'],
    ['2001:20::1', 'ORCHIDv2'], ['2001:1ff::1', 'end of 2001::/23'], ['2001:db8::1', 'documentation'],
    ['2001:db8:ffff::1', 'documentation'], ['2002:7f00:1::', '6to4 of loopback'], ['2002:a00:1::1', '6to4 of 10/8'],
    ['2002:5db8:d822::1', '6to4, even of a public address'], ['2620:4f:8000::1', 'AS112 direct delegation'],
    ['3fff::1', 'documentation 3fff::/20'], ['5f00::1', 'SRv6 SIDs'],
    // not an address
    ['not-an-ip', 'host name'], ['', 'empty'], ['1.2.3', 'partial'], ['::ffff:999.0.0.1', 'bad dotted quad'],
  ];
  const allowed = ['8.8.8.8', '93.184.216.34', '172.32.0.1', '100.128.0.1', '1.1.1.1', '192.0.1.1', '198.20.0.1', '223.255.255.254',
    '2606:4700:4700::1111', '2a00:1450::1', '2001:200::1', '2001:4860:4860::8888', '2003::1', '3ffe::1', '::ffff:8.8.8.8',
    '::ffff:5db8:d822', '64:ff9b::808:808', '64:ff9b::93.184.216.34'];
  for (const [a, why] of forbidden) t.equal(isForbiddenAddress(a), true, `${a} forbidden (${why})`);
  for (const a of allowed) t.equal(isForbiddenAddress(a), false, `${a} allowed`);
});

t.test('URL rule refuses every non-global literal at creation, including NAT64, Teredo and SIIT spellings', async (t) => {
  for (const u of ['https://[64:ff9b:1::7f00:1]/', 'https://[2001::1]/', 'https://[::ffff:0:7f00:1]/', 'https://[64:ff9b::7f00:1]/',
    'https://[2002:7f00:1::]/', 'https://[100::1]/', 'https://[2001:db8::1]/', 'https://[fec0::1]/', 'https://[ff02::1]/',
    'https://[::ffff:127.0.0.1]/', 'https://255.255.255.255/', 'https://198.18.0.1/', 'https://0x7f000001/', 'https://017700000001/']) {
    t.match(await checkWebhookUrl(u, false), { ok: false, reason: /must not point/ }, u);
  }
  t.match(await checkWebhookUrl('https://[2606:4700:4700::1111]/hook', false), { ok: true });
  t.match(await checkWebhookUrl('https://[64:ff9b::808:808]/hook', false), { ok: true }, 'NAT64 of a public address');
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
  for (const literal of ['https://[64:ff9b:1::7f00:1]:1/x', 'https://[2001::7f00:1]:1/x', 'https://[::ffff:0:7f00:1]:1/x']) {
    t.match(await strict.post(literal, h, '{}'), { ok: false, error: /refused/ }, `${literal}: refused at delivery time too`);
  }
  // A host name is checked when the connection is made (a DNS answer that changed since creation).
  t.match(await strict.post('https://localhost:1/x', h, '{}'), { ok: false, error: /refused: localhost resolves to a forbidden address/ });
  t.equal(rx.requests.length, before, 'nothing reached the receiver');
});
