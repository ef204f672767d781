// Bucketing hash versions: version 2 splits sequential visitor ids evenly (version 1, plain FNV-1a, did not), version 1
// is exactly the old FNV-1a, the tag's copy of the functions agrees with the server's for both, and a test created
// before migration 020 keeps version 1, so the collector and the tag keep assigning its visitors as before.
import t from 'tap';
import { migrate } from '../../infra/migrate.ts';
import { assignVariant, unitHash, type BucketVariant, type HashVersion } from '../../shared/optimize/bucketing.ts';
import { TAG_BUCKETING } from '../../shared/optimize/tag-source.ts';
import { httpCall, testEnv } from '../helpers/env.ts';

// Independent oracles, in BigInt arithmetic: FNV-1a over UTF-16 code units, and MurmurHash3's fmix32.
const M32 = 0xffffffffn;
function fnv1a(s: string): bigint {
  let h = 0x811c9dc5n;
  for (let i = 0; i < s.length; i++) h = ((h ^ BigInt(s.charCodeAt(i))) * 0x01000193n) & M32;
  return h;
}
function fmix32(h: bigint): bigint {
  h ^= h >> 16n; h = (h * 0x85ebca6bn) & M32;
  h ^= h >> 13n; h = (h * 0xc2b2ae35n) & M32;
  return h ^ (h >> 16n);
}
const oracleUnit = (s: string, v: HashVersion) => Number(v === 1 ? fnv1a(s) : fmix32(fnv1a(s))) / 2 ** 32;
/** The assignment rule (enrolment hash, then the variant by the weights) over the oracle hash. */
function oracleAssign(testId: string, visitor: string, split: number, variants: BucketVariant[], v: HashVersion): string | null {
  if (oracleUnit(`${testId}.${visitor}.split`, v) >= split) return null;
  const total = variants.reduce((s, x) => s + x.weight, 0);
  let x = oracleUnit(`${testId}.${visitor}`, v) * total;
  for (const variant of variants) {
    if (x < variant.weight) return variant.id;
    x -= variant.weight;
  }
  return variants[variants.length - 1].id;
}

