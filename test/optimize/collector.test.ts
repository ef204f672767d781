// The public collector and the exactly-once rollup, against real Redis, PostgreSQL and a workers process that is
// SIGKILLed between reading a batch and committing it, and between committing it and dropping it from Redis.
import t from 'tap';
import { startGateway } from '../../gateway/start.ts';
import { createLogger } from '../../shared/log.ts';
import { assignVariant } from '../../shared/optimize/bucketing.ts';
import { eventually, httpCall, testEnv } from '../helpers/env.ts';

// The per-address bound is lifted here: every beacon comes from 127.0.0.1.
const env = await testEnv(t, { env: { OPTIMIZE_ROLLUP_MS: '200', OPTIMIZE_COLLECT_LIMIT: '1000000' } });
const org = await env.bootstrap({ org: 'Collector Co' });
const other = await env.bootstrap({ org: 'Other Co' });
const key = org.api_key;
const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';

const prop = (await env.request('POST', '/v1/optimize/properties', { key, body: { domain: 'site.example.com' } })).body.data;
const otherProp = (await env.request('POST', '/v1/optimize/properties', { key: other.api_key, body: { domain: 'other.example.com' } })).body.data;
const mkTest = async (k: string, page: string, split = 1) => (await env.request('POST', '/v1/optimize/tests', { key: k, body: {
  name: 'T', page_url: page, goal: { type: 'cta_click', selector: '#buy' }, traffic_split: split, start: true,
  variants: [{ name: 'Control' }, { name: 'B', ops: [{ op: 'setText', selector: 'h1', value: 'Hi' }] }, { name: 'C', ops: [{ op: 'hide', selector: '.x' }] }],
} })).body.data;
const test = await mkTest(key, 'https://site.example.com/');
const half = await mkTest(key, 'https://site.example.com/half', 0.5);
const foreign = await mkTest(other.api_key, 'https://other.example.com/');

const collect = (body: unknown, headers: Record<string, string> = {}, base = env.url) => httpCall(base, 'POST', '/v1/optimize/collect', {
  rawBody: typeof body === 'string' ? body : JSON.stringify(body),
  headers: { 'content-type': 'text/plain;charset=UTF-8', 'user-agent': UA, origin: 'https://site.example.com', ...headers },
});
const visitor = (i: number) => `visitor-${String(i).padStart(6, '0')}`;
const counts = async (testId: string) => env.db.any(
  `SELECT variant_id, sum(impressions)::int AS impressions, sum(conversions)::int AS conversions FROM optimize_daily_counts
    WHERE test_id = $1 GROUP BY variant_id ORDER BY variant_id`, [testId]);
const total = async (testId: string) => (await counts(testId)).reduce((s, r) => s + r.impressions, 0);

/** What the server must count for visitors [from, to): enrolled visitors by its own hash, per variant. */
function expected(tw: typeof test, from: number, to: number) {
  const per = new Map<string, number>();
  for (let i = from; i < to; i++) {
    const v = assignVariant(tw.id, visitor(i), tw.traffic_split, tw.variants, tw.hash_version);
    if (v) per.set(v.id, (per.get(v.id) ?? 0) + 1);
  }
  return per;
}

