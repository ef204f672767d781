// Sending through the real workers and the sandbox SMS carrier: every outcome with its events, the charge, the
// spend cap, reading and filtering, credential bounds and ceilings, scopes and tenant isolation.
import t from 'tap';
import { setLimits } from '../../shared/calls/limits.ts';
import { insertOutbound } from '../../shared/sms/messages.ts';
import { eventually } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { deliveries, getMessage, send, smsEnv, subscribe, textingOrg, waitMessage } from './helpers.ts';

const { env } = await smsEnv(t);
const rx = await startReceiver(t);
const org = await textingOrg(env, { org: 'Acme Dental', numbers: 2 });
await subscribe(env, rx, org);
const other = await textingOrg(env, { org: 'Other Co' });

const PAYLOAD_KEYS = ['channel', 'created_at', 'direction', 'error_message', 'from_number', 'id', 'phone_number', 'provider_id', 'status'];

async function eventsOf(id: string, types: string[]) {
  return eventually(async () => {
    const out = types.map((ty) => deliveries(rx, ty, id));
    return out.every((d) => d.length === 1) ? out.map((d) => d[0]) : null;
  }, 60_000, 100);
}

t.test('delivered: queued -> sent -> delivered, sms_sent and sms_delivered with the reference payload, charged', async (t) => {
  const body = 'Your appointment is tomorrow at 10 AM. Reply STOP to opt out.';
  const r = await send(env, org, '+12125550187', body);
  t.equal(r.status, 202, r.text);
  const m = r.body.data;
  t.match(m, { phone_number: '+12125550187', from_number: org.from, to_number: '+12125550187', direction: 'outbound', status: 'queued',
    body, encoding: 'GSM-7', segments: 1, provider_id: null, error_message: null, channel: 'sms', sent_at: null, delivered_at: null });
  const done = await waitMessage(env, org, m.id, ['delivered']);
  t.match(done, { status: 'delivered', error_message: null });
  t.match(done.provider_id, /^SBX[0-9a-f]{32}$/);
  t.ok(done.sent_at && done.delivered_at && done.sent_at <= done.delivered_at);
  const [sent, delivered] = await eventsOf(m.id, ['sms_sent', 'sms_delivered']);
  t.same(Object.keys(sent.data).sort(), PAYLOAD_KEYS, 'exactly the reference payload');
  t.match(sent.data, { id: m.id, phone_number: '+12125550187', from_number: org.from, direction: 'outbound', status: 'sent',
    provider_id: done.provider_id, error_message: null, channel: 'sms', created_at: m.created_at });
  t.match(delivered.data, { id: m.id, status: 'delivered', error_message: null });
  t.same(deliveries(rx, 'sms_failed', m.id), []);
  const charge = await env.db.one(`SELECT * FROM spend_charges WHERE organization_id = $1 AND kind = 'sms' AND ref = $2`, [org.organization_id, m.id]);
  t.match(charge, { cents: 1, quantity: 1 });
});

t.test('a long UCS-2 body: its segments charged', async (t) => {
  const body = '😀 Rappel: votre rendez-vous est demain à 10h. ' + 'ж'.repeat(100);
  const r = await send(env, org, '+12125550190', body);
  t.equal(r.status, 202);
  t.match(r.body.data, { encoding: 'UCS-2', segments: 3 });
  await waitMessage(env, org, r.body.data.id, ['delivered']);
  const charge = await env.db.one(`SELECT cents, quantity FROM spend_charges WHERE ref = $1`, [r.body.data.id]);
  t.same(charge, { cents: 3, quantity: 3 });
});

t.test('failed at the carrier (0005, 0006): sms_failed with the carrier error, never sms_sent', async (t) => {
  for (const [to, error] of [['+12125550005', '30006: Landline or unreachable carrier'], ['+12125550006', '30007: Message filtered by the carrier']]) {
    const r = await send(env, org, to);
    const m = await waitMessage(env, org, r.body.data.id, ['failed']);
    t.match(m, { status: 'failed', error_message: error, sent_at: null });
    const [failed] = await eventsOf(m.id, ['sms_failed']);
    t.match(failed.data, { id: m.id, status: 'failed', error_message: error, phone_number: to });
    t.same(deliveries(rx, 'sms_sent', m.id), [], 'not accepted by the carrier: no sms_sent');
  }
});

t.test('undelivered (0004): sent, then sms_failed with status undelivered', async (t) => {
  const r = await send(env, org, '+12125550004');
  const m = await waitMessage(env, org, r.body.data.id, ['undelivered']);
  t.match(m, { status: 'undelivered', error_message: '30003: Unreachable destination handset', delivered_at: null });
  t.ok(m.sent_at);
  const [sent, failed] = await eventsOf(m.id, ['sms_sent', 'sms_failed']);
  t.equal(sent.data.status, 'sent');
  t.match(failed.data, { status: 'undelivered', error_message: '30003: Unreachable destination handset' });
});

