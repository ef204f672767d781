import t from 'tap';
import { FRESH_CHECK_PRICE_CENTS } from '../../shared/caller-trust/prices.ts';
import { setLimits } from '../../shared/calls/limits.ts';
import { testEnv } from '../helpers/env.ts';
import { addNumber, counts, num } from './reputation-helpers.ts';

const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '0.01' } });
const org = await env.bootstrap({ org: 'Reputation Co', numbers: 0 });
const other = await env.bootstrap({ org: 'Other Co', numbers: 0 });
const key = org.api_key;
const path = (phone: string, fresh = false) => `/v1/caller-trust/reputation/numbers/${encodeURIComponent(phone)}${fresh ? '?fresh=true' : ''}`;

const LOW = num(201, 1111);
const TMO = num(201, 1117);
const DOUBLE = num(201, 1118);
const VZ_NONE = num(201, 1119);
const NONE = num(201, 1110);
for (const n of [LOW, TMO, DOUBLE, VZ_NONE, NONE]) await addNumber(env, org, n);
const OTHERS = num(202, 2228);
await addNumber(env, other, OTHERS);

t.test('cached evidence before any check: every carrier unavailable (null), free', async (t) => {
  const r = await env.request('GET', path(LOW), { key });
  t.equal(r.status, 200);
  t.same(r.body.data.carriers, {
    ATT: { risk_level: null, displayed_label: null, checked_at: null },
    TMOBILE: { risk_level: null, displayed_label: null, checked_at: null },
    VERIZON: { risk_level: null, displayed_label: null, checked_at: null },
  });
  t.equal(r.body.data.stale, true);
  t.equal(r.body.data.flagged, false);
  t.equal(r.body.refresh, undefined);
  t.match(await counts(env, org.organization_id), { charges: 0, lookups: 0 });
});

t.test('fresh=true asks the provider, charges once and writes the evidence; cached reads then return it free', async (t) => {
  const f = await env.request('GET', path(DOUBLE, true), { key });
  t.equal(f.status, 200, f.text);
  t.same(f.body.refresh, { charged: true, price_cents: FRESH_CHECK_PRICE_CENTS });
  t.match(f.body.data.carriers, {
    ATT: { risk_level: 'MEDIUM', displayed_label: 'Spam Risk', checked_at: String },
    TMOBILE: { risk_level: 'LOW', displayed_label: null },
    VERIZON: { risk_level: 'HIGH', displayed_label: 'Potential Spam' },
  });
  t.equal(f.body.data.flagged, true);
  t.equal(f.body.data.stale, false);
  t.equal(f.body.data.provider, 'sandbox');
  const c = await env.request('GET', path(DOUBLE), { key });
  t.same(c.body.data, f.body.data, 'the cached read answers what the refresh wrote');
  t.equal(c.body.refresh, undefined);
  const db = await env.db.any('SELECT carrier, risk_level, displayed_label, provider FROM number_reputation WHERE phone_id = $1 ORDER BY carrier', [f.body.data.phone_id]);
  t.same(db, [
    { carrier: 'ATT', risk_level: 'MEDIUM', displayed_label: 'Spam Risk', provider: 'sandbox' },
    { carrier: 'TMOBILE', risk_level: 'LOW', displayed_label: null, provider: 'sandbox' },
    { carrier: 'VERIZON', risk_level: 'HIGH', displayed_label: 'Potential Spam', provider: 'sandbox' },
  ], 'number_reputation keeps its meaning for Number Health');
  t.match(await counts(env, org.organization_id), { charges: 1, cents: FRESH_CHECK_PRICE_CENTS, lookups: 1, attempts: 1 });
  const spend = await env.db.one('SELECT cents::int FROM org_daily_spend WHERE organization_id = $1', [org.organization_id]);
  t.equal(spend.cents, FRESH_CHECK_PRICE_CENTS, 'added to the day\'s spend');
  // Within the paid window a repeat shares the refresh: no second charge, no second lookup.
  const again = await env.request('GET', path(DOUBLE, true), { key });
  t.same(again.body.refresh, { charged: false, price_cents: FRESH_CHECK_PRICE_CENTS });
  t.match(await counts(env, org.organization_id), { charges: 1, lookups: 1 });
});