t.test('the collector refuses what it must not count', async (t) => {
  const ok = await collect({ k: prop.public_key, v: visitor(0), e: [{ t: 'i', x: test.id }] });
  t.equal(ok.status, 202);
  t.equal(ok.body.accepted, 1);
  t.equal(ok.headers['access-control-allow-origin'], '*');
  t.equal((await collect({ k: prop.public_key, v: visitor(0), e: [{ t: 'i', x: test.id }] })).body.accepted, 0, 'one impression per visitor');
  t.equal((await collect({ k: prop.public_key, v: visitor(0), e: [{ t: 'i', x: test.id }] }, { 'user-agent': 'Googlebot/2.1 (+http://www.google.com/bot.html)' })).body.reason, 'bot');
  t.equal((await collect({ k: prop.public_key, v: visitor(1), e: [{ t: 'i', x: test.id }] }, { 'user-agent': '' })).body.reason, 'bot', 'no user agent');
  t.equal((await collect({ k: 'olpk_nope', v: visitor(1), e: [{ t: 'i', x: test.id }] })).status, 404, 'unknown key');
  const nul = await collect({ k: 'a\u0000b', v: visitor(1), e: [{ t: 'i', x: test.id }] });
  t.equal(nul.status, 400, 'NUL in the key (the issue\'s case): 400, not a PostgreSQL error');
  t.same(nul.body, { status: 400, accepted: 0, ignored: 0, reason: 'bad key' });
  t.same((await collect({ k: 'olpk_\ud800', v: visitor(1), e: [{ t: 'i', x: test.id }] })).body.reason, 'bad key', 'unpaired surrogate in the key');
  t.same((await collect({ k: `${prop.public_key}!`, v: visitor(1), e: [{ t: 'i', x: test.id }] })).body.reason, 'bad key', 'not a key\'s shape');
  t.equal((await collect('{"k":')).status, 400, 'malformed');
  t.equal((await collect({ k: prop.public_key, v: 'bad id!', e: [{ t: 'i', x: test.id }] })).status, 400, 'bad visitor id');
  t.equal((await collect({ k: prop.public_key, v: visitor(1), e: [{ t: 'x', x: test.id }] })).status, 400, 'bad event kind');
  t.equal((await collect({ k: prop.public_key, v: visitor(1), e: Array(51).fill({ t: 'i', x: test.id }) })).status, 400, 'too many events');
  for (const size of [9000, 2 * 1024 * 1024]) {
    // Over the collector's 8 KB, and over the gateway's 1 MB body limit (refused before the collector reads it).
    const big = await collect({ k: prop.public_key, v: visitor(1), e: [{ t: 'i', x: test.id }], pad: 'x'.repeat(size) });
    t.equal(big.status, 400, `body too large (${size} bytes)`);
    t.match(big.headers['content-type'], /^application\/json/);
    t.same(big.body, { status: 400, accepted: 0, ignored: 0, reason: 'body too large' });
    t.equal(big.headers['access-control-allow-origin'], '*');
  }
  t.equal((await collect({ k: prop.public_key, v: visitor(1), e: [{ t: 'i', x: test.id }] }, { origin: 'https://evil.example.net' })).status, 403, 'foreign origin');
  const cross = await collect({ k: prop.public_key, v: visitor(1), e: [{ t: 'i', x: foreign.id }] });
  t.equal(cross.body.accepted, 0, 'a test of another property is never counted with this key');
  const goalFirst = await collect({ k: prop.public_key, v: visitor(2), e: [{ t: 'g', x: test.id }] });
  t.equal(goalFirst.body.accepted, 0, 'a goal of a visitor never shown the test is not counted');
  const g = await collect({ k: prop.public_key, v: visitor(0), e: [{ t: 'g', x: test.id }, { t: 'g', x: test.id }] });
  t.equal(g.body.accepted, 1, 'a goal counts once per visitor');
});

t.test('rollup is exact across SIGKILLs between read and commit and between commit and cleanup', async (t) => {
  const N = 600;
  // visitor(0) was counted above (impression and goal); send visitors 1..N-1 for both tests, in beacons of 2 events.
  for (let i = 1; i < N; i++) {
    const r = await collect({ k: prop.public_key, v: visitor(i), e: [{ t: 'i', x: test.id }, { t: 'i', x: half.id }] }, { 'x-forwarded-for': String(i) });
    if (r.status !== 202) t.fail(`beacon ${i}: ${r.status} ${r.text}`);
  }
  // Goals for every 10th visitor.
  for (let i = 0; i < N; i += 10) await collect({ k: prop.public_key, v: visitor(i), e: [{ t: 'g', x: test.id }, { t: 'g', x: half.id }] });

  const read = env.spawn('workers', { OPTIMIZE_ROLLUP_FAULT: 'kill-after-read' });
  t.equal(await read.exited, null, 'killed after reading the batch');
  t.equal(await total(test.id), 0, 'nothing committed');
  t.ok(await env.redis.get(`${env.config.redisPrefix}:opt:batch:id`), 'the batch is kept in Redis');

  const commit = env.spawn('workers', { OPTIMIZE_ROLLUP_FAULT: 'kill-after-commit' });
  t.equal(await commit.exited, null, 'killed after committing the batch');
  t.equal(await total(test.id), N, 'committed once');
  t.ok(await env.redis.get(`${env.config.redisPrefix}:opt:batch:id`), 'the applied batch is still in Redis');

  // More events while no worker runs, then a healthy worker: the applied batch is dropped, not applied again.
  for (let i = N; i < N + 100; i++) await collect({ k: prop.public_key, v: visitor(i), e: [{ t: 'i', x: test.id }, { t: 'i', x: half.id }] });
  const healthy = env.spawn('workers');
  await healthy.ready(120_000);
  await eventually(async () => (await total(test.id)) === N + 100 && !(await env.redis.get(`${env.config.redisPrefix}:opt:batch:id`)), 120_000, 200)
    .catch((err) => { t.comment(`workers output:\n${healthy.output.slice(-4000)}`); throw err; });

  for (const tw of [test, half]) {
    const want = expected(tw, tw === half ? 1 : 0, N + 100); // visitor 0 saw only the first test
    const got = await counts(tw.id);
    t.same(Object.fromEntries(got.map((r) => [r.variant_id, r.impressions])), Object.fromEntries([...want].sort()), `${tw === test ? 'full' : 'half'} split: impressions exact per variant`);
    const assigned = await env.db.any('SELECT visitor_id, variant_id FROM optimize_assignments WHERE test_id = $1', [tw.id]);
    t.equal(assigned.length, [...want.values()].reduce((a, b) => a + b, 0), 'one assignment per enrolled visitor');
    t.ok(assigned.every((a) => assignVariant(tw.id, a.visitor_id, tw.traffic_split, tw.variants, tw.hash_version)?.id === a.variant_id), 'assignments are the server\'s hash');
  }
  const h = [...expected(half, 0, N + 100).values()].reduce((a, b) => a + b, 0);
  t.ok(h > (N + 100) * 0.4 && h < (N + 100) * 0.6, `traffic_split 0.5 enrolls about half (${h} of ${N + 100})`);

  const goals = await env.db.one(`SELECT count(*)::int AS n FROM optimize_conversions WHERE test_id = $1 AND source = 'tag'`, [test.id]);
  t.equal(goals.n, N / 10, 'each visitor\'s goal recorded once');
  t.equal((await counts(test.id)).reduce((s, r) => s + r.conversions, 0), N / 10, 'conversions exact');
  const batches = await env.db.one('SELECT count(*)::int AS n, sum(impressions)::int AS imp FROM optimize_rollup_batches');
  t.ok(batches.n >= 2, 'several batches');

  // API conversions find the assignment the collector recorded (even before the rollup reached it).
  const r = await env.request('POST', '/v1/optimize/conversions', { key, body: { test_id: test.id, visitor_id: visitor(5), value: 12.5 } });
  t.equal(r.status, 200);
  t.equal(r.body.data.variant_id, assignVariant(test.id, visitor(5), 1, test.variants, test.hash_version)!.id);

  // The rollup applies the completion rule to the tests it counted for: a clear winner completes with its event.
  const win = await mkTest(key, 'https://site.example.com/win');
  await env.db.none(`INSERT INTO optimize_daily_counts (test_id, variant_id, day, impressions, conversions) VALUES
    ($1, $2, '2026-11-20', 6000, 300), ($1, $3, '2026-11-20', 6000, 300), ($1, $4, '2026-11-20', 6000, 520)`,
  [win.id, win.variants[0].id, win.variants[1].id, win.variants[2].id]);
  await eventually(async () => (await collect({ k: prop.public_key, v: visitor(777777), e: [{ t: 'i', x: win.id }] })).body.accepted === 1, 30_000, 300);
  const done = await eventually(async () => {
    const r = await env.request('GET', `/v1/optimize/tests/${win.id}`, { key });
    return r.body.data.status === 'completed' && r.body.data;
  }, 60_000, 200);
  t.equal(done.winner_variant_id, win.variants[2].id, 'completed by the rollup with the winner');
  const ev = await env.db.any(`SELECT data FROM events WHERE event_type = 'optimize.test.winner' AND data->'test'->>'id' = $1`, [win.id]);
  t.equal(ev.length, 1, 'one optimize.test.winner event');
  await healthy.kill('SIGTERM');
});

