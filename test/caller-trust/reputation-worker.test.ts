import t from 'tap';
import { eventually, testEnv } from '../helpers/env.ts';
import { addNumber, num } from './reputation-helpers.ts';

// The background refresh in real workers processes: a 10-minute freshness window, a scan every 300 ms, 15 lookups
// per second towards the sandbox provider, 3 in flight per process.
const CONCURRENCY = 3;
const env = await testEnv(t, {
  env: { SANDBOX_TIME_SCALE: '1', REPUTATION_FRESHNESS_SECONDS: '600', REPUTATION_SCAN_MS: '300',
    REPUTATION_RATE_PER_SECOND: '15', REPUTATION_CONCURRENCY: String(CONCURRENCY), REPUTATION_BATCH_SIZE: '25' },
});
const org = await env.bootstrap({ org: 'Fleet Co', numbers: 0 });

const ids = { stale: [] as number[], never: [] as number[], fresh: [] as number[], unenrolled: [] as number[], released: [] as number[] };
const evidence = async (phoneId: number, agoSeconds: number) => {
  for (const carrier of ['ATT', 'TMOBILE', 'VERIZON']) {
    await env.db.none(`INSERT INTO number_reputation (phone_id, carrier, organization_id, risk_level, provider, checked_at)
      VALUES ($1, $2, $3, 'LOW', 'sandbox', now() - make_interval(secs => $4))`, [phoneId, carrier, org.organization_id, agoSeconds]);
  }
};
let line = 0;
const next = () => addNumber(env, org, num(401, 1000 + line++));
for (let i = 0; i < 40; i++) { const id = await next(); await evidence(id, 3600); ids.stale.push(id); }
for (let i = 0; i < 10; i++) ids.never.push(await next());
for (let i = 0; i < 5; i++) { const id = await next(); await evidence(id, 60); ids.fresh.push(id); }
for (let i = 0; i < 3; i++) {
  const id = await next();
  await env.db.none('UPDATE phone_numbers SET reputation_enrolled_at = NULL WHERE id = $1', [id]);
  ids.unenrolled.push(id);
}
for (let i = 0; i < 2; i++) {
  const id = await next();
  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED', released_at = now() WHERE id = $1`, [id]);
  ids.released.push(id);
}
const due = [...ids.stale, ...ids.never];

const completed = async () => (await env.db.one(
  `SELECT count(*)::int AS n FROM reputation_lookups WHERE reason = 'background' AND completed_at IS NOT NULL`)).n as number;

t.test('a worker killed mid-batch: the next one finishes the batch without looking up a number twice', async (t) => {
  const first = env.spawn('workers');
  await first.ready(60_000);
  await eventually(async () => (await completed()) >= 12, 120_000, 20);
  await first.kill('SIGKILL');
  const atKill = await completed();
  t.ok(atKill < due.length, `killed mid-batch (${atKill} of ${due.length} done)`);

  const second = env.spawn('workers');
  await second.ready(60_000);
  await eventually(async () => (await completed()) >= due.length, 180_000, 100);

  const rows = await env.db.any<{ phone_id: number; n: number; attempts: number; done: number }>(
    `SELECT phone_id::int AS phone_id, count(*)::int AS n, sum(attempts)::int AS attempts, count(completed_at)::int AS done
       FROM reputation_lookups WHERE organization_id = $1 GROUP BY phone_id`, [org.organization_id]);
  t.same(rows.map((r) => r.phone_id).sort((a, b) => a - b), [...due].sort((a, b) => a - b),
    'exactly the stale and never-checked enrolled numbers were looked up');
  t.ok(rows.every((r) => r.n === 1 && r.done === 1), 'each of them completed once');
  const repeats = rows.reduce((s, r) => s + r.attempts - 1, 0);
  t.ok(repeats <= CONCURRENCY, `only lookups in flight at the kill were asked again (${repeats} <= ${CONCURRENCY})`);

  const fresh = await env.db.one<{ n: number }>(
    `SELECT count(DISTINCT phone_id)::int AS n FROM number_reputation
      WHERE phone_id = ANY($1::bigint[]) AND checked_at > now() - interval '5 minutes'`, [due]);
  t.equal(fresh.n, due.length, 'every due number has fresh evidence');
  const perCarrier = await env.db.one<{ n: number }>('SELECT count(*)::int AS n FROM number_reputation WHERE phone_id = ANY($1::bigint[])', [due]);
  t.equal(perCarrier.n, due.length * 3, 'one row per carrier');
  const untouched = await env.db.one<{ n: number }>(
    `SELECT count(*)::int AS n FROM number_reputation WHERE phone_id = ANY($1::bigint[]) AND checked_at > now() - interval '50 seconds'`, [ids.fresh]);
  t.equal(untouched.n, 0, 'fresh evidence was left alone');
  const skipped = await env.db.one<{ n: number }>('SELECT count(*)::int AS n FROM number_reputation WHERE phone_id = ANY($1::bigint[])',
    [[...ids.unenrolled, ...ids.released]]);
  t.equal(skipped.n, 0, 'numbers not enrolled or released are not refreshed');

  const charges = await env.db.one<{ n: number; spend: number }>(
    `SELECT (SELECT count(*)::int FROM spend_charges) AS n, (SELECT count(*)::int FROM org_daily_spend) AS spend`);
  t.same(charges, { n: 0, spend: 0 }, 'background refreshes are never charged');

  // Fresh now: later scans queue nothing more.
  const before = await env.db.one<{ n: number }>('SELECT sum(attempts)::int AS n FROM reputation_lookups');
  await new Promise((r) => setTimeout(r, 1500)); // several scan periods (a check of absence, not a timing assertion)
  const after = await env.db.one<{ n: number }>('SELECT sum(attempts)::int AS n FROM reputation_lookups');
  t.equal(after.n, before.n, 'nothing is looked up again while the evidence is fresh');
  await second.kill('SIGTERM');
});

t.test('with a 2-second freshness window the evidence is re-checked once it goes stale, still never charged', async (t) => {
  const checkedAt = async () => new Map((await env.db.any<{ phone_id: number; at: Date }>(
    'SELECT phone_id::int AS phone_id, min(checked_at) AS at FROM number_reputation WHERE phone_id = ANY($1::bigint[]) GROUP BY phone_id', [due]))
    .map((r) => [r.phone_id, r.at.getTime()]));
  const before = await checkedAt();
  const workers = env.spawn('workers', { REPUTATION_FRESHNESS_SECONDS: '2', REPUTATION_RATE_PER_SECOND: '100', REPUTATION_BATCH_SIZE: '100' });
  await workers.ready(60_000);
  const twice = async () => (await env.db.one<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT phone_id FROM reputation_lookups WHERE reason = 'background' AND completed_at IS NOT NULL
      GROUP BY phone_id HAVING count(*) >= 2) x`)).n;
  await eventually(async () => (await twice()) === due.length, 120_000, 100);
  const after = await checkedAt();
  t.ok(due.every((id) => after.get(id)! > before.get(id)!), 'every due number was checked again');
  t.equal(await twice(), due.length, 'a second recorded lookup per number (a new freshness window, a new ref)');
  t.equal((await env.db.one<{ n: number }>('SELECT count(*)::int AS n FROM spend_charges')).n, 0, 'and no charge');
  await workers.kill('SIGTERM');
});