/** A seeded generator (mulberry32): the same test ids on every run, so the statistics below are deterministic. */
function seeded(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
const hex = (rand: () => number, n: number) => Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join('');
/** uuidv7-shaped ids as the API makes them: a millisecond timestamp, then random bits. */
function testIds(n: number, seed: number): string[] {
  const rand = seeded(seed);
  return Array.from({ length: n }, (_, i) => {
    const ms = (0x0193a4c27e5b + i * 1013).toString(16).padStart(12, '0');
    return `${ms.slice(0, 8)}-${ms.slice(8)}-7${hex(rand, 3)}-${(8 + Math.floor(rand() * 4)).toString(16)}${hex(rand, 3)}-${hex(rand, 12)}`;
  });
}

const ID_STYLES: Record<string, (i: number) => string> = {
  'v-000001': (i) => `v-${String(i).padStart(6, '0')}`,
  visitor1: (i) => `visitor${i}`,
  user_12345: (i) => `user_${12344 + i}`,
};
const HALVES = [{ id: 'a', weight: 0.5 }, { id: 'b', weight: 0.5 }];

/** The largest |z| of the share of visitors 1..1000 landing in the first half, over the tests. */
function maxZ(tests: string[], visitor: (i: number) => string, v: HashVersion, what: 'variant' | 'enrolment'): number {
  let max = 0;
  for (const test of tests) {
    let hits = 0;
    for (let i = 1; i <= 1000; i++) {
      const got = assignVariant(test, visitor(i), what === 'variant' ? 1 : 0.5, HALVES, v);
      if (what === 'variant' ? got?.id === 'a' : got !== null) hits++;
    }
    max = Math.max(max, Math.abs(hits - 500) / Math.sqrt(1000 * 0.25));
  }
  return max;
}

t.test('version 2: 1,000 tests x 1,000 sequential visitor ids split 50/50 with max |z| < 4.5', async (t) => {
  const tests = testIds(1000, 20);
  for (const [style, visitor] of Object.entries(ID_STYLES)) {
    const variant = maxZ(tests, visitor, 2, 'variant');
    t.ok(variant < 4.5, `${style}...: variant max |z| = ${variant.toFixed(2)}`);
    const enrolment = maxZ(tests, visitor, 2, 'enrolment');
    t.ok(enrolment < 4.5, `${style}...: enrolment at traffic_split 0.5, max |z| = ${enrolment.toFixed(2)}`);
  }
  // What version 2 fixes: plain FNV-1a on the same tests and ids.
  const old = maxZ(tests, ID_STYLES['v-000001'], 1, 'variant');
  t.ok(old > 4.5, `version 1 on v-000001...: max |z| = ${old.toFixed(2)} (lopsided)`);
});

t.test('version 1 is exactly the old FNV-1a, version 2 FNV-1a then fmix32', async (t) => {
  const tests = testIds(20, 1);
  const variants = [{ id: 'a', weight: 0.2 }, { id: 'b', weight: 0.5 }, { id: 'c', weight: 0.3 }];
  let mismatches = 0;
  let checked = 0;
  for (const test of tests) {
    for (let i = 0; i < 500; i++) {
      const visitor = i % 2 ? `visitor-${String(i).padStart(6, '0')}` : `kJ3n_x9Q${i}wE2rT5yU8iO0pA`;
      for (const v of [1, 2] as const) {
        checked++;
        if (unitHash(`${test}.${visitor}`, v) !== oracleUnit(`${test}.${visitor}`, v)) mismatches++;
        if ((assignVariant(test, visitor, 0.7, variants, v)?.id ?? null) !== oracleAssign(test, visitor, 0.7, variants, v)) mismatches++;
      }
    }
  }
  t.equal(mismatches, 0, `${checked} hashes and assignments agree with the oracles`);
  t.equal(unitHash('', 1), 0x811c9dc5 / 2 ** 32, 'FNV-1a offset basis for the empty string');
  t.equal(unitHash('a', 1), 0xe40c292c / 2 ** 32, 'FNV-1a("a"), the published test vector');
});

/** The tag's pick(test, visitorId) as the browser runs it (the same source text the tag ships). */
const tagPick = new Function(`${TAG_BUCKETING};return pick`)() as (t: unknown, visitor: string) => { i: string } | null;
/** A test as the tag's config carries it. */
const tagTest = (id: string, split: number, variants: BucketVariant[], h: HashVersion) =>
  ({ i: id, s: split, h, v: variants.map((x) => ({ i: x.id, w: x.weight })) });

t.test('the tag\'s bucketing agrees with the server\'s for both versions', async (t) => {
  const configs: [number, BucketVariant[]][] = [[1, HALVES], [0.3, [{ id: 'a', weight: 0.1 }, { id: 'b', weight: 0.6 }, { id: 'c', weight: 0.3 }]]];
  const rand = seeded(7);
  for (const v of [1, 2] as const) {
    for (const test of testIds(10, 3)) {
      for (const [split, variants] of configs) {
        let disagree = 0;
        for (let i = 0; i < 2000; i++) {
          const visitor = i % 2 ? `user_${10000 + i}` : hex(rand, 22);
          const server = assignVariant(test, visitor, split, variants, v)?.id ?? null;
          if ((tagPick(tagTest(test, split, variants, v), visitor)?.i ?? null) !== server) disagree++;
        }
        if (disagree) t.fail(`version ${v}, test ${test}, split ${split}: ${disagree} of 2000 visitors disagree`);
      }
    }
  }
  t.pass('40,000 visitors per version: the same enrolment and variant');
});

t.test('a test created before migration 020 keeps its assignments (hash version 1); new tests get version 2', async (t) => {
  const env = await testEnv(t, { env: { OPTIMIZE_COLLECT_LIMIT: '1000000' } });
  const org = await env.bootstrap({ org: 'Hash Co' });
  const key = org.api_key;
  const prop = (await env.request('POST', '/v1/optimize/properties', { key, body: { domain: 'hash.example.com' } })).body.data;
  const mkTest = async (page: string) => {
    const r = await env.request('POST', '/v1/optimize/tests', { key, body: {
      name: 'T', page_url: page, goal: { type: 'cta_click', selector: '#buy' }, traffic_split: 0.5, start: true,
      variants: [{ name: 'A' }, { name: 'B', ops: [{ op: 'hide', selector: '.x' }] }, { name: 'C', ops: [{ op: 'hide', selector: '.y' }] }],
    } });
    if (r.status !== 201) throw new Error(r.text);
    return r.body.data;
  };

  // The database as it was before 020: the test exists, the column and the migration record do not; then migrate.
  const old = await mkTest('https://hash.example.com/old');
  await env.db.none('ALTER TABLE optimize_tests DROP COLUMN hash_version');
  await env.db.none(`DELETE FROM schema_migrations WHERE name = '020_optimize_hash_version.sql'`);
  t.same(await migrate(env.db), ['020_optimize_hash_version.sql'], 'migration 020 applied to the old database');
  const oldNow = (await env.request('GET', `/v1/optimize/tests/${old.id}`, { key })).body.data;
  t.equal(oldNow.hash_version, 1, 'the existing test keeps version 1');
  const fresh = await mkTest('https://hash.example.com/new');
  t.equal(fresh.hash_version, 2, 'a new test gets version 2');

  // The collector assigns every visitor of the old test exactly as plain FNV-1a did, and the new one by version 2.
  const visitors = Array.from({ length: 300 }, (_, i) => `user_${String(12345 + i).padStart(8, '0')}`);
  for (const v of visitors) {
    const r = await httpCall(env.url, 'POST', '/v1/optimize/collect', {
      rawBody: JSON.stringify({ k: prop.public_key, v, e: [{ t: 'i', x: old.id }, { t: 'i', x: fresh.id }] }),
      headers: { 'content-type': 'text/plain', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0' },
    });
    if (r.status !== 202) t.fail(`beacon for ${v}: ${r.status} ${r.text}`);
  }
  const seen = async (testId: string) => env.redis.hgetall(`${env.config.redisPrefix}:opt:seen:${testId}`);
  const expected = (test: typeof old, v: HashVersion) => Object.fromEntries(visitors
    .map((visitor) => [visitor, oracleAssign(test.id, visitor, test.traffic_split, test.variants, v)] as const)
    .filter(([, variant]) => variant !== null));
  const oldSeen = await seen(old.id);
  t.same(oldSeen, expected(old, 1), 'old test: enrolment and variant of every visitor as the old FNV-1a gave them');
  t.same(await seen(fresh.id), expected(fresh, 2), 'new test: by version 2');
  // The check can fail: under version 2 the old test's visitors would land differently.
  const underV2 = expected(old, 2);
  const moved = visitors.filter((v) => (oldSeen[v] ?? null) !== (underV2[v] ?? null)).length;
  t.ok(moved > visitors.length / 3, `${moved} of ${visitors.length} visitors would change enrolment or variant under version 2`);

  // The served tag carries each test's version and the same functions, so the browser shows what the collector counts.
  const js = (await httpCall(env.url, 'GET', `/v1/optimize/tag.js?k=${prop.public_key}`)).text;
  t.ok(js.includes(TAG_BUCKETING), 'the tag ships TAG_BUCKETING');
  const config = JSON.parse(js.slice(js.lastIndexOf('Object.assign(') + 'Object.assign('.length, js.lastIndexOf(',{b:/')));
  const served = (id: string) => config.t.find((x: { i: string }) => x.i === id);
  t.equal(served(old.id).h, 1);
  t.equal(served(fresh.id).h, 2);
  for (const [test, want] of [[old, oldSeen], [fresh, await seen(fresh.id)]] as const) {
    const shown = Object.fromEntries(visitors.map((v) => [v, tagPick(served(test.id), v)?.i ?? null] as const).filter(([, x]) => x !== null));
    t.same(shown, want, `the served tag picks what the collector recorded (version ${served(test.id).h})`);
  }
});