t.test('null means unavailable: per carrier and on every carrier', async (t) => {
  const v = await env.request('GET', path(VZ_NONE, true), { key });
  t.match(v.body.data.carriers, { ATT: { risk_level: 'LOW' }, TMOBILE: { risk_level: 'LOW' }, VERIZON: { risk_level: null, displayed_label: null, checked_at: String } });
  t.equal(v.body.data.flagged, false);
  const n = await env.request('GET', path(NONE, true), { key });
  for (const c of ['ATT', 'TMOBILE', 'VERIZON']) t.equal(n.body.data.carriers[c].risk_level, null, `${c} unavailable`);
  t.equal(n.body.data.stale, false, 'checked, so not stale, though unavailable');
  const rows = await env.db.any('SELECT risk_level FROM number_reputation WHERE phone_id = $1', [n.body.data.phone_id]);
  t.same(rows.map((r) => r.risk_level), [null, null, null], 'stored as NULL, never as LOW');
});

t.test('ten concurrent fresh=true requests of one number: one lookup, one charge, one evidence', async (t) => {
  const before = await counts(env, org.organization_id);
  const rs = await Promise.all(Array.from({ length: 10 }, () => env.request('GET', path(TMO, true), { key })));
  t.same(rs.map((r) => r.status), Array(10).fill(200));
  t.equal(rs.filter((r) => r.body.refresh.charged).length, 1, 'exactly one request paid');
  t.equal(new Set(rs.map((r) => r.body.data.carriers.TMOBILE.checked_at)).size, 1, 'all answered with the same lookup');
  t.match(rs[0].body.data.carriers.TMOBILE, { risk_level: 'HIGH', displayed_label: 'Scam Likely' });
  const after = await counts(env, org.organization_id);
  t.equal(after.charges - before.charges, 1, 'one charge row');
  t.equal(after.cents - before.cents, FRESH_CHECK_PRICE_CENTS, 'charged once');
  t.equal(after.lookups - before.lookups, 1, 'one lookup');
  t.equal(after.attempts - before.attempts, 1, 'the provider asked once');
});

t.test('the daily spend cap refuses a paid refresh with 402 and asks nothing', async (t) => {
  const capped = await env.bootstrap({ org: 'Capped Co', numbers: 0 });
  const n = num(203, 3331);
  await addNumber(env, capped, n);
  await setLimits(env.db, capped.organization_id, { daily_spend_cap_cents: FRESH_CHECK_PRICE_CENTS - 1 });
  const r = await env.request('GET', path(n, true), { key: capped.api_key });
  t.equal(r.status, 402);
  t.equal(r.body.error.code, 'spend_cap_reached');
  t.equal(r.body.error.category, 'account_limit');
  t.match(await counts(env, capped.organization_id), { charges: 0, cents: 0, lookups: 0 });
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM number_reputation WHERE organization_id = $1', [capped.organization_id])).n, 0);
  t.equal((await env.request('GET', path(n), { key: capped.api_key })).status, 200, 'the cached read stays free');
  await setLimits(env.db, capped.organization_id, { daily_spend_cap_cents: FRESH_CHECK_PRICE_CENTS });
  const ok = await env.request('GET', path(n, true), { key: capped.api_key });
  t.equal(ok.status, 200, 'exactly the price fits under the cap');
  t.equal(ok.body.refresh.charged, true);
});

