// shared/pagination.ts: signed keyset cursors (round trip, tamper, foreign list, expiry on an injected clock,
// order), page envelopes and the keyset SQL fragment.
import t from 'tap';
import { Cursors, CURSOR_TTL_MS, DEFAULT_PAGE_SIZE, keysetClause, MAX_PAGE_SIZE, PageQuery } from '../../shared/pagination.ts';
import { DomainError } from '../../shared/errors.ts';
import { statusOf } from '../../shared/http/error-status.ts';

let now = 1_800_000_000_000;
const clock = { now: () => now };
const secret = Buffer.from('0123456789abcdef0123456789abcdef');
const cursors = new Cursors(secret, clock);

function rejects(t: { ok: Function; equal: Function }, fn: () => unknown, field: string, why: string) {
  try {
    fn();
    t.ok(false, `${why}: should throw`);
  } catch (e) {
    t.ok(e instanceof DomainError, `${why}: DomainError`);
    const err = e as DomainError;
    t.equal(err.code, 'validation_error', `${why}: validation_error`);
    t.equal(statusOf(err.code), 400);
    t.ok(err.fields?.[field], `${why}: fields.${field}`);
  }
}

t.test('constants of the contract', async (t) => {
  t.equal(CURSOR_TTL_MS, 24 * 3600_000);
  t.equal(DEFAULT_PAGE_SIZE, 20);
  t.equal(MAX_PAGE_SIZE, 100);
  t.equal(PageQuery.limit.minimum, 1);
  t.equal(PageQuery.limit.maximum, 100);
  t.notOk('default' in PageQuery.order, 'order has no schema default, so a followed asc cursor is not contradicted');
});

t.test('no cursor: defaults', async (t) => {
  t.same(cursors.params('l', {}), { limit: 20, order: 'desc', after: null });
  t.same(cursors.params('l', { limit: 5, order: 'asc' }), { limit: 5, order: 'asc', after: null });
});

t.test('round trip: a cursor carries key and order, and is opaque', async (t) => {
  for (const key of [42, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b']) {
    for (const order of ['asc', 'desc'] as const) {
      const c = cursors.encode('phone_numbers', key, order);
      t.match(c, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'URL-safe');
      t.same(cursors.params('phone_numbers', { cursor: c, limit: 7 }), { limit: 7, order, after: key });
      t.same(cursors.params('phone_numbers', { cursor: c, order }), { limit: 20, order, after: key }, 'repeating the same order is fine');
    }
  }
});

t.test('tampering and foreign cursors', async (t) => {
  const c = cursors.encode('phone_numbers', 10, 'desc');
  const [payload, sig] = c.split('.');
  rejects(t, () => cursors.params('phone_numbers', { cursor: `${payload}.${sig.replace(/^./, (x) => (x === 'a' ? 'b' : 'a'))}` }), 'cursor', 'signature');
  const forged = Buffer.from(JSON.stringify({ l: 'phone_numbers', k: 1, o: 'desc', t: now })).toString('base64url');
  rejects(t, () => cursors.params('phone_numbers', { cursor: `${forged}.${sig}` }), 'cursor', 'forged payload');
  rejects(t, () => cursors.params('phone_numbers', { cursor: payload }), 'cursor', 'no signature');
  rejects(t, () => cursors.params('phone_numbers', { cursor: '.' }), 'cursor', 'empty parts');
  rejects(t, () => cursors.params('phone_numbers', { cursor: new Cursors(Buffer.from('other'), clock).encode('phone_numbers', 10, 'desc') }),
    'cursor', 'another secret');
  // A validly signed payload that is not JSON.
  const junk = Buffer.from('not json').toString('base64url');
  const signedJunk = `${junk}.${(cursors as unknown as { sign(p: string): string }).sign(junk)}`;
  rejects(t, () => cursors.params('phone_numbers', { cursor: signedJunk }), 'cursor', 'signed garbage');
  rejects(t, () => cursors.params('calls', { cursor: c }), 'cursor', 'another list');
  rejects(t, () => cursors.params('phone_numbers', { cursor: c, order: 'asc' }), 'order', 'contradicting order');
});

t.test('expiry is 24 hours on the injected clock', async (t) => {
  const start = now;
  const c = cursors.encode('l', 5, 'desc');
  now = start + CURSOR_TTL_MS;
  t.same(cursors.params('l', { cursor: c }).after, 5, 'valid at exactly 24 hours');
  now = start + CURSOR_TTL_MS + 1;
  rejects(t, () => cursors.params('l', { cursor: c }), 'cursor', 'one millisecond later');
  now = start;
  const old = cursors.encode('l', 5, 'desc', start - CURSOR_TTL_MS - 1);
  rejects(t, () => cursors.params('l', { cursor: old }), 'cursor', 'issued more than 24 hours ago');
});

t.test('page(): envelope from limit + 1 rows', async (t) => {
  const p = { limit: 3, order: 'desc' as const, after: null };
  const rows = [{ id: 9 }, { id: 8 }, { id: 7 }, { id: 6 }];
  const full = cursors.page('l', p, rows, (r) => r.id, 40);
  t.same(full.data, rows.slice(0, 3), 'the extra row is not returned');
  t.equal(full.meta.page_size, 3);
  t.equal(full.meta.total_results, 40);
  t.same(cursors.params('l', { cursor: full.meta.cursor }).after, 7, 'the cursor points after the last returned row');
  const last = cursors.page('l', p, rows.slice(0, 3), (r) => r.id);
  t.notOk('cursor' in last.meta, 'no cursor when nothing follows');
  t.notOk('total_results' in last.meta, 'total only when known');
  const empty = cursors.page('l', p, [], (r: { id: number }) => r.id, 0);
  t.same(empty, { data: [], meta: { page_size: 3, total_results: 0 } });
});

t.test('keysetClause', async (t) => {
  t.same(keysetClause('id', { limit: 20, order: 'desc', after: null }, 2), { where: '', tail: ' ORDER BY id DESC LIMIT 21', values: [] });
  t.same(keysetClause('id', { limit: 5, order: 'desc', after: 17 }, 2), { where: ' AND id < $2', tail: ' ORDER BY id DESC LIMIT 6', values: [17] });
  t.same(keysetClause('c.id', { limit: 100, order: 'asc', after: 'u' }, 4), { where: ' AND c.id > $4', tail: ' ORDER BY c.id ASC LIMIT 101', values: ['u'] });
});
