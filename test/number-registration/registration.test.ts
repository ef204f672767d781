// Number registration with the call-analytics providers: bulk submit with per-number results, validation that writes
// nothing, the sandbox provider's verdicts through the workers with their webhooks, resubmission after a rejection,
// withdrawal on release, tenant and scope isolation, and Number Health's SETUP_INCOMPLETE naming a missing registration.
import t from 'tap';
import { randomInt } from 'node:crypto';
import { eventually, testEnv, type TestEnv } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';

const EVENT = 'number_registration.status_changed';
// Phase 1 runs without the workers: submitted numbers stay pending.
const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '0.01', WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: '0.01' } });
const rx = await startReceiver(t);

type Org = Awaited<ReturnType<TestEnv['bootstrap']>> & { phones: { id: number; phone_number: string }[] };

/** An organization whose numbers end with the given two digits each (the sandbox decides by them). */
async function org(name: string, endings: string[]): Promise<Org> {
  const o = await env.bootstrap({ org: name, numbers: endings.length });
  const rows = await env.db.any<{ id: number }>('SELECT id FROM phone_numbers WHERE organization_id = $1 ORDER BY id', [o.organization_id]);
  const phones = [];
  for (const [i, r] of rows.entries()) {
    const phone_number = `+1628${randomInt(200, 1000)}${String(randomInt(0, 100)).padStart(2, '0')}${endings[i]}`;
    await env.db.none('UPDATE phone_numbers SET phone_number = $2 WHERE id = $1', [r.id, phone_number]);
    phones.push({ id: Number(r.id), phone_number });
  }
  const sub = await env.request('POST', '/api/v1/webhook_subscriptions', {
    key: o.api_key, body: { webhook_url: rx.url(`/${o.organization_id}`), event_type: EVENT } });
  if (sub.status !== 201) throw new Error(`subscribe: ${sub.status} ${sub.text}`);
  return { ...o, phones };
}

const submit = (o: Org, body: unknown, key = o.api_key, headers?: Record<string, string>) =>
  env.request('POST', '/v1/number-registration', { key, body, headers });
const read = async (o: Org, phoneId: number) => (await env.request('GET', `/v1/number-registration/${phoneId}`, { key: o.api_key })).body.data;
const waitStatus = (o: Org, phoneId: number, status: string) =>
  eventually(async () => (await env.db.oneOrNone('SELECT status FROM number_registrations WHERE phone_id = $1', [phoneId]))?.status === status, 60_000, 50);
const events = (o: Org, phoneId: number) => rx.unique(`/${o.organization_id}`).map((r) => r.body.data)
  .filter((d) => d.phone_id === phoneId).sort((a, b) => a.updated_at.localeCompare(b.updated_at));
const rowCount = async () => (await env.db.one('SELECT count(*)::int AS n FROM number_registrations')).n as number;
const BUSINESS = { business_name: 'Acme Dental LLC', ein: '12-3456789', call_purpose: 'appointment_reminders' };

const acme = await org('Acme Dental', ['21', '13', '14', '22']);
const [good, flagged13, flagged14, spare] = acme.phones;

async function approveEnterprise(o: Org) {
  await env.db.none(
    `INSERT INTO enterprise_registrations (id, organization_id, status, legal_name, ein, business_type, industry, website,
       registered_address, authorized_contact, phone_numbers, submitted_at, decided_at)
     VALUES (gen_random_uuid(), $1, 'APPROVED', 'Acme Dental Group LLC', '12-3456789', 'llc', 'healthcare', 'https://acme.example',
       '{"line1": "100 Main St", "city": "San Francisco", "state": "CA", "postal_code": "94105", "country": "US"}',
       '{"name": "Ann Lee", "title": "Owner", "email": "ann@acme.example", "phone": "+14155550100"}', $2, now(), now())`,
    [o.organization_id, o.phones.map((p) => p.phone_number)]);
}

