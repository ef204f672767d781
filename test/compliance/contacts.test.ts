// Contacts CRUD with contact_created, consent records, opt-outs, call history counts, the Do-Not-Call list and the
// policy over HTTP: validation, 409 moves, tenant isolation and the scope of every route.
import t from 'tap';
import { lockRecipient } from '../../shared/contacts/opt-outs.ts';
import { DEFAULT_ALL_SCOPES, type Scope } from '../../shared/scopes.ts';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ org: 'Contacts Co' });
const other = await env.bootstrap({ org: 'Other Co' });
const key = org.api_key;
const keyWith = async (scopes: Scope[], o = org) => (await env.createKey({ organizationId: o.organization_id, userId: null, scopes })).apiKey;
const admin = await keyWith([...DEFAULT_ALL_SCOPES, 'compliance:write']);

t.test('create, read, change, list and delete a contact; contact_created in the outbox', async (t) => {
  const c = await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125550187', name: 'Dana', timezone: 'America/New_York', tags: ['vip'] } });
  t.equal(c.status, 201, c.text);
  const a = c.body.data;
  t.match(a, { phone_number: '+12125550187', name: 'Dana', timezone: 'America/New_York', tags: ['vip'] });
  const ev = await env.db.one(`SELECT event_type, organization_id, data FROM events WHERE event_type = 'contact_created' AND data->>'id' = $1`, [a.id]);
  t.same(ev, { event_type: 'contact_created', organization_id: org.organization_id, data: a }, 'the event carries the contact');

  const g = await env.request('GET', `/v1/contacts/${a.id}`, { key });
  t.equal(g.status, 200);
  t.match(g.body.data, { ...a, call_history: { total: 0, answered: 0, last_24_hours: 0, last_30_days: 0, last_called_at: null },
    opted_out: { call: false, sms: false }, on_dnc: false });

  const dup = await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125550187' } });
  t.equal(dup.status, 409);
  t.equal(dup.body.error.code, 'contact_exists');
  t.equal(dup.body.error.fields.conflicts_with, a.id);
  t.equal((await env.request('POST', '/v1/contacts', { key: other.api_key, body: { phone_number: '+12125550187' } })).status, 201,
    'another organization may have a contact with the same number');

  const p = await env.request('PATCH', `/v1/contacts/${a.id}`, { key, body: { timezone: null, tags: ['vip', 'patient'] } });
  t.equal(p.status, 200);
  t.match(p.body.data, { timezone: null, tags: ['vip', 'patient'], name: 'Dana' });
  const b = (await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+13125550142', tags: ['patient'] } })).body.data;
  t.equal((await env.request('PATCH', `/v1/contacts/${b.id}`, { key, body: { phone_number: '+12125550187' } })).body.error?.code, 'contact_exists');

  const all = await env.request('GET', '/v1/contacts', { key });
  t.same(all.body.data.map((x: { id: string }) => x.id), [b.id, a.id], 'newest first');
  t.same((await env.request('GET', '/v1/contacts?tag=vip', { key })).body.data.map((x: { id: string }) => x.id), [a.id]);
  t.same((await env.request('GET', '/v1/contacts?phone_number=%2B13125550142', { key })).body.data.map((x: { id: string }) => x.id), [b.id]);
  const page = await env.request('GET', '/v1/contacts?limit=1', { key });
  t.equal(page.body.data.length, 1);
  const next = await env.request('GET', `/v1/contacts?limit=1&cursor=${encodeURIComponent(page.body.meta.cursor)}`, { key });
  t.same(next.body.data.map((x: { id: string }) => x.id), [a.id], 'the cursor pages on');

  t.equal((await env.request('DELETE', `/v1/contacts/${b.id}`, { key })).status, 204);
  t.equal((await env.request('GET', `/v1/contacts/${b.id}`, { key })).status, 404);
  t.equal((await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+13125550142' } })).status, 201, 'the number is free again');
});

t.test('an Idempotency-Key replays the creation: one contact, one contact_created', async (t) => {
  const body = { phone_number: '+12125550110', name: 'Replay' };
  const headers = { 'idempotency-key': 'contact-create-1' };
  const a = await env.request('POST', '/v1/contacts', { key, body, headers });
  const b = await env.request('POST', '/v1/contacts', { key, body, headers });
  t.equal(a.status, 201);
  t.equal(b.status, 201);
  t.equal(b.headers['idempotency-replay'], 'true');
  t.same(b.body, a.body);
  const n = await env.db.one(`SELECT (SELECT count(*) FROM contacts WHERE phone_number = '+12125550110')::int AS contacts,
    (SELECT count(*) FROM events WHERE event_type = 'contact_created' AND data->>'phone_number' = '+12125550110')::int AS events`);
  t.same(n, { contacts: 1, events: 1 });
});

t.test('validation names each bad field and writes nothing', async (t) => {
  const before = (await env.db.one('SELECT count(*)::int AS n FROM contacts')).n;
  const r = await env.request('POST', '/v1/contacts', { key, body: { phone_number: '555-0100', tags: 'x', colour: 1 } });
  t.equal(r.status, 400);
  t.match(r.body.error.fields, { phone_number: String, tags: String, colour: 'is not a recognized field' });
  const tz = await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125550100', timezone: 'Mars/Olympus' } });
  t.equal(tz.status, 400);
  t.match(tz.body.error.fields, { timezone: /IANA/ });
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM contacts')).n, before, 'nothing written');
  const p = await env.request('PATCH', '/v1/compliance/policy', { key: admin, body: { call_window: { start: '22:00', end: '21:00' } } });
  t.equal(p.status, 400);
  t.match(p.body.error.fields, { 'call_window.end': /after/ });
  const d = await env.request('PATCH', '/v1/compliance/policy', { key: admin, body: { allowed_days: { days: ['someday'] }, frequency: { max_calls: 0 } } });
  t.equal(d.status, 400);
  t.ok(Object.keys(d.body.error.fields).length >= 2, JSON.stringify(d.body.error.fields));
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM compliance_policies')).n, 0, 'no policy written');
  const future = (await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125550101' } })).body.data;
  const f = await env.request('POST', `/v1/contacts/${future.id}/consents`, { key, body: { channel: 'call', source: 'x', captured_at: '2099-01-01T00:00:00Z' } });
  t.equal(f.status, 400);
  t.match(f.body.error.fields, { captured_at: /future/ });
});

t.test('consents: record, list, revoke once', async (t) => {
  const c = (await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125550102' } })).body.data;
  const r = await env.request('POST', `/v1/contacts/${c.id}/consents`, { key, body: { channel: 'call', source: 'web form', captured_at: '2026-11-01T10:00:00Z' } });
  t.equal(r.status, 201);
  t.match(r.body.data, { contact_id: c.id, channel: 'call', source: 'web form', status: 'active', captured_at: '2026-11-01T10:00:00.000Z', revoked_at: null });
  const s = (await env.request('POST', `/v1/contacts/${c.id}/consents`, { key, body: { channel: 'sms', source: 'keyword' } })).body.data;
  const l = await env.request('GET', `/v1/contacts/${c.id}/consents`, { key });
  t.same(l.body.data.map((x: { id: string }) => x.id), [s.id, r.body.data.id]);
  const rv = await env.request('DELETE', `/v1/contacts/${c.id}/consents/${r.body.data.id}`, { key });
  t.equal(rv.status, 200);
  t.match(rv.body.data, { status: 'revoked', revoked_at: String });
  const again = await env.request('DELETE', `/v1/contacts/${c.id}/consents/${r.body.data.id}`, { key });
  t.equal(again.status, 409);
  t.same([again.body.error.code, again.body.error.fields], ['state_conflict', { entity: 'contact_consent', status: 'revoked' }]);
  t.equal((await env.request('GET', `/v1/contacts/${c.id}/consents`, { key })).body.data.length, 2, 'revoked records are kept');
});

t.test('opt-outs: both channels, the SMS area\'s rows visible, opt back in', async (t) => {
  const c = (await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125550103' } })).body.data;
  const o = await env.request('POST', `/v1/contacts/${c.id}/opt-outs`, { key, body: { channel: 'call' } });
  t.equal(o.status, 201);
  t.match(o.body.data, { phone_number: '+12125550103', channel: 'call', source: 'api', status: 'active' });
  const same = await env.request('POST', `/v1/contacts/${c.id}/opt-outs`, { key, body: { channel: 'call' } });
  t.equal(same.status, 200, 'already opted out: the record in force');
  t.equal(same.body.data.id, o.body.data.id);
  // An SMS STOP written by the SMS area.
  await env.db.none(`INSERT INTO opt_outs (organization_id, phone_number, channel, source) VALUES ($1, '+12125550103', 'sms', 'sms_stop')`, [org.organization_id]);
  const l = await env.request('GET', `/v1/contacts/${c.id}/opt-outs`, { key });
  t.same(l.body.data.map((x: { channel: string; source: string }) => [x.channel, x.source]).sort(), [['call', 'api'], ['sms', 'sms_stop']]);
  t.match((await env.request('GET', `/v1/contacts/${c.id}`, { key })).body.data.opted_out, { call: true, sms: true });
  const back = await env.request('DELETE', `/v1/contacts/${c.id}/opt-outs/call`, { key });
  t.equal(back.status, 200);
  t.match(back.body.data, { channel: 'call', status: 'revoked' });
  const none = await env.request('DELETE', `/v1/contacts/${c.id}/opt-outs/call`, { key });
  t.equal(none.status, 409);
  t.same([none.body.error.code, none.body.error.fields], ['state_conflict', { entity: 'contact_opt_out', status: 'not_opted_out' }]);
  t.equal((await env.request('DELETE', `/v1/contacts/${c.id}/opt-outs/fax`, { key })).status, 400);
  t.match((await env.request('GET', `/v1/contacts/${c.id}`, { key })).body.data.opted_out, { call: false, sms: true });
  t.equal((await env.db.one(`SELECT count(*)::int AS n FROM opt_outs WHERE phone_number = '+12125550103'`)).n, 2, 'history kept');
});

t.test('an sms opt-out or opt-in through the API waits for the recipient\'s lock, as STOP does, and is stamped after it', async (t) => {
  const n = '+12125550108';
  const c = (await env.request('POST', '/v1/contacts', { key, body: { phone_number: n } })).body.data;
  const live = () => env.db.oneOrNone(`SELECT id FROM opt_outs WHERE organization_id = $1 AND phone_number = $2 AND channel = 'sms'
                                          AND revoked_at IS NULL`, [org.organization_id, n]);
  // Holds the lock an SMS hand-over to n holds while the request runs; answers when the lock was let go.
  const whileLocked = async (request: () => Promise<{ status: number; body: any }>) => {
    let pending!: Promise<{ status: number; body: any }>;
    let releasedAt!: Date;
    let before: unknown;
    await env.db.tx(async (tx) => {
      await lockRecipient(tx, org.organization_id, n);
      pending = request();
      await new Promise((r) => setTimeout(r, 300));
      before = await live();
      releasedAt = (await tx.one<{ at: Date }>('SELECT clock_timestamp() AS at')).at;
    });
    return { before, releasedAt, r: await pending };
  };
  const out = await whileLocked(() => env.request('POST', `/v1/contacts/${c.id}/opt-outs`, { key, body: { channel: 'sms' } }));
  t.equal(out.before, null, 'no opt-out while the lock is held');
  t.equal(out.r.status, 201);
  t.ok(new Date(out.r.body.data.created_at) >= out.releasedAt, 'created_at is taken after the lock');
  const back = await whileLocked(() => env.request('DELETE', `/v1/contacts/${c.id}/opt-outs/sms`, { key }));
  t.ok(back.before, 'still opted out while the lock is held');
  t.equal(back.r.status, 200);
  t.ok(new Date(back.r.body.data.revoked_at) >= back.releasedAt, 'revoked_at is taken after the lock');
});

t.test('call history counts of a contact', async (t) => {
  const c = (await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125550104' } })).body.data;
  const phone = await env.db.one('SELECT id FROM phone_numbers WHERE organization_id = $1 LIMIT 1', [org.organization_id]);
  const insert = (ago: string, picked: boolean) => env.db.none(
    `INSERT INTO calls (id, organization_id, type, from_number, to_number, phone_number_id, legs, channels, carrier, max_duration_seconds,
                        ring_timeout_seconds, price_cents_per_minute, picked_up, status, created_at)
     VALUES (ol_uuidv7(now() - $5::interval), $1, 'ai', $2, '+12125550104', $3, '{}', 1, 'sandbox', 60, 30, 1, $4, 'COMPLETED', now() - $5::interval)`,
    [org.organization_id, org.phone_numbers[0], phone.id, picked, ago]);
  await insert('1 hour', true);
  await insert('3 days', false);
  await insert('40 days', true);
  const h = (await env.request('GET', `/v1/contacts/${c.id}`, { key })).body.data.call_history;
  t.match(h, { total: 3, answered: 2, last_24_hours: 1, last_30_days: 2, last_called_at: String });
});

t.test('the Do-Not-Call list: add, list, remove', async (t) => {
  const a = await env.request('POST', '/v1/compliance/dnc', { key, body: { phone_number: '+12125550105', reason: 'asked' } });
  t.equal(a.status, 201);
  t.match(a.body.data, { phone_number: '+12125550105', reason: 'asked' });
  t.equal((await env.request('POST', '/v1/compliance/dnc', { key, body: { phone_number: '+12125550105' } })).status, 200, 'already listed');
  t.equal((await env.request('POST', '/v1/compliance/dnc', { key, body: { phone_number: '12125550105' } })).status, 400);
  const l = await env.request('GET', '/v1/compliance/dnc', { key });
  t.same(l.body.data.map((x: { phone_number: string }) => x.phone_number), ['+12125550105']);
  t.same((await env.request('GET', '/v1/compliance/dnc', { key: other.api_key })).body.data, [], 'per organization');
  t.equal((await env.request('DELETE', '/v1/compliance/dnc/%2B12125550105', { key: other.api_key })).status, 404, 'another organization cannot remove it');
  const c = (await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125550105' } })).body.data;
  t.equal((await env.request('GET', `/v1/contacts/${c.id}`, { key })).body.data.on_dnc, true);
  t.equal((await env.request('DELETE', '/v1/compliance/dnc/%2B12125550105', { key })).status, 204);
  t.equal((await env.request('DELETE', '/v1/compliance/dnc/%2B12125550105', { key })).status, 404, 'not listed any more');
  await env.request('POST', '/v1/compliance/dnc', { key, body: { phone_number: '+12125550109' } });
  t.equal((await env.request('DELETE', '/v1/compliance/dnc/+12125550109', { key })).status, 204, 'a literal + in the path works too');
  t.same((await env.request('GET', '/v1/compliance/dnc', { key })).body.data, []);
  t.equal((await env.db.one(`SELECT count(*)::int AS n FROM dnc_numbers WHERE phone_number = '+12125550105'`)).n, 1, 'kept as history');
});

t.test('the policy: read, change in parts, per organization', async (t) => {
  const p = await env.request('PATCH', '/v1/compliance/policy', { key: admin, body: { call_window: { enabled: true }, frequency: { enabled: true, max_calls: 5 } } });
  t.equal(p.status, 200, p.text);
  t.match(p.body.data, { call_window: { enabled: true, start: '08:00', end: '21:00' }, allowed_days: { enabled: false },
    frequency: { enabled: true, max_calls: 5, period_hours: 24 }, consent_required: false, updated_at: String });
  const q = await env.request('PATCH', '/v1/compliance/policy', { key: admin, body: { call_window: { start: '09:30', end: '24:00' }, consent_required: true } });
  t.match(q.body.data, { call_window: { enabled: true, start: '09:30', end: '24:00' }, frequency: { max_calls: 5 }, consent_required: true });
  t.same((await env.request('GET', '/v1/compliance/policy', { key })).body.data, q.body.data);
  t.match((await env.request('GET', '/v1/compliance/policy', { key: other.api_key })).body.data, { call_window: { enabled: false }, updated_at: null },
    'another organization keeps every rule off');
});

t.test('tenant isolation: another organization\'s contact is not_found everywhere', async (t) => {
  const c = (await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125550106' } })).body.data;
  const consent = (await env.request('POST', `/v1/contacts/${c.id}/consents`, { key, body: { channel: 'call', source: 'x' } })).body.data;
  await env.request('POST', `/v1/contacts/${c.id}/opt-outs`, { key, body: { channel: 'sms' } });
  const k = other.api_key;
  const tries: [string, string, unknown?][] = [
    ['GET', `/v1/contacts/${c.id}`], ['PATCH', `/v1/contacts/${c.id}`, { name: 'x' }], ['DELETE', `/v1/contacts/${c.id}`],
    ['GET', `/v1/contacts/${c.id}/consents`], ['POST', `/v1/contacts/${c.id}/consents`, { channel: 'call', source: 'x' }],
    ['DELETE', `/v1/contacts/${c.id}/consents/${consent.id}`], ['GET', `/v1/contacts/${c.id}/opt-outs`],
    ['POST', `/v1/contacts/${c.id}/opt-outs`, { channel: 'call' }], ['DELETE', `/v1/contacts/${c.id}/opt-outs/sms`],
  ];
  for (const [method, path, body] of tries) {
    const r = await env.request(method, path, { key: k, body });
    t.equal(r.status, 404, `${method} ${path}`);
  }
  t.notOk((await env.request('GET', '/v1/contacts', { key: k })).body.data.some((x: { id: string }) => x.id === c.id));
  t.equal((await env.request('GET', `/v1/contacts/${c.id}/consents`, { key })).body.data[0].status, 'active', 'nothing changed');
  t.equal((await env.request('GET', '/v1/contacts/not-a-uuid', { key })).status, 404);
});

t.test('scopes of every route', async (t) => {
  const c = (await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125550107' } })).body.data;
  const readOnly = await keyWith(['contacts:read']);
  const none = await keyWith(['account:read']);
  const reads: [string, string][] = [
    ['GET', '/v1/contacts'], ['GET', `/v1/contacts/${c.id}`], ['GET', `/v1/contacts/${c.id}/consents`],
    ['GET', `/v1/contacts/${c.id}/opt-outs`], ['GET', '/v1/compliance/dnc'], ['GET', '/v1/compliance/policy'],
  ];
  const writes: [string, string, unknown?][] = [
    ['POST', '/v1/contacts', { phone_number: '+12125550108' }], ['PATCH', `/v1/contacts/${c.id}`, { name: 'x' }],
    ['DELETE', `/v1/contacts/${c.id}`], ['POST', `/v1/contacts/${c.id}/consents`, { channel: 'call', source: 'x' }],
    ['DELETE', `/v1/contacts/${c.id}/consents/00000000-0000-7000-8000-000000000000`],
    ['POST', `/v1/contacts/${c.id}/opt-outs`, { channel: 'call' }], ['DELETE', `/v1/contacts/${c.id}/opt-outs/call`],
    ['POST', '/v1/compliance/dnc', { phone_number: '+12125550108' }], ['DELETE', '/v1/compliance/dnc/%2B12125550108'],
  ];
  const scopeMissing = async (k: string, method: string, path: string, body?: unknown) => {
    const r = await env.request(method, path, { key: k, body });
    t.equal(r.status, 403, `${method} ${path}`);
    t.equal(r.body.error?.code, 'scope_missing');
  };
  for (const [m, p] of reads) {
    await scopeMissing(none, m, p);
    t.equal((await env.request(m, p, { key: readOnly })).status, 200, `${m} ${p} with contacts:read`);
  }
  for (const [m, p, b] of writes) await scopeMissing(readOnly, m, p, b);
  // compliance:write: never granted by default, so the organization's default key cannot change the policy.
  await scopeMissing(key, 'PATCH', '/v1/compliance/policy', { consent_required: true });
  await scopeMissing(await keyWith(['contacts:write', 'contacts:read']), 'PATCH', '/v1/compliance/policy', { consent_required: true });
  t.equal((await env.request('PATCH', '/v1/compliance/policy', { key: await keyWith(['compliance:write']), body: { consent_required: false } })).status, 200);
});
