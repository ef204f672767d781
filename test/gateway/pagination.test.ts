// Cursor pagination on GET /v1/phone-numbers: limit bounds, default size, order, following meta.cursor through
// every page, tampered / foreign / expired cursors (the gateway's clock is injected), and the item shape.
import t from 'tap';
import { Cursors, CURSOR_TTL_MS } from '../../shared/pagination.ts';
import { isE164 } from '../../shared/phone/e164.ts';
import { testEnv } from '../helpers/env.ts';

let offsetMs = 0;
const clock = { now: () => Date.now() + offsetMs };
const env = await testEnv(t, { clock });
const TOTAL = 45;
const org = await env.bootstrap({ org: 'Paging Co', numbers: TOTAL, scopes: ['phone_numbers:read'] });
const key = org.api_key;
const { secret } = await env.db.one(`SELECT secret FROM server_secrets WHERE name = 'cursor'`);
const list = (qs = '') => env.request('GET', `/v1/phone-numbers${qs}`, { key });
const allIds: number[] = (await env.db.any('SELECT id FROM phone_numbers WHERE organization_id = $1 ORDER BY id DESC',
  [org.organization_id])).map((r) => r.id);

t.afterEach(() => { offsetMs = 0; });

function badCursor(t: { equal: Function; ok: Function }, r: { status: number; body: any }, why: string, field = 'cursor') {
  t.equal(r.status, 400, `${why}: 400`);
  t.equal(r.body?.error?.code, 'validation_error', `${why}: validation_error`);
  t.ok(r.body?.error?.fields?.[field], `${why}: fields.${field} explains (${JSON.stringify(r.body?.error?.fields)})`);
}

t.test('default page: 20 items, newest first, list envelope with cursor and total', async (t) => {
  const r = await list();
  t.equal(r.status, 200);
  t.same(Object.keys(r.body).sort(), ['data', 'meta']);
  t.equal(r.body.data.length, 20);
  t.equal(r.body.meta.page_size, 20);
  t.equal(r.body.meta.total_results, TOTAL);
  t.type(r.body.meta.cursor, 'string');
  t.same(r.body.data.map((n: { id: number }) => n.id), allIds.slice(0, 20), 'newest first (descending creation order)');
  const created = r.body.data.map((n: { created_at: string }) => Date.parse(n.created_at));
  t.ok(created.every((c: number, i: number) => i === 0 || c <= created[i - 1]), 'created_at never increases');
});

t.test('item shape: every field of the reference plus status, texting_status, source, inbound and sub_entity_id', async (t) => {
  const r = await list('?limit=1');
  const n = r.body.data[0];
  t.same(Object.keys(n).sort(), ['cnam_display_name', 'cnam_rejection_reason', 'cnam_status', 'created_at', 'id', 'is_active', 'iso_country', 'name',
    'organization_id', 'phone_number', 'provider', 'reputation_enrolled_at', 'source', 'inbound', 'status', 'sub_entity_id', 'texting_status', 'user_id'].sort());
  t.equal(n.source, 'purchased', 'bootstrap numbers are bought (imported ones: test/numbers/import.test.ts)');
  t.equal(n.status, 'ACTIVE', 'the lifecycle status is listed (is_active is derived from it)');
  t.type(n.id, 'number');
  t.ok(Number.isInteger(n.id));
  t.ok(isE164(n.phone_number), 'E.164');
  t.ok(org.phone_numbers.includes(n.phone_number));
  t.equal(n.organization_id, org.organization_id);
  t.equal(n.user_id, org.user_id);
  t.equal(n.is_active, true);
  t.equal(n.iso_country, 'US');
  t.type(n.provider, 'string');
  t.type(n.name, 'string');
  t.type(n.cnam_display_name, 'string');
  t.type(n.cnam_status, 'string');
  t.type(n.texting_status, 'string');
  t.ok(!Number.isNaN(Date.parse(n.created_at)) && n.created_at.endsWith('Z'), 'created_at is an ISO timestamp');
  t.ok(!Number.isNaN(Date.parse(n.reputation_enrolled_at)), 'provisioned numbers are auto-enrolled');
});

t.test('limit bounds', async (t) => {
  for (const bad of ['0', '101', 'abc', '2.5', '-1', '1000000000000']) {
    const r = await list(`?limit=${bad}`);
    badCursor(t, r, `limit=${bad}`, 'limit');
    t.same(Object.keys(r.body.error.fields), ['limit'], `limit=${bad}: only limit is named`);
  }
  const one = await list('?limit=1');
  t.equal(one.status, 200);
  t.equal(one.body.data.length, 1);
  t.equal(one.body.meta.page_size, 1);
  const max = await list('?limit=100');
  t.equal(max.status, 200);
  t.equal(max.body.data.length, TOTAL, 'limit=100 returns everything there is');
  t.equal(max.body.meta.page_size, 100);
  t.notOk('cursor' in max.body.meta, 'no cursor on the last page');
  const twice = await list('?limit=5&limit=6');
  badCursor(t, twice, 'limit given twice', 'limit');
});

