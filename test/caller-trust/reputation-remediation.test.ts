import t from 'tap';
import { REMEDIATION_PRICE_CENTS } from '../../shared/caller-trust/prices.ts';
import { setLimits } from '../../shared/calls/limits.ts';
import { eventually, testEnv } from '../helpers/env.ts';
import { addNumber, num } from './reputation-helpers.ts';

// SANDBOX_TIME_SCALE 0.05: a case goes in_review 100 ms after it is filed and is decided 250 ms later. The background
// scan (which also re-queues lost remediation pollers) runs every 300 ms.
const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '0.05', REPUTATION_SCAN_MS: '300' } });
const workers = env.spawn('workers');
await workers.ready(60_000);
const org = await env.bootstrap({ org: 'Remedy Co', numbers: 0 });
const other = await env.bootstrap({ org: 'Other Co', numbers: 0 });
const key = org.api_key;
await setLimits(env.db, org.organization_id, { daily_spend_cap_cents: 100_000 });

const FLAGGED = num(301, 1118); // ATT MEDIUM, VERIZON HIGH
const REJECTED = num(301, 1177); // TMOBILE HIGH; the sandbox rejects remediation of numbers ending in 77
const CLEAN = num(301, 1111);
const UNCHECKED = num(301, 1128);
for (const n of [FLAGGED, REJECTED, CLEAN, UNCHECKED]) await addNumber(env, org, n);
// Not enrolled: the background refresh leaves it unchecked.
await env.db.none('UPDATE phone_numbers SET reputation_enrolled_at = NULL WHERE phone_number = $1', [UNCHECKED]);
const rep = (phone: string, fresh = false) => env.request('GET', `/v1/caller-trust/reputation/numbers/${encodeURIComponent(phone)}${fresh ? '?fresh=true' : ''}`, { key });
const open = (body: unknown, k = key) => env.request('POST', '/v1/caller-trust/reputation/remediations', { key: k, body });
const caseOf = (id: string, k = key) => env.request('GET', `/v1/caller-trust/reputation/remediations/${id}`, { key: k });
const remediationCharges = async () => (await env.db.one(
  `SELECT count(*)::int AS n, COALESCE(sum(cents), 0)::int AS cents FROM spend_charges WHERE organization_id = $1 AND kind = 'remediation'`, [org.organization_id]));

for (const n of [FLAGGED, REJECTED, CLEAN]) {
  const r = await rep(n, true);
  if (r.status !== 200) throw new Error(`refresh of ${n} failed: ${r.text}`);
}

t.test('only flagged numbers, and own_brand only with an approved enterprise', async (t) => {
  const clean = await open({ phone_number: CLEAN, kind: 'umbrella' });
  t.equal(clean.status, 409);
  t.equal(clean.body.error.code, 'number_not_flagged');
  const unchecked = await open({ phone_number: UNCHECKED, kind: 'umbrella' });
  t.equal(unchecked.body.error.code, 'number_not_flagged', 'no evidence is not a flag');
  const own = await open({ phone_number: FLAGGED, kind: 'own_brand' });
  t.equal(own.status, 409);
  t.equal(own.body.error.code, 'own_brand_not_approved');
  t.same(await remediationCharges(), { n: 0, cents: 0 }, 'refusals are not charged');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM reputation_remediations')).n, 0);
  const bad = await open({ phone_number: '555-0100', kind: 'premium', extra: 1 });
  t.equal(bad.status, 400);
  t.match(bad.body.error.fields, { kind: String, extra: String });
  const badPhone = await open({ phone_number: '555-0100', kind: 'umbrella' });
  t.equal(badPhone.status, 400);
  t.match(badPhone.body.error.fields, { phone_number: String });
});