t.test('the list: filters, cursor pagination', async (t) => {
  const all = await env.request('GET', '/v1/caller-trust/reputation/numbers', { key });
  t.equal(all.status, 200);
  t.equal(all.body.data.length, 5);
  t.same(all.body.data.map((d: { phone_number: string }) => d.phone_number), [NONE, VZ_NONE, DOUBLE, TMO, LOW], 'newest number first');
  const q = async (qs: string) => (await env.request('GET', `/v1/caller-trust/reputation/numbers?${qs}`, { key })).body.data
    .map((d: { phone_number: string }) => d.phone_number).sort();
  t.same(await q('risk_level=HIGH'), [TMO, DOUBLE].sort());
  t.same(await q('risk_level=HIGH&carrier=VERIZON'), [DOUBLE]);
  t.same(await q('risk_level=MEDIUM&carrier=ATT'), [DOUBLE]);
  t.same(await q('risk_level=UNAVAILABLE'), [LOW, VZ_NONE, NONE].sort(), 'never-checked numbers are unavailable too');
  t.same(await q('risk_level=UNAVAILABLE&carrier=VERIZON'), [LOW, VZ_NONE, NONE].sort());
  t.same(await q('risk_level=UNAVAILABLE&carrier=ATT'), [LOW, NONE].sort());
  t.same(await q('flagged=true'), [TMO, DOUBLE].sort());
  t.same(await q('stale=true'), [LOW]);
  t.same(await q('stale=false'), [TMO, DOUBLE, VZ_NONE, NONE].sort());
  const p1 = await env.request('GET', '/v1/caller-trust/reputation/numbers?limit=2', { key });
  t.equal(p1.body.data.length, 2);
  t.ok(p1.body.meta.cursor);
  const p2 = await env.request('GET', `/v1/caller-trust/reputation/numbers?limit=2&cursor=${p1.body.meta.cursor}`, { key });
  const p3 = await env.request('GET', `/v1/caller-trust/reputation/numbers?limit=2&cursor=${p2.body.meta.cursor}`, { key });
  t.same([...p1.body.data, ...p2.body.data, ...p3.body.data].map((d: { phone_number: string }) => d.phone_number), [NONE, VZ_NONE, DOUBLE, TMO, LOW]);
  t.notOk(p3.body.meta.cursor, 'last page');
  const bad = await env.request('GET', '/v1/caller-trust/reputation/numbers?risk_level=SEVERE&carrier=SPRINT&stale=maybe', { key });
  t.equal(bad.status, 400);
  t.match(bad.body.error.fields, { risk_level: String, carrier: String, stale: String });
});

t.test('validation, tenant isolation and scopes', async (t) => {
  const bad = await env.request('GET', path('4155550123'), { key });
  t.equal(bad.status, 400);
  t.match(bad.body.error.fields, { phone: String });
  const badQ = await env.request('GET', `${path(LOW)}?fresh=maybe`, { key });
  t.equal(badQ.status, 400);
  t.match(badQ.body.error.fields, { fresh: String });
  const before = await counts(env, other.organization_id);
  const foreign = await env.request('GET', path(DOUBLE, true), { key: other.api_key });
  t.equal(foreign.status, 404, 'another organization\'s number is not found');
  t.equal((await env.request('GET', path(DOUBLE), { key: other.api_key })).status, 404);
  t.same(await counts(env, other.organization_id), before, 'and nothing was charged');
  const list = await env.request('GET', '/v1/caller-trust/reputation/numbers', { key: other.api_key });
  t.same(list.body.data.map((d: { phone_number: string }) => d.phone_number), [OTHERS], 'the list holds only the own numbers');
  t.equal((await env.request('GET', path(OTHERS), { key })).status, 404);

  const none = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['calls:read'] });
  for (const p of [path(LOW), path(LOW, true), '/v1/caller-trust/reputation/numbers']) {
    const r = await env.request('GET', p, { key: none.apiKey });
    t.equal(r.status, 403, p);
    t.equal(r.body.error.code, 'scope_missing');
  }
  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['caller_trust:read'] });
  t.equal((await env.request('GET', path(LOW), { key: ro.apiKey })).status, 200, 'caller_trust:read reads');
  t.equal((await env.request('GET', '/v1/caller-trust/reputation/numbers', { key: ro.apiKey })).status, 200);
});

t.test('one refresh of a number at a time: a paid refresh waits while another refresh holds the number', async (t) => {
  const { RefreshLock } = await import('../../shared/caller-trust/reputation/lock.ts');
  const { keyer } = await import('../../shared/redis.ts');
  const n = num(201, 1112);
  const phoneId = await addNumber(env, org, n);
  const lock = new RefreshLock(env.redis, keyer(env.config.redisPrefix));
  t.ok(await lock.acquire(phoneId, 'job:held-by-test'), 'the test holds the number as a background refresh would');
  t.notOk(await lock.acquire(phoneId, 'job:another'), 'a second holder is refused');
  let answered = false;
  const pending = env.request('GET', path(n, true), { key }).then((r) => { answered = true; return r; });
  await new Promise((r) => setTimeout(r, 500)); // a check of absence while the lock is held, not a timing assertion
  t.equal(answered, false, 'the paid refresh waits');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM reputation_lookups WHERE phone_id = $1', [phoneId])).n, 0, 'and has not asked the provider');
  await lock.release(phoneId, 'job:held-by-test');
  const r = await pending;
  t.equal(r.status, 200);
  t.equal(r.body.refresh.charged, true);
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM reputation_lookups WHERE phone_id = $1', [phoneId])).n, 1);
});