t.test('a server failure answers the collector\'s JSON too (500), not text', async (t) => {
  // A real failure of the property lookup: the table is briefly out of reach (a key the 1 s config cache never saw).
  await env.db.none('ALTER TABLE optimize_properties RENAME TO optimize_properties_away');
  let r;
  try {
    r = await collect({ k: 'olpk_NeverSeenBefore1', v: visitor(1), e: [{ t: 'i', x: test.id }] });
  } finally {
    await env.db.none('ALTER TABLE optimize_properties_away RENAME TO optimize_properties');
  }
  t.equal(r.status, 500);
  t.match(r.headers['content-type'], /^application\/json/);
  t.same(r.body, { status: 500, accepted: 0, ignored: 0, reason: 'internal error' });
  t.equal(r.headers['access-control-allow-origin'], '*', 'readable by the page like every other answer');
});

t.test('a paused test stops counting; per-client rate bound', async (t) => {
  await env.request('PATCH', `/v1/optimize/tests/${test.id}`, { key, body: { status: 'paused' } });
  await new Promise((r) => setTimeout(r, 1100)); // the collector's property cache lives one second
  t.equal((await collect({ k: prop.public_key, v: visitor(99999), e: [{ t: 'i', x: test.id }] })).body.accepted, 0);
  // A second gateway configured with a bound of 3 beacons a minute per client address.
  const config = { ...env.config, optimize: { ...env.config.optimize, collectLimit: 3 } };
  const strict = await startGateway(config, createLogger('gateway', 'warn'));
  t.teardown(() => strict.stop());
  const answers = [];
  for (let i = 0; i < 6; i++) answers.push(await collect({ k: prop.public_key, v: visitor(i), e: [{ t: 'i', x: half.id }] }, {}, strict.url));
  const limited = answers.find((r) => r.status === 429);
  t.ok(limited, `over the per-client bound: 429 (${answers.map((r) => r.status)})`);
  t.match(limited?.headers['content-type'], /^application\/json/, 'JSON like every collector answer');
  t.same(limited?.body, { status: 429, accepted: 0, ignored: 0, reason: 'rate limited' });
  t.ok(Number(limited?.headers['retry-after']) >= 1, 'with Retry-After');
});