t.test('an umbrella case: open -> in_review -> resolved; the flag clears on the next refresh', async (t) => {
  const c = await open({ phone_number: FLAGGED, kind: 'umbrella' });
  t.equal(c.status, 201, c.text);
  t.match(c.body.data, { phone_number: FLAGGED, kind: 'umbrella', status: 'open', carriers: ['ATT', 'VERIZON'],
    price_cents: REMEDIATION_PRICE_CENTS.umbrella, rejection_reason: null, in_review_at: null, closed_at: null });
  t.same(await remediationCharges(), { n: 1, cents: REMEDIATION_PRICE_CENTS.umbrella }, 'charged once');
  const dup = await open({ phone_number: FLAGGED, kind: 'umbrella' });
  t.equal(dup.status, 409);
  t.equal(dup.body.error.code, 'remediation_in_progress');
  t.match(dup.body.error.message, c.body.data.id);
  t.same(await remediationCharges(), { n: 1, cents: REMEDIATION_PRICE_CENTS.umbrella }, 'the refused second case is not charged');

  const seen = new Set<string>();
  const done = await eventually(async () => {
    const r = await caseOf(c.body.data.id);
    seen.add(r.body.data.status);
    return r.body.data.status === 'resolved' ? r.body.data : null;
  }, 60_000, 20);
  t.ok(done.in_review_at, 'went through review');
  t.ok(done.closed_at);
  t.ok(Date.parse(done.in_review_at) <= Date.parse(done.closed_at));
  t.notOk(seen.has('rejected'));
  const events = await env.db.any(
    `SELECT organization_id, data FROM events WHERE event_type = 'reputation.remediation.updated' AND data->>'id' = $1 ORDER BY id`, [c.body.data.id]);
  t.same(events.map((e) => [e.data.previous_status, e.data.status]), [['open', 'in_review'], ['in_review', 'resolved']],
    'one reputation.remediation.updated event per move, through the outbox');
  t.ok(events.every((e) => e.organization_id === org.organization_id && e.data.phone_number === FLAGGED && e.data.occurred_at));

  const cached = await rep(FLAGGED);
  t.equal(cached.body.data.flagged, true, 'the cached evidence still shows the flag until the next refresh');
  // The next refresh: past the 60-second window in which a paid refresh answers repeats (moved back, not waited).
  await env.db.none(`UPDATE reputation_lookups SET completed_at = completed_at - interval '2 minutes' WHERE phone_id = $1`, [cached.body.data.phone_id]);
  // (Only the lookups were moved back, not the clock: the charge ref of this minute's paid check is taken, so this
  // refresh is not charged again; charging is tested in reputation.test.ts.)
  const fresh = await rep(FLAGGED, true);
  t.equal(fresh.status, 200);
  t.match(fresh.body.data.carriers, { ATT: { risk_level: 'LOW', displayed_label: null }, VERIZON: { risk_level: 'LOW' } });
  t.equal(fresh.body.data.flagged, false);
  t.equal((await open({ phone_number: FLAGGED, kind: 'umbrella' })).body.error.code, 'number_not_flagged', 'a resolved number is no longer flagged');
});

t.test('an own_brand case under an approved enterprise, rejected by the provider', async (t) => {
  await env.db.none('UPDATE organizations SET own_brand_enterprise = true WHERE id = $1', [org.organization_id]);
  const c = await open({ phone_number: REJECTED, kind: 'own_brand' });
  t.equal(c.status, 201, c.text);
  t.match(c.body.data, { kind: 'own_brand', status: 'open', carriers: ['TMOBILE'], price_cents: REMEDIATION_PRICE_CENTS.own_brand });
  const done = await eventually(async () => {
    const r = await caseOf(c.body.data.id);
    return r.body.data.status === 'rejected' ? r.body.data : null;
  }, 60_000, 20);
  t.match(done.rejection_reason, /77/);
  t.ok(done.in_review_at);
  const events = await env.db.any(`SELECT data FROM events WHERE event_type = 'reputation.remediation.updated' AND data->>'id' = $1 ORDER BY id`, [c.body.data.id]);
  t.same(events.map((e) => e.data.status), ['in_review', 'rejected']);
  t.match(events[1].data, { rejection_reason: /77/, previous_status: 'in_review' });
  await env.db.none(`UPDATE reputation_lookups SET completed_at = completed_at - interval '2 minutes' WHERE organization_id = $1`, [org.organization_id]);
  t.match((await rep(REJECTED, true)).body.data.carriers.TMOBILE, { risk_level: 'HIGH' }, 'a rejected case leaves the flag');
  const again = await open({ phone_number: REJECTED, kind: 'umbrella' });
  t.equal(again.status, 201, 'a closed case does not block a new one');
});

t.test('an Idempotency-Key replays the case: one case, one charge', async (t) => {
  const n = num(301, 1138);
  await addNumber(env, org, n);
  t.equal((await rep(n, true)).status, 200);
  const before = await remediationCharges();
  const send = () => env.request('POST', '/v1/caller-trust/reputation/remediations',
    { key, body: { phone_number: n, kind: 'umbrella' }, headers: { 'idempotency-key': `case-${n}` } });
  const [a, b] = [await send(), await send()];
  t.equal(a.status, 201);
  t.equal(b.status, 201, 'the replay answers the same');
  t.equal(b.body.data.id, a.body.data.id);
  const after = await remediationCharges();
  t.equal(after.n - before.n, 1, 'charged once');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM reputation_remediations WHERE phone_number = $1', [n])).n, 1);
});