t.test('bad input: 400 with fields, nothing written', async (t) => {
  const cases: [string, unknown, string[]][] = [
    ['not E.164', { phone_numbers: ['4155550123'], ...BUSINESS }, ['phone_numbers[0]']],
    ['not owned', { phone_ids: [good.id, 999_999_999], ...BUSINESS }, ['phone_ids[1]']],
    ['repeated', { phone_ids: [good.id, good.id], ...BUSINESS }, ['phone_ids[1]']],
    ['empty list', { phone_ids: [], ...BUSINESS }, ['phone_ids']],
    ['too many', { phone_ids: Array.from({ length: 1001 }, (_, i) => i + 1), ...BUSINESS }, ['phone_ids']],
    ['wrong types', { phone_ids: ['one'], ...BUSINESS }, ['phone_ids[0]']],
    ['no numbers', { ...BUSINESS }, ['phone_ids']],
    ['both lists', { phone_ids: [good.id], phone_numbers: [good.phone_number], ...BUSINESS }, ['phone_ids', 'phone_numbers']],
    ['bad EIN', { phone_ids: [good.id], business_name: 'Acme', ein: '123' }, ['ein']],
    ['no business and no approved enterprise registration', { phone_ids: [good.id] }, ['business_name', 'ein']],
    ['unknown call purpose', { phone_ids: [good.id], ...BUSINESS, call_purpose: 'pranks' }, ['call_purpose']],
  ];
  for (const [name, body, fields] of cases) {
    const r = await submit(acme, body);
    t.equal(r.status, 400, `${name}: 400`);
    t.equal(r.body.error?.code, 'validation_error', `${name}: validation_error`);
    for (const f of fields) t.ok(Object.keys(r.body.error?.fields ?? {}).some((k) => k === f || k.startsWith(`${f}`)), `${name}: fields name ${f} (${JSON.stringify(r.body.error?.fields)})`);
  }
  const prov = await env.db.one(`SELECT id FROM phone_numbers WHERE organization_id = $1 AND id = $2`, [acme.organization_id, spare.id]);
  await env.db.none(`UPDATE phone_numbers SET status = 'PROVISIONING' WHERE id = $1`, [prov.id]);
  const p = await submit(acme, { phone_ids: [good.id, spare.id], ...BUSINESS });
  t.equal(p.status, 400);
  t.match(p.body.error.fields, { 'phone_ids[1]': /PROVISIONING/ }, 'a provisioning number is refused');
  await env.db.none(`UPDATE phone_numbers SET status = 'ACTIVE' WHERE id = $1`, [prov.id]);
  t.equal(await rowCount(), 0, 'nothing written');
  t.equal((await env.db.one(`SELECT count(*)::int AS n FROM events WHERE event_type = $1`, [EVENT])).n, 0, 'no event');
});

t.test('a fresh number is not_registered; Number Health names the missing registration', async (t) => {
  t.match(await read(acme, good.id), { phone_id: good.id, phone_number: good.phone_number, status: 'not_registered', provider: null,
    rejection_reason: null, details: null, submitted_at: null, decided_at: null });
  const nh = (await env.request('GET', '/v1/number-health/numbers?limit=100', { key: acme.api_key })).body.data.find((n: any) => n.phone_id === good.id);
  t.equal(nh.evidence_state, 'SETUP_INCOMPLETE');
  t.ok(nh.identity.missing.includes('registration'), 'the fleet lists registration as missing');
  t.equal(nh.identity.registration_status, 'not_registered');
  t.match(nh.health_warning, /number registration/);
});

t.test('bulk submit: per-number results, pending, one event each, Idempotency-Key replays', async (t) => {
  const headers = { 'idempotency-key': `numreg-${acme.organization_id}` };
  const r = await submit(acme, { phone_ids: [good.id, flagged13.id, flagged14.id], ...BUSINESS }, acme.api_key, headers);
  t.equal(r.status, 202, '202');
  t.same(r.body.meta, { submitted: 3, already_pending: 0, already_registered: 0 });
  t.same(r.body.data.map((d: any) => [d.phone_id, d.result, d.registration.status]),
    [[good.id, 'submitted', 'pending'], [flagged13.id, 'submitted', 'pending'], [flagged14.id, 'submitted', 'pending']]);
  t.match(r.body.data[0].registration, { provider: 'sandbox', decided_at: null,
    details: { business_name: 'Acme Dental LLC', ein: '12-3456789', call_purpose: 'appointment_reminders', source: 'request', address: null } });
  const replay = await submit(acme, { phone_ids: [good.id, flagged13.id, flagged14.id], ...BUSINESS }, acme.api_key, headers);
  t.same(replay.body, r.body, 'the same Idempotency-Key replays the first answer');
  const again = await submit(acme, { phone_numbers: [good.phone_number, spare.phone_number], ...BUSINESS });
  t.equal(again.status, 202);
  t.same(again.body.data.map((d: any) => d.result), ['already_pending', 'submitted'], 'a pending number is reported, not resubmitted');
  const ev = await env.db.any(`SELECT data FROM events WHERE event_type = $1 AND organization_id = $2 ORDER BY id`, [EVENT, acme.organization_id]);
  t.equal(ev.length, 4, 'one event per submitted number, in the outbox');
  t.match(ev[0].data, { phone_id: good.id, status: 'pending', previous_status: 'not_registered', change: 'submitted' });
  const list = (await env.request('GET', '/v1/number-registration?status=pending&limit=2', { key: acme.api_key })).body;
  t.equal(list.meta.total_results, 4);
  t.equal(list.data.length, 2);
  const next = (await env.request('GET', `/v1/number-registration?status=pending&limit=2&cursor=${encodeURIComponent(list.meta.cursor)}`, { key: acme.api_key })).body;
  t.same([...list.data, ...next.data].map((d: any) => d.phone_id), [spare.id, flagged14.id, flagged13.id, good.id], 'newest first, paged');
  t.same((await env.request('GET', '/v1/number-registration?status=registered', { key: acme.api_key })).body.data, []);
});