t.test('slow delivery (0009): sent, delivered 60 sandbox seconds later', async (t) => {
  const r = await send(env, org, '+12125550009');
  const sent = await waitMessage(env, org, r.body.data.id, ['sent', 'delivered']);
  t.ok(sent.sent_at);
  const m = await waitMessage(env, org, r.body.data.id, ['delivered']);
  t.ok(Date.parse(m.delivered_at) - Date.parse(m.created_at) >= 60_000 * 0.01, 'delivered 60 scaled seconds after the hand-over, which followed acceptance');
});

t.test('spend cap: a message the cap refuses fails with spend_cap_reached', async (t) => {
  const capped = await textingOrg(env, { org: 'Capped Co' });
  await setLimits(env.db, capped.organization_id, { daily_spend_cap_cents: 2 });
  const ids: string[] = [];
  for (const to of ['+12125550111', '+12125550112', '+12125550113']) {
    const r = await send(env, capped, to);
    t.equal(r.status, 202);
    ids.push(r.body.data.id);
    await waitMessage(env, capped, r.body.data.id, ['delivered', 'failed']);
  }
  const [a, b, c] = await Promise.all(ids.map((id) => getMessage(env, capped, id)));
  t.equal(a.status, 'delivered');
  t.equal(b.status, 'delivered');
  t.match(c, { status: 'failed' });
  t.match(c.error_message, /^spend_cap_reached/);
  const spent = await env.db.one('SELECT cents FROM org_daily_spend WHERE organization_id = $1', [capped.organization_id]);
  t.equal(Number(spent.cents), 2, 'the cap counts SMS');
});

t.test('validation: each bad field named, nothing written', async (t) => {
  const before = (await env.db.one('SELECT count(*)::int AS n FROM sms_messages')).n;
  const bad = await env.request('POST', '/v1/sms/send', { key: org.api_key, body: { from_number: 'abc', to_number: '12', body: 'x' } });
  t.equal(bad.status, 400);
  t.match(bad.body.error.fields, { from_number: String, to_number: String });
  const missing = await env.request('POST', '/v1/sms/send', { key: org.api_key, body: { from_number: org.from, extra: 1 } });
  t.equal(missing.status, 400);
  t.match(missing.body.error.fields, { to_number: 'is required', body: 'is required', extra: String });
  const long = await send(env, org, '+12125550187', 'a'.repeat(1531));
  t.equal(long.status, 400);
  t.match(long.body.error.fields.body, /11 segments \(GSM-7\); at most 10/);
  const longUcs = await send(env, org, '+12125550187', 'ж'.repeat(671));
  t.equal(longUcs.status, 400, 'UCS-2 over 10 segments');
  t.equal((await send(env, org, '+12125550187', 'a'.repeat(1530))).status, 202, 'exactly 10 segments is accepted');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM sms_messages')).n, before + 1);
});

t.test('client-token bounds and key ceilings: 403 forbidden, nothing written', async (t) => {
  const before = (await env.db.one('SELECT count(*)::int AS n FROM sms_messages')).n;
  const minted = await env.request('POST', '/v1/client-tokens', { key: org.api_key,
    body: { from_numbers: [org.from], to_numbers: ['+12125550187'], scopes: ['sms:write', 'sms:read'] } });
  t.equal(minted.status, 201, minted.text);
  const token = minted.body.data.token;
  t.equal((await send(env, org, '+12125550187', 'Inside bounds. Reply STOP to opt out.', token)).status, 202, 'inside the bounds');
  const outTo = await send(env, org, '+12125550188', 'x', token);
  t.equal(outTo.status, 403);
  t.equal(outTo.body.error.code, 'forbidden');
  t.match(outTo.body.error.fields, { to_number: String });
  const outFrom = await env.request('POST', '/v1/sms/send', { key: token, body: { from_number: org.phone_numbers[1], to_number: '+12125550187', body: 'x' } });
  t.equal(outFrom.status, 403);
  t.match(outFrom.body.error.fields, { from_number: String });

  const ceiling = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['sms:write'],
    allowedFrom: [org.phone_numbers[1]], allowedTo: ['+12125550187'] });
  const c1 = await send(env, org, '+12125550187', 'x', ceiling.apiKey);
  t.equal(c1.status, 403, 'from outside the key ceiling');
  t.equal(c1.body.error.code, 'forbidden');
  const c2 = await env.request('POST', '/v1/sms/send', { key: ceiling.apiKey, body: { from_number: org.phone_numbers[1], to_number: '+12125550199', body: 'x' } });
  t.equal(c2.status, 403, 'to outside the key ceiling');
  t.equal((await env.request('POST', '/v1/sms/send', { key: ceiling.apiKey,
    body: { from_number: org.phone_numbers[1], to_number: '+12125550187', body: 'Inside. Reply STOP to opt out.' } })).status, 202);
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM sms_messages')).n, before + 2, 'only the two allowed sends were written');
});