t.test('a case whose poller was lost is picked up again by the background scan', async (t) => {
  const n = num(301, 1148);
  const phoneId = await addNumber(env, org, n);
  t.equal((await rep(n, true)).status, 200);
  // A case as a crash would leave it: committed, no job in Redis.
  const id = '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f42';
  await env.db.none(`INSERT INTO reputation_remediations (id, organization_id, phone_id, phone_number, kind, carriers, provider, cents, updated_at)
    VALUES ($1, $2, $3, $4, 'umbrella', '{ATT,VERIZON}', 'sandbox', 0, now() - interval '1 minute')`, [id, org.organization_id, phoneId, n]);
  const done = await eventually(async () => {
    const r = await caseOf(id);
    return r.body.data.status === 'resolved' ? r.body.data : null;
  }, 60_000, 50);
  t.ok(done.in_review_at, 'filed with the provider and moved through review');
});

t.test('list and filters', async (t) => {
  const all = await env.request('GET', '/v1/caller-trust/reputation/remediations', { key });
  t.equal(all.status, 200);
  t.equal(all.body.data.length, 5);
  t.same(all.body.data.map((c: { phone_number: string }) => c.phone_number), [num(301, 1138), REJECTED, REJECTED, FLAGGED, num(301, 1148)],
    'newest first (the case inserted by hand has an older id)');
  const resolved = await env.request('GET', '/v1/caller-trust/reputation/remediations?status=resolved', { key });
  const resolvedNumbers = resolved.body.data.map((c: { phone_number: string }) => c.phone_number);
  t.ok(resolved.body.data.every((c: { status: string }) => c.status === 'resolved'), 'only resolved cases');
  t.ok(resolvedNumbers.includes(FLAGGED) && resolvedNumbers.includes(num(301, 1148)) && !resolvedNumbers.includes(REJECTED), resolvedNumbers.join(' '));
  const byNumber = await env.request('GET', `/v1/caller-trust/reputation/remediations?phone_number=${encodeURIComponent(REJECTED)}&limit=1`, { key });
  t.equal(byNumber.body.data.length, 1);
  const next = await env.request('GET', `/v1/caller-trust/reputation/remediations?phone_number=${encodeURIComponent(REJECTED)}&limit=1&cursor=${byNumber.body.meta.cursor}`, { key });
  t.equal(next.body.data.length, 1);
  t.not(next.body.data[0].id, byNumber.body.data[0].id);
  t.equal((await env.request('GET', '/v1/caller-trust/reputation/remediations?status=closed', { key })).status, 400);
});

t.test('the spend cap refuses a case with 402 and writes nothing', async (t) => {
  const capped = await env.bootstrap({ org: 'Capped Co', numbers: 0 });
  const n = num(302, 2228);
  await addNumber(env, capped, n);
  await setLimits(env.db, capped.organization_id, { daily_spend_cap_cents: 100 });
  t.equal((await env.request('GET', `/v1/caller-trust/reputation/numbers/${encodeURIComponent(n)}?fresh=true`, { key: capped.api_key })).status, 200);
  const r = await open({ phone_number: n, kind: 'umbrella' }, capped.api_key);
  t.equal(r.status, 402);
  t.equal(r.body.error.code, 'spend_cap_reached');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM reputation_remediations WHERE organization_id = $1', [capped.organization_id])).n, 0);
  t.equal((await env.db.one(`SELECT count(*)::int AS n FROM spend_charges WHERE organization_id = $1 AND kind = 'remediation'`, [capped.organization_id])).n, 0);
});

t.test('tenant isolation and scopes', async (t) => {
  const [mine] = (await env.request('GET', '/v1/caller-trust/reputation/remediations', { key })).body.data;
  t.equal((await caseOf(mine.id, other.api_key)).status, 404, 'another organization\'s case is not found');
  t.same((await env.request('GET', '/v1/caller-trust/reputation/remediations', { key: other.api_key })).body.data, []);
  t.equal((await open({ phone_number: REJECTED, kind: 'umbrella' }, other.api_key)).status, 404, 'another organization\'s number is not found');
  t.equal((await caseOf('not-a-uuid')).status, 404);
  t.equal((await caseOf('00000000-0000-7000-8000-000000000000')).status, 404);
  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['caller_trust:read'] });
  const w = await open({ phone_number: FLAGGED, kind: 'umbrella' }, ro.apiKey);
  t.equal(w.status, 403);
  t.equal(w.body.error.code, 'scope_missing');
  t.equal((await caseOf(mine.id, ro.apiKey)).status, 200);
  const none = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['calls:read'] });
  for (const p of ['/v1/caller-trust/reputation/remediations', `/v1/caller-trust/reputation/remediations/${mine.id}`]) {
    const r = await env.request('GET', p, { key: none.apiKey });
    t.equal(r.status, 403, p);
    t.equal(r.body.error.code, 'scope_missing');
  }
  const rw = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['caller_trust:write'] });
  t.equal((await open({ phone_number: CLEAN, kind: 'umbrella' }, rw.apiKey)).status, 409, 'caller_trust:write opens (here: refused as not flagged)');
});
