// Tenancy: every read is scoped by the caller's organization. Two organizations with interleaved rows; neither
// key ever sees the other's numbers, totals, footprint, user or organization.
import t from 'tap';
import { availableSandboxNumbers } from '../../shared/numbers/inventory.ts';
import { insertPhoneNumber } from '../../shared/numbers/records.ts';
import { eventually, testEnv } from '../helpers/env.ts';

const env = await testEnv(t);
const a = await env.bootstrap({ org: 'Alpha Inc', numbers: 3 });
const b = await env.bootstrap({ org: 'Beta LLC', numbers: 5 });
// More rows for A after B's, so ids interleave and a keyset bug would cross organizations.
const extraA = await env.db.tx(async (tx) => {
  const nums = await availableSandboxNumbers(tx, '702', 2);
  for (const n of nums) await insertPhoneNumber(tx, { organizationId: a.organization_id, userId: a.user_id, phoneNumber: n, status: 'ACTIVE', cnamDisplayName: 'Alpha' });
  return nums;
});
const aNumbers = [...a.phone_numbers, ...extraA];

async function listAll(key: string, limit: number) {
  const out: any[] = [];
  let cursor: string | undefined;
  do {
    const r = await env.request('GET', `/v1/phone-numbers?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
    if (r.status !== 200) throw new Error(`list failed: ${r.status} ${r.text}`);
    out.push(...r.body.data);
    cursor = r.body.meta.cursor;
  } while (cursor);
  return out;
}

t.test('each key lists only its own organization\'s numbers', async (t) => {
  for (const limit of [100, 2]) {
    const la = await listAll(a.api_key, limit);
    t.same(la.map((n) => n.phone_number).sort(), [...aNumbers].sort(), `A sees exactly its 5 numbers (limit ${limit})`);
    t.ok(la.every((n) => n.organization_id === a.organization_id), 'every row is A\'s');
    const lb = await listAll(b.api_key, limit);
    t.same(lb.map((n) => n.phone_number).sort(), [...b.phone_numbers].sort(), `B sees exactly its 5 numbers (limit ${limit})`);
    t.ok(lb.every((n) => n.organization_id === b.organization_id), 'every row is B\'s');
  }
  const first = await env.request('GET', '/v1/phone-numbers', { key: a.api_key });
  t.equal(first.body.meta.total_results, 5, 'total counts own rows only');
});

t.test('a cursor carried to another organization leaks nothing', async (t) => {
  const pa = await env.request('GET', '/v1/phone-numbers?limit=1&order=asc', { key: a.api_key });
  const r = await env.request('GET', `/v1/phone-numbers?limit=100&cursor=${encodeURIComponent(pa.body.meta.cursor)}`, { key: b.api_key });
  t.equal(r.status, 200);
  t.ok(r.body.data.every((n: { organization_id: string }) => n.organization_id === b.organization_id), 'only B\'s rows');
});

t.test('account snapshot: footprint, user and organization are the caller\'s own', async (t) => {
  const ra = await env.request('GET', '/v1/account', { key: a.api_key });
  const rb = await env.request('GET', '/v1/account', { key: b.api_key });
  t.equal(ra.body.data.organization.id, a.organization_id);
  t.equal(ra.body.data.user.id, a.user_id);
  t.same(ra.body.data.footprint, { phone_numbers: 5, enrolled_reputation_numbers: 5, own_brand_enterprise: false });
  t.equal(rb.body.data.organization.id, b.organization_id);
  t.same(rb.body.data.footprint, { phone_numbers: 5, enrolled_reputation_numbers: 5, own_brand_enterprise: false });

  // Changing B's rows by hand (SQL, not the API) moves B's footprint, never A's. Such a change reaches the gateway
  // with the change notice, so it is eventually true; changes made through the API are read-your-writes
  // (test/accounts/account-cache.test.ts).
  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED' WHERE phone_number = $1`, [b.phone_numbers[0]]);
  await env.db.none(`UPDATE phone_numbers SET reputation_enrolled_at = NULL WHERE phone_number = $1`, [b.phone_numbers[1]]);
  const rb2 = await eventually(async () => {
    const r = await env.request('GET', '/v1/account', { key: b.api_key });
    return r.body.data.footprint.phone_numbers === 4 && r.body.data.footprint.enrolled_reputation_numbers === 3 && r;
  });
  const ra2 = await env.request('GET', '/v1/account', { key: a.api_key });
  t.same(ra2.body.data.footprint, { phone_numbers: 5, enrolled_reputation_numbers: 5, own_brand_enterprise: false });
  t.same(rb2.body.data.footprint, { phone_numbers: 4, enrolled_reputation_numbers: 3, own_brand_enterprise: false });
  const lb = await listAll(b.api_key, 100);
  t.equal(lb.length, 4);
});

t.test('GET /v1/me names the caller\'s user, organization and key', async (t) => {
  const k = await env.createKey({ organizationId: b.organization_id, userId: b.user_id, scopes: ['account:read'] });
  const r = await env.request('GET', '/v1/me', { key: k.apiKey });
  t.equal(r.body.data.organization.id, b.organization_id);
  t.equal(r.body.data.user.id, b.user_id);
  t.equal(r.body.data.api_key.id, k.apiKeyId);
  t.same(r.body.data.scopes, ['account:read']);
});

t.test('concurrent snapshots of several organizations each count their own rows', async (t) => {
  const c = await env.bootstrap({ org: 'Gamma', numbers: 7 });
  const d = await env.bootstrap({ org: 'Delta', numbers: 0 });
  const expected = new Map([[a.api_key, 5], [b.api_key, 4], [c.api_key, 7], [d.api_key, 0]]);
  const keys = [...expected.keys()];
  // Many requests at once, so the gateway's grouped footprint query serves several organizations together.
  const res = await Promise.all(Array.from({ length: 40 }, (_, i) => env.request('GET', '/v1/account', { key: keys[i % 4] })));
  res.forEach((r, i) => {
    t.equal(r.status, 200);
    t.equal(r.body.data.footprint.phone_numbers, expected.get(keys[i % 4]), `request ${i}: its own organization's count`);
  });
  // A release made by hand arrives with the change notice; once one request has seen it, every later one does.
  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED' WHERE phone_number = $1`, [c.phone_numbers[0]]);
  await eventually(async () => (await env.request('GET', '/v1/account', { key: c.api_key })).body.data.footprint.phone_numbers === 6);
  const after = await Promise.all(Array.from({ length: 10 }, () => env.request('GET', '/v1/account', { key: c.api_key })));
  t.ok(after.every((r) => r.body.data.footprint.phone_numbers === 6), 'every request after the release counts 6');
});