t.test('list and read: filters, cursor, tenant isolation and scopes', async (t) => {
  const list = await env.request('GET', '/v1/sms/messages?limit=2', { key: org.api_key });
  t.equal(list.status, 200);
  t.equal(list.body.data.length, 2);
  t.ok(list.body.meta.cursor);
  const next = await env.request('GET', `/v1/sms/messages?limit=2&cursor=${encodeURIComponent(list.body.meta.cursor)}`, { key: org.api_key });
  t.equal(next.status, 200);
  t.ok(next.body.data[0].id < list.body.data[1].id, 'the next page continues newest first');
  const failed = await env.request('GET', '/v1/sms/messages?status=failed&limit=100', { key: org.api_key });
  t.ok(failed.body.data.length >= 2);
  t.ok(failed.body.data.every((m: any) => m.status === 'failed'));
  const byNumber = await env.request('GET', `/v1/sms/messages?phone_number=${encodeURIComponent('+12125550004')}`, { key: org.api_key });
  t.same(byNumber.body.data.map((m: any) => m.phone_number), ['+12125550004']);
  const byLocal = await env.request('GET', `/v1/sms/messages?local_number=${encodeURIComponent(org.phone_numbers[1])}&direction=outbound`, { key: org.api_key });
  t.ok(byLocal.body.data.length >= 1 && byLocal.body.data.every((m: any) => m.from_number === org.phone_numbers[1]));
  t.equal((await env.request('GET', '/v1/sms/messages?status=bogus', { key: org.api_key })).status, 400);

  const id = list.body.data[0].id;
  t.equal((await env.request('GET', `/v1/sms/messages/${id}`, { key: org.api_key })).status, 200);
  const foreign = await env.request('GET', `/v1/sms/messages/${id}`, { key: other.api_key });
  t.equal(foreign.status, 404, 'another organization\'s message is not found');
  t.equal(foreign.body.error.code, 'not_found');
  t.same((await env.request('GET', '/v1/sms/messages', { key: other.api_key })).body.data, [], 'another organization lists nothing of ours');
  t.equal((await env.request('GET', '/v1/sms/messages/not-a-uuid', { key: org.api_key })).status, 404);
  // Another organization cannot send from our number.
  const steal = await env.request('POST', '/v1/sms/send', { key: other.api_key, body: { from_number: org.from, to_number: '+12125550187', body: 'x' } });
  t.equal(steal.status, 403);
  t.same(steal.body.error.fields, { reason: 'no_sender', registration_status: 'approved' });

  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['sms:read'] });
  const wo = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['sms:write'] });
  const s = await send(env, org, '+12125550187', 'x', ro.apiKey);
  t.equal(s.status, 403);
  t.equal(s.body.error.code, 'scope_missing');
  for (const path of ['/v1/sms/messages', `/v1/sms/messages/${id}`]) {
    const r = await env.request('GET', path, { key: wo.apiKey });
    t.equal(r.status, 403, `${path} needs sms:read`);
    t.equal(r.body.error.code, 'scope_missing');
    t.equal((await env.request('GET', path, { key: ro.apiKey })).status, 200);
  }
});

t.test('a message whose send job was lost is re-enqueued by the workers\' sweep and delivered', async (t) => {
  // As if the gateway died between the commit and the enqueue: the row exists, no job does.
  const row = await insertOutbound(env.db, { organizationId: org.organization_id, local: org.from, remote: '+12125550177',
    body: 'Lost and found. Reply STOP to opt out.', encoding: 'GSM-7', segments: 1 });
  await env.db.none(`UPDATE sms_messages SET created_at = now() - interval '2 minutes' WHERE id = $1`, [row.id]);
  const m = await waitMessage(env, org, row.id, ['delivered'], 90_000);
  t.equal(m.status, 'delivered');
});

t.test('Idempotency-Key: a repeated send answers the same message and sends once', async (t) => {
  const headers = { 'idempotency-key': `sms-${Date.now()}` };
  const body = { from_number: org.from, to_number: '+12125550178', body: 'Once only. Reply STOP to opt out.' };
  const a = await env.request('POST', '/v1/sms/send', { key: org.api_key, body, headers });
  const b = await env.request('POST', '/v1/sms/send', { key: org.api_key, body, headers });
  t.equal(a.status, 202);
  t.equal(b.status, 202);
  t.equal(b.body.data.id, a.body.data.id, 'the same message');
  t.equal((await env.db.one(`SELECT count(*)::int AS n FROM sms_messages WHERE remote_number = '+12125550178'`)).n, 1, 'one row');
  const c = await env.request('POST', '/v1/sms/send', { key: org.api_key, body: { ...body, body: 'Different' }, headers });
  t.equal(c.status, 409);
  t.equal(c.body.error.code, 'idempotency_conflict');
});

t.test('a demo key texts only the sandbox\'s 555 numbers', async (t) => {
  const demo = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['sms:write'], isDemo: true });
  const out = await send(env, org, '+12127250187', 'x', demo.apiKey);
  t.equal(out.status, 403);
  t.equal(out.body.error.code, 'destination_blocked');
  t.match(out.body.error.fields, { to_number: String });
  t.equal((await send(env, org, '+12125550187', 'Demo. Reply STOP to opt out.', demo.apiKey)).status, 202);
});
