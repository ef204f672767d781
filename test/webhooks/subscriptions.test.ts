import t from 'tap';
import { testEnv } from '../helpers/env.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../shared/webhooks/event-types.ts';

// The subscription API with the production URL rule (WEBHOOK_ALLOW_INSECURE off): SSRF refusals, event_type
// validation, secret shown once, list/read/delete, scopes and organization isolation. No workers needed.
const env = await testEnv(t);
const PUBLIC = 'https://93.184.216.34/hooks/openline'; // a public address literal: no DNS needed in the sandbox

const post = (key: string, body: unknown) => env.request('POST', '/api/v1/webhook_subscriptions', { key, body });

t.test('webhook_url must be https and must not reach loopback, private, link-local or metadata addresses', async (t) => {
  const org = await env.bootstrap();
  const refused = [
    'http://93.184.216.34/hook',
    'https://127.0.0.1/hook',
    'https://127.1.2.3:8443/hook',
    'https://10.0.0.1/hook',
    'https://172.16.5.4/hook',
    'https://192.168.1.1/hook',
    'https://100.64.0.1/hook',
    'https://169.254.169.254/latest/meta-data/',
    'https://[::1]/hook',
    'https://[fd00::1]/hook',
    'https://[fe80::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://[::ffff:a9fe:a9fe]/hook',
    'https://[64:ff9b:1::7f00:1]/hook', // local-use NAT64 of loopback
    'https://[64:ff9b::7f00:1]/hook', // well-known NAT64 of loopback
    'https://[2001::7f00:1]/hook', // Teredo
    'https://[::ffff:0:7f00:1]/hook', // SIIT
    'https://[2001:db8::1]/hook',
    'https://0.0.0.0/hook',
    'https://2130706433/hook', // 127.0.0.1 as one decimal number
    'https://0x7f.1/hook',
    'https://localhost/hook', // a host name that resolves to loopback
    'https://localhost.:8443/hook',
    'https://user:pass@93.184.216.34/hook',
    'ftp://93.184.216.34/hook',
    'not a url',
  ];
  for (const webhook_url of refused) {
    const r = await post(org.api_key, { webhook_url, event_type: 'call_completed' });
    t.equal(r.status, 400, webhook_url);
    t.equal(r.body.error.code, 'validation_error', webhook_url);
    t.type(r.body.error.fields?.webhook_url, 'string', `${webhook_url}: ${r.body.error.fields?.webhook_url}`);
    // A local receiver (http://, loopback, private) is told how to allow it for development; a malformed URL is not.
    const local = webhook_url.startsWith('http://') || /127\.|10\.0|172\.16|192\.168|\[::1\]|\[fd00|localhost\//.test(webhook_url);
    if (local) t.match(r.body.error.resolution_hint, 'WEBHOOK_ALLOW_INSECURE=1', `${webhook_url}: hint for local development`);
    if (/^(not a url|ftp:)/.test(webhook_url) || webhook_url.includes('user:pass')) t.notOk(r.body.error.resolution_hint, `${webhook_url}: no hint`);
  }
  const rows = await env.db.one('SELECT count(*)::int AS n FROM webhook_subscriptions WHERE organization_id = $1', [org.organization_id]);
  t.equal(rows.n, 0, 'nothing stored');
  const ok = await post(org.api_key, { webhook_url: PUBLIC, event_type: 'call_completed' });
  t.equal(ok.status, 201, 'a public https URL is accepted');
});

t.test('enable: a URL no longer allowed is refused with fields.webhook_url and the subscription stays disabled', async (t) => {
  const org = await env.bootstrap();
  // A subscription made while the deployment allowed loopback URLs, later disabled by a 410.
  await env.db.none(
    `INSERT INTO webhook_subscriptions (id, organization_id, webhook_url, event_type, secret, status, disabled_reason, disabled_at)
     VALUES ('whsub_enable_refused', $1, 'https://127.0.0.1/hook', 'sms_sent', 'whsec_x', 'disabled', 'receiver answered 410', now())`,
    [org.organization_id]);
  const r = await env.request('POST', '/api/v1/webhook_subscriptions/whsub_enable_refused/enable', { key: org.api_key });
  t.equal(r.status, 400);
  t.equal(r.body.error.code, 'validation_error');
  t.ok(r.body.error.fields.webhook_url, 'fields.webhook_url says why');
  const after = await env.request('GET', '/api/v1/webhook_subscriptions/whsub_enable_refused', { key: org.api_key });
  t.equal(after.body.data.status, 'disabled', 'nothing changed');
  const missing = await env.request('POST', '/api/v1/webhook_subscriptions/whsub_nope/enable', { key: org.api_key });
  t.equal(missing.status, 404);
  t.equal(missing.body.error.code, 'not_found');
});

t.test('event_type must be subscribable', async (t) => {
  const org = await env.bootstrap();
  for (const event_type of ['call.completed', 'CALL_COMPLETED', 'optimize.*', 'nope', '']) {
    const r = await post(org.api_key, { webhook_url: PUBLIC, event_type });
    t.equal(r.status, 400, event_type);
    t.equal(r.body.error.code, 'validation_error');
    t.ok(r.body.error.fields.event_type, `${event_type}: ${r.body.error.fields.event_type}`);
  }
  const both = await post(org.api_key, { webhook_url: 'https://10.1.1.1/', event_type: 'bogus' });
  t.same(Object.keys(both.body.error.fields).sort(), ['event_type', 'webhook_url'], 'both problems reported at once');
  for (const event_type of SUBSCRIBABLE_EVENT_TYPES) {
    const r = await post(org.api_key, { webhook_url: PUBLIC, event_type });
    t.equal(r.status, 201, `${event_type} is subscribable`);
  }
  for (const name of ['phone_call.ended', 'enterprise.status.updated', 'TEXTING_REGISTRATION_STATUS_CHANGED', 'optimize.conversion.created']) {
    t.ok(SUBSCRIBABLE_EVENT_TYPES.includes(name), name);
  }
  const missing = await post(org.api_key, { webhook_url: PUBLIC });
  t.equal(missing.body.error.fields.event_type, 'is required');
  const extra = await post(org.api_key, { webhook_url: PUBLIC, event_type: 'new_call', secret: 'mine' });
  t.equal(extra.body.error.fields.secret, 'is not a recognized field');
});

t.test('create returns id and the secret once; read, list and delete never show the secret', async (t) => {
  const org = await env.bootstrap();
  const r = await post(org.api_key, { webhook_url: PUBLIC, event_type: 'number_purchased', workflow_id: 'wf_1', campaign_id: 'cmp_9' });
  t.equal(r.status, 201);
  const d = r.body.data;
  t.match(d.id, /^whsub_[A-Za-z0-9]{24}$/);
  t.match(d.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.same({ ...d, id: 'x', secret: 'x', created_at: 'x' }, {
    id: 'x', secret: 'x', created_at: 'x', webhook_url: PUBLIC, event_type: 'number_purchased', workflow_id: 'wf_1',
    campaign_id: 'cmp_9', status: 'active', disabled_reason: null, disabled_at: null,
  });

  const read = await env.request('GET', `/api/v1/webhook_subscriptions/${d.id}`, { key: org.api_key });
  t.equal(read.status, 200);
  t.notOk('secret' in read.body.data);
  t.equal(read.body.data.id, d.id);

  await post(org.api_key, { webhook_url: PUBLIC + '/2', event_type: 'number_purchased' });
  await post(org.api_key, { webhook_url: PUBLIC + '/3', event_type: 'number_released' });
  const list = await env.request('GET', '/api/v1/webhook_subscriptions?limit=2', { key: org.api_key });
  t.equal(list.status, 200);
  t.equal(list.body.data.length, 2);
  t.equal(list.body.meta.total_results, 3);
  t.equal(list.body.meta.page_size, 2);
  t.ok(list.body.meta.cursor);
  t.notOk(list.body.data.some((s: any) => 'secret' in s));
  t.equal(list.body.data[0].event_type, 'number_released', 'newest first');
  const next = await env.request('GET', `/api/v1/webhook_subscriptions?limit=2&cursor=${encodeURIComponent(list.body.meta.cursor)}`, { key: org.api_key });
  t.same(next.body.data.map((s: any) => s.id), [d.id]);
  t.notOk(next.body.meta.cursor);
  const filtered = await env.request('GET', '/api/v1/webhook_subscriptions?event_type=number_purchased', { key: org.api_key });
  t.equal(filtered.body.data.length, 2);

  const del = await env.request('DELETE', `/api/v1/webhook_subscriptions/${d.id}`, { key: org.api_key });
  t.equal(del.status, 204);
  t.equal(del.text, '');
  const gone = await env.request('GET', `/api/v1/webhook_subscriptions/${d.id}`, { key: org.api_key });
  t.equal(gone.status, 404);
  t.equal(gone.body.error.code, 'not_found');
  const again = await env.request('DELETE', `/api/v1/webhook_subscriptions/${d.id}`, { key: org.api_key });
  t.equal(again.status, 404);
  const after = await env.request('GET', '/api/v1/webhook_subscriptions', { key: org.api_key });
  t.equal(after.body.meta.total_results, 2);
});

t.test('another organization can neither read, list, delete nor see the deliveries of a subscription', async (t) => {
  const mine = await env.bootstrap();
  const theirs = await env.bootstrap();
  const s = (await post(mine.api_key, { webhook_url: PUBLIC, event_type: 'sms_sent' })).body.data;
  for (const [method, path] of [['GET', `/api/v1/webhook_subscriptions/${s.id}`], ['DELETE', `/api/v1/webhook_subscriptions/${s.id}`],
    ['GET', `/api/v1/webhook_subscriptions/${s.id}/deliveries`]] as const) {
    const r = await env.request(method, path, { key: theirs.api_key });
    t.equal(r.status, 404, `${method} ${path}`);
  }
  const list = await env.request('GET', '/api/v1/webhook_subscriptions', { key: theirs.api_key });
  t.same(list.body.data, []);
  const still = await env.request('GET', `/api/v1/webhook_subscriptions/${s.id}`, { key: mine.api_key });
  t.equal(still.status, 200);
});

t.test('scopes: webhooks:write to change, webhooks:read to read', async (t) => {
  const org = await env.bootstrap({ scopes: ['webhooks:read'] });
  const w = await post(org.api_key, { webhook_url: PUBLIC, event_type: 'sms_sent' });
  t.equal(w.status, 403);
  t.equal(w.body.error.code, 'scope_missing');
  const r = await env.request('GET', '/api/v1/webhook_subscriptions', { key: org.api_key });
  t.equal(r.status, 200);
  const writer = await env.bootstrap({ scopes: ['webhooks:write'] });
  t.equal((await post(writer.api_key, { webhook_url: PUBLIC, event_type: 'sms_sent' })).status, 201);
  t.equal((await env.request('GET', '/api/v1/webhook_subscriptions', { key: writer.api_key })).status, 403);
});

t.test('Idempotency-Key replays the creation (same id and secret), not a second subscription', async (t) => {
  const org = await env.bootstrap();
  const headers = { 'idempotency-key': 'sub-create-1' };
  const body = { webhook_url: PUBLIC, event_type: 'call_completed' };
  const a = await env.request('POST', '/api/v1/webhook_subscriptions', { key: org.api_key, body, headers });
  const b = await env.request('POST', '/api/v1/webhook_subscriptions', { key: org.api_key, body, headers });
  t.equal(b.headers['idempotency-replay'], 'true');
  t.same(b.body, a.body);
  const n = await env.db.one('SELECT count(*)::int AS n FROM webhook_subscriptions WHERE organization_id = $1', [org.organization_id]);
  t.equal(n.n, 1);
});

t.test('one subscription per (URL, event type): a duplicate is 409 subscription_exists naming the existing id', async (t) => {
  const org = await env.bootstrap();
  const first = await post(org.api_key, { webhook_url: PUBLIC, event_type: 'call_completed' });
  t.equal(first.status, 201);
  const id = first.body.data.id;
  // The same URL however it is spelled (default port, upper-case scheme and host are normalized away).
  for (const webhook_url of [PUBLIC, 'https://93.184.216.34:443/hooks/openline', 'HTTPS://93.184.216.34/hooks/openline']) {
    const dup = await post(org.api_key, { webhook_url, event_type: 'call_completed', workflow_id: 'wf_other' });
    t.equal(dup.status, 409, webhook_url);
    t.equal(dup.body.error.code, 'subscription_exists');
    t.equal(dup.body.error.fields.conflicts_with, id, 'fields.conflicts_with is the existing subscription');
    t.match(dup.body.error.fields.webhook_url, /already subscribed to call_completed/);
  }
  t.equal((await post(org.api_key, { webhook_url: PUBLIC, event_type: 'call_failed' })).status, 201, 'another event type');
  t.equal((await post(org.api_key, { webhook_url: PUBLIC + '?b=1', event_type: 'call_completed' })).status, 201, 'another URL');
  const other = await env.bootstrap();
  t.equal((await post(other.api_key, { webhook_url: PUBLIC, event_type: 'call_completed' })).status, 201, 'another organization');

  // A disabled subscription (410) still counts: the answer points at it, to be re-enabled.
  await env.db.none(`UPDATE webhook_subscriptions SET status = 'disabled', disabled_reason = 'gone', disabled_at = now() WHERE id = $1`, [id]);
  const disabledDup = await post(org.api_key, { webhook_url: PUBLIC, event_type: 'call_completed' });
  t.equal(disabledDup.status, 409);
  t.equal(disabledDup.body.error.fields.conflicts_with, id);
  // A deleted one does not.
  t.equal((await env.request('DELETE', `/api/v1/webhook_subscriptions/${id}`, { key: org.api_key })).status, 204);
  const again = await post(org.api_key, { webhook_url: PUBLIC, event_type: 'call_completed' });
  t.equal(again.status, 201, 'subscribable again once the first is deleted');
  t.not(again.body.data.id, id);

  // Concurrent duplicates: exactly one is created, the others name it.
  const url = PUBLIC + '/race';
  const rs = await Promise.all(Array.from({ length: 8 }, () => post(org.api_key, { webhook_url: url, event_type: 'sms_sent' })));
  const created = rs.filter((r) => r.status === 201);
  t.equal(created.length, 1, 'one 201');
  t.same(rs.filter((r) => r.status === 409).map((r) => r.body.error.fields.conflicts_with), Array(7).fill(created[0].body.data.id), 'seven 409s naming it');
  const { n } = await env.db.one(`SELECT count(*)::int AS n FROM webhook_subscriptions WHERE organization_id = $1 AND webhook_url = $2
    AND deleted_at IS NULL`, [org.organization_id, url]);
  t.equal(n, 1, 'one row');
  // The unique index backs the rule for writers that bypass the API.
  await t.rejects(env.db.none(`INSERT INTO webhook_subscriptions (id, organization_id, webhook_url, event_type, secret)
    VALUES ('whsub_sql_dup', $1, $2, 'sms_sent', 'whsec_x')`, [org.organization_id, url]), { code: '23505' });
});

t.test('at most 100 live subscriptions per organization: the next is 409 subscription_limit_exceeded, even under concurrency', async (t) => {
  const org = await env.bootstrap();
  // 95 existing subscriptions (written directly: the API is exercised for the last ones).
  await env.db.none(`INSERT INTO webhook_subscriptions (id, organization_id, webhook_url, event_type, secret)
    SELECT 'whsub_cap_' || i, $1, $2 || '/' || i, 'call_completed', 'whsec_x' FROM generate_series(1, 95) AS i`,
  [org.organization_id, PUBLIC]);
  const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => post(org.api_key, { webhook_url: `${PUBLIC}/new-${i}`, event_type: 'call_completed' })));
  t.equal(rs.filter((r) => r.status === 201).length, 5, 'five fit under the cap');
  const refused = rs.filter((r) => r.status === 409);
  t.equal(refused.length, 5, 'five are refused');
  for (const r of refused) {
    t.equal(r.body.error.code, 'subscription_limit_exceeded');
    t.match(r.body.error.message, /limit is 100/);
  }
  const live = async () => (await env.db.one('SELECT count(*)::int AS n FROM webhook_subscriptions WHERE organization_id = $1 AND deleted_at IS NULL',
    [org.organization_id])).n;
  t.equal(await live(), 100);
  // Disabled subscriptions count; deleted ones free a place.
  await env.db.none(`UPDATE webhook_subscriptions SET status = 'disabled' WHERE id = 'whsub_cap_1'`);
  t.equal((await post(org.api_key, { webhook_url: `${PUBLIC}/more`, event_type: 'call_completed' })).status, 409);
  t.equal((await env.request('DELETE', '/api/v1/webhook_subscriptions/whsub_cap_2', { key: org.api_key })).status, 204);
  t.equal((await post(org.api_key, { webhook_url: `${PUBLIC}/more`, event_type: 'call_completed' })).status, 201);
  t.equal(await live(), 100);
  const r = await env.request('GET', '/v1/openapi.json');
  t.match(r.body.paths['/api/v1/webhook_subscriptions'].post.responses['409'].description, /subscription_exists[^]*subscription_limit_exceeded/);
});

t.test('the OpenAPI document lists the webhook routes', async (t) => {
  const r = await env.request('GET', '/v1/openapi.json');
  for (const p of ['/api/v1/webhook_subscriptions', '/api/v1/webhook_subscriptions/{id}', '/api/v1/webhook_subscriptions/{id}/deliveries']) {
    t.ok(r.body.paths[p], p);
  }
  t.ok(r.body.paths['/api/v1/webhook_subscriptions'].post.responses['201']);
});