t.test('following meta.cursor visits every row exactly once, in both orders', async (t) => {
  for (const order of ['desc', 'asc'] as const) {
    const seen: number[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const qs = cursor ? `?limit=20&cursor=${encodeURIComponent(cursor)}` : `?limit=20${order === 'asc' ? '&order=asc' : ''}`;
      const r = await list(qs);
      t.equal(r.status, 200, `${order} page ${pages}`);
      t.equal(r.body.meta.total_results, TOTAL);
      sizes.push(r.body.data.length);
      seen.push(...r.body.data.map((n: { id: number }) => n.id));
      cursor = r.body.meta.cursor;
      if (++pages > 10) throw new Error('cursor loop');
    } while (cursor);
    t.same(sizes, [20, 20, 5], `${order}: pages of 20, 20, 5`);
    t.same(seen, order === 'desc' ? allIds : [...allIds].reverse(), `${order}: every row once, in order`);
  }
});

t.test('a cursor keeps its order; a conflicting order is rejected', async (t) => {
  const asc = await list('?order=asc&limit=10');
  t.same(asc.body.data.map((n: { id: number }) => n.id), [...allIds].reverse().slice(0, 10));
  const next = await list(`?cursor=${encodeURIComponent(asc.body.meta.cursor)}&order=asc&limit=10`);
  t.equal(next.status, 200);
  t.same(next.body.data.map((n: { id: number }) => n.id), [...allIds].reverse().slice(10, 20));
  badCursor(t, await list(`?cursor=${encodeURIComponent(asc.body.meta.cursor)}&order=desc`), 'order contradicting the cursor', 'order');
  badCursor(t, await list('?order=sideways'), 'unknown order', 'order');
});

t.test('tampered cursors are 400 validation_error with fields.cursor', async (t) => {
  const c: string = (await list('?limit=5')).body.meta.cursor;
  const [payload, sig] = c.split('.');
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  const body = JSON.parse(Buffer.from(payload, 'base64url').toString());
  const forged = Buffer.from(JSON.stringify({ ...body, k: allIds[allIds.length - 1] })).toString('base64url');
  const cases: Record<string, string> = {
    'signature changed': `${payload}.${flip(sig, 3)}`,
    'payload changed': `${flip(payload, 5)}.${sig}`,
    'payload re-encoded with another key, old signature': `${forged}.${sig}`,
    'signature removed': payload,
    'signature truncated': `${payload}.${sig.slice(0, -2)}`,
    'not a cursor at all': 'hello',
    'only a dot': '.',
    'too long': 'a'.repeat(600),
    'signed with another secret': new Cursors(Buffer.from('another secret')).encode('phone_numbers', allIds[0], 'desc'),
  };
  for (const [why, cursor] of Object.entries(cases)) {
    badCursor(t, await list(`?cursor=${encodeURIComponent(cursor)}`), why);
  }
  badCursor(t, await list('?cursor='), 'empty cursor');
  t.equal((await list(`?cursor=${encodeURIComponent(c)}`)).status, 200, 'the untouched cursor still works');
});

t.test('a cursor of another list is rejected', async (t) => {
  const foreign = new Cursors(secret).encode('calls', allIds[5], 'desc');
  const r = await list(`?cursor=${encodeURIComponent(foreign)}`);
  badCursor(t, r, 'cursor of the calls list');
  t.match(r.body.error.fields.cursor, /another list/);
});

t.test('cursors expire after 24 hours (injected clock)', async (t) => {
  const c: string = (await list('?limit=5')).body.meta.cursor;
  offsetMs = CURSOR_TTL_MS - 60_000;
  const young = await list(`?limit=5&cursor=${encodeURIComponent(c)}`);
  t.equal(young.status, 200, 'valid a minute before 24 hours');
  t.same(young.body.data.map((n: { id: number }) => n.id), allIds.slice(5, 10));
  offsetMs = CURSOR_TTL_MS + 1000;
  const old = await list(`?limit=5&cursor=${encodeURIComponent(c)}`);
  badCursor(t, old, 'cursor older than 24 hours');
  t.match(old.body.error.fields.cursor, /expired/);
  offsetMs = 0;

  // The same rule for a cursor minted (with the server's secret) as if issued 25 hours ago.
  const stale = new Cursors(secret, clock).encode('phone_numbers', allIds[3], 'desc', clock.now() - 25 * 3600_000);
  badCursor(t, await list(`?cursor=${encodeURIComponent(stale)}`), 'cursor issued 25 hours ago');
  const fresh = new Cursors(secret, clock).encode('phone_numbers', allIds[3], 'desc');
  const ok = await list(`?limit=2&cursor=${encodeURIComponent(fresh)}`);
  t.equal(ok.status, 200, 'a fresh cursor signed with the server secret is accepted');
  t.same(ok.body.data.map((n: { id: number }) => n.id), allIds.slice(4, 6));
});

t.test('unknown query parameters are named', async (t) => {
  const r = await list('?limit=5&colour=red');
  badCursor(t, r, 'unknown parameter', 'colour');
  t.same(Object.keys(r.body.error.fields), ['colour']);
});

t.test('released numbers drop out of the list and the total', async (t) => {
  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED', released_at = now() WHERE id = $1`, [allIds[0]]);
  t.teardown(() => env.db.none(`UPDATE phone_numbers SET status = 'ACTIVE', released_at = NULL WHERE id = $1`, [allIds[0]]));
  const r = await list('?limit=100');
  t.equal(r.body.meta.total_results, TOTAL - 1);
  t.notOk(r.body.data.some((n: { id: number }) => n.id === allIds[0]));
});