t.test('another organization sees and touches nothing; scopes', async (t) => {
  const other = await org('Other Co', ['31']);
  const r404 = await env.request('GET', `/v1/number-registration/${good.id}`, { key: other.api_key });
  t.equal(r404.status, 404);
  t.equal(r404.body.error.code, 'not_found');
  const list = (await env.request('GET', '/v1/number-registration', { key: other.api_key })).body;
  t.same(list.data.map((d: any) => d.phone_id), [other.phones[0].id], 'only its own numbers');
  const foreign = await submit(other, { phone_ids: [good.id], ...BUSINESS });
  t.equal(foreign.status, 400);
  t.ok(foreign.body.error.fields['phone_ids[0]'], 'another organization\'s number is not one it holds');
  const ro = await env.createKey({ organizationId: acme.organization_id, userId: null, scopes: ['caller_trust:read'] });
  const w = await submit({ ...acme, api_key: ro.apiKey }, { phone_ids: [good.id], ...BUSINESS });
  t.equal(w.status, 403);
  t.equal(w.body.error.code, 'scope_missing');
  t.equal((await env.request('GET', '/v1/number-registration', { key: ro.apiKey })).status, 200);
  const none = await env.createKey({ organizationId: acme.organization_id, userId: null, scopes: ['calls:read'] });
  for (const p of ['/v1/number-registration', `/v1/number-registration/${good.id}`]) {
    const g = await env.request('GET', p, { key: none.apiKey });
    t.equal(g.status, 403, `${p}: 403`);
    t.equal(g.body.error.code, 'scope_missing');
  }
});

t.test('with the workers: verdicts, webhooks, resubmission, withdrawal', async (t) => {
  const workers = env.spawn('workers');
  await workers.ready();
  t.teardown(() => workers.kill());

  await t.test('pending -> registered and -> rejected, each with its webhook', async (t) => {
    await waitStatus(acme, good.id, 'registered');
    await waitStatus(acme, flagged13.id, 'rejected');
    await waitStatus(acme, flagged14.id, 'rejected');
    const g = await read(acme, good.id);
    t.match(g, { status: 'registered', rejection_reason: null });
    t.ok(g.decided_at);
    t.match(await read(acme, flagged13.id), { status: 'rejected', rejection_reason: { code: 'business_unverified', message: /business/ } });
    t.match(await read(acme, flagged14.id), { status: 'rejected', rejection_reason: { code: 'number_ownership_unverified' } });
    await eventually(async () => events(acme, good.id).length >= 2 && events(acme, flagged13.id).length >= 2, 60_000);
    t.same(events(acme, good.id).map((e) => `${e.previous_status}->${e.status}`), ['not_registered->pending', 'pending->registered']);
    t.match(events(acme, flagged13.id)[1], { status: 'rejected', previous_status: 'pending', change: 'decided',
      rejection_reason: { code: 'business_unverified' }, organization_id: acme.organization_id, phone_number: flagged13.phone_number });
    const nh = (await env.request('GET', '/v1/number-health/numbers?limit=100', { key: acme.api_key })).body.data.find((n: any) => n.phone_id === good.id);
    t.notOk(nh.identity.missing.includes('registration'), 'registered: Number Health no longer names it');
    t.equal(nh.identity.registration_status, 'registered');
    t.notMatch(nh.health_warning ?? '', /number registration/);
    const mixed = await submit(acme, { phone_ids: [good.id, spare.id], ...BUSINESS });
    t.equal(mixed.body.data[0].result, 'already_registered', 'a registered number is reported, not resubmitted');
  });

  await t.test('resubmit after rejection: with the APPROVED enterprise registration it registers', async (t) => {
    await approveEnterprise(acme);
    const r = await submit(acme, { phone_ids: [flagged13.id] });
    t.equal(r.status, 202, '202');
    t.same(r.body.meta, { submitted: 1, already_pending: 0, already_registered: 0 });
    t.match(r.body.data[0].registration, { status: 'pending', rejection_reason: null,
      details: { business_name: 'Acme Dental Group LLC', source: 'enterprise_registration', address: /100 Main St/, call_purpose: 'customer_service' } });
    await waitStatus(acme, flagged13.id, 'registered');
    await eventually(async () => events(acme, flagged13.id).length >= 4, 60_000);
    t.same(events(acme, flagged13.id).map((e) => `${e.previous_status}->${e.status}`),
      ['not_registered->pending', 'pending->rejected', 'rejected->pending', 'pending->registered'], 'one event per change, in order');
  });

  await t.test('a released number\'s registration is withdrawn', async (t) => {
    const rel = await env.request('DELETE', `/v1/phone-numbers/${good.id}`, { key: acme.api_key });
    t.equal(rel.status, 200, rel.text);
    const g = await read(acme, good.id);
    t.match(g, { status: 'not_registered', rejection_reason: null });
    t.ok(g.withdrawn_at, 'withdrawn_at set');
    t.notOk((await env.request('GET', '/v1/number-registration', { key: acme.api_key })).body.data.some((d: any) => d.phone_id === good.id),
      'a released number leaves the list');
    await eventually(async () => events(acme, good.id).length >= 3, 60_000);
    t.match(events(acme, good.id)[2], { previous_status: 'registered', status: 'not_registered', change: 'number_released' });
    const again = await submit(acme, { phone_ids: [good.id], ...BUSINESS });
    t.equal(again.status, 400, 'a released number cannot be submitted');
  });
});
