// Number Health benchmark: `npm run bench:number-health`. A figure, not a timed test.
//
// In one run, against a fresh database and a real gateway on 127.0.0.1 (in this process), with one sequential
// client (latency, not throughput):
//   - a fleet of 10,000 numbers (provider rows on three carriers for each, handset summaries for a third) and a
//     Number Set of 1,000 of them;
//   - set resolution (POST /v1/number-health/sets/{id}/resolve) for varying destinations: p50/p99 over HTTP, and
//     and of resolveNumberSet() alone (the set's version check and the in-memory ranking, without HTTP; each HTTP
//     request opens a new connection, as the test client does) to show where the time goes.
//     Target: p99 < 5 ms;
//   - GET /v1/number-health/numbers?limit=100 walking the whole fleet, and with a state filter: per page p50/p99.
//     Target: < 200 ms per page.
// BENCH_RESOLVES, BENCH_FLEET change the run.
import { performance } from 'node:perf_hooks';
import { startGateway } from '../gateway/start.ts';
import { prepareDatabase } from '../infra/prepare.ts';
import { bootstrapOrganization } from '../shared/accounts/bootstrap.ts';
import { loadConfig } from '../shared/config.ts';
import { createDb, dropDatabase } from '../shared/db.ts';
import { randomToken } from '../shared/ids.ts';
import { createLogger } from '../shared/log.ts';
import { resolveNumberSet } from '../shared/number-health/resolve.ts';
import { createRedis } from '../shared/redis.ts';
import { DEFAULT_ALL_SCOPES } from '../shared/scopes.ts';
import { httpCall } from '../test/helpers/env.ts';
import { round, writeResult } from './report.ts';
import { unlinkPrefix } from './harness.ts';

const FLEET = Number(process.env.BENCH_FLEET ?? 10_000);
const SET_SIZE = 1_000;
const RESOLVES = Number(process.env.BENCH_RESOLVES ?? 500);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function main() {
  const id = randomToken(6).toLowerCase();
  const env = { DATABASE_URL: `postgres://127.0.0.1:5432/ol_bench_nh_${id}`, REDIS_PREFIX: `olb_${id}`, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'warn' };
  const config = loadConfig({ ...process.env, ...env });
  await prepareDatabase(config);
  const db = createDb(config.databaseUrl, 4, 'bench-nh');
  const g = await startGateway(config, createLogger('gateway', 'warn'));
  try {
    const org = await bootstrapOrganization(db, { org: `Bench NH ${id}`, scopes: [...DEFAULT_ALL_SCOPES], numbers: 1 });
    // The bench measures latency, not the per-key limit (600/min would stop it).
    await db.none('UPDATE api_keys SET rate_limit_per_minute = 1000000 WHERE organization_id = $1', [org.organization_id]);
    const t0 = performance.now();
    // The fleet: numbers in ten area codes, provider rows (mostly LOW, some MEDIUM, HIGH or unavailable), summaries.
    await db.none(
      `INSERT INTO phone_numbers (phone_number, name, organization_id, user_id, status, iso_country, area_code, reputation_enrolled_at,
         cnam_display_name, activated_at, team_id)
       SELECT '+1' || (200 + (i % 10))::text || '7' || lpad(i::text, 6, '0'), 'n' || i, $1, $2, 'ACTIVE', 'US', (200 + (i % 10))::text,
              now(), 'Bench NH', now(), 'team-' || (i % 5)
         FROM generate_series(1, $3) AS i`, [org.organization_id, org.user_id, FLEET]);
    await db.none(
      `INSERT INTO number_reputation (phone_id, carrier, organization_id, risk_level, displayed_label, provider, checked_at)
       SELECT p.id, c, p.organization_id,
              CASE WHEN p.id % 50 = 0 THEN 'HIGH' WHEN p.id % 13 = 0 THEN 'MEDIUM' WHEN p.id % 29 = 0 THEN NULL ELSE 'LOW' END,
              'Bench NH', 'bench', now() - ((p.id % 10) || ' days')::interval
         FROM phone_numbers p, unnest(ARRAY['ATT', 'TMOBILE', 'VERIZON']) AS c WHERE p.organization_id = $1`, [org.organization_id]);
    await db.none(
      `INSERT INTO number_health_summaries (phone_id, organization_id, qualifying_calls, consented_testers, active_days, clean_carriers,
         callback_verified, last_qualifying_at, latest_by_carrier, updated_at)
       SELECT id, organization_id, 8, 5, 4, ARRAY['ATT', 'TMOBILE', 'VERIZON'], true, now() - interval '2 days',
              jsonb_build_object('ATT', jsonb_build_object('carrier', 'ATT', 'outcome', 'CLEAN', 'observed_label', 'Bench NH',
                'observed_at', now() - interval '2 days', 'duration_seconds', 75, 'callback_verified', true, 'attempt_id', gen_random_uuid(), 'mode', 'HUMAN_READINESS')),
              now()
         FROM phone_numbers WHERE organization_id = $1 AND id % 3 = 0`, [org.organization_id]);
    await db.none('ANALYZE');
    const ids = (await db.any<{ id: number }>('SELECT id FROM phone_numbers WHERE organization_id = $1 ORDER BY id LIMIT $2', [org.organization_id, SET_SIZE])).map((r) => r.id);
    const call = (method: string, path: string, body?: unknown) => httpCall(g.url, method, path, { key: org.api_key, body });
    const set = await call('POST', '/v1/number-health/sets', { name: 'Bench', members: ids.map((phone_id, i) => ({ phone_id, priority: 100 + (i % 3) })) });
    if (set.status !== 201) throw new Error(`set create: ${set.status} ${set.text}`);
    const setId = set.body.data.id as string;
    console.log(`fleet of ${FLEET} numbers and a set of ${SET_SIZE} members ready in ${Math.round(performance.now() - t0)} ms`);

    const dest = (i: number) => `+1212555${String(1000 + (i % 9000)).padStart(4, '0')}`;
    for (let i = 0; i < 30; i++) await call('POST', `/v1/number-health/sets/${setId}/resolve`, { destination_number: dest(i) });
    const httpMs: number[] = [];
    for (let i = 0; i < RESOLVES; i++) {
      const s = performance.now();
      const r = await call('POST', `/v1/number-health/sets/${setId}/resolve`, { destination_number: dest(i) });
      httpMs.push(performance.now() - s);
      if (r.status !== 200) throw new Error(`resolve: ${r.status} ${r.text}`);
    }
    const fnMs: number[] = [];
    for (let i = 0; i < RESOLVES; i++) {
      const s = performance.now();
      await resolveNumberSet(g.db, org.organization_id, setId, dest(i), Date.now());
      fnMs.push(performance.now() - s);
    }
    console.log(`resolve over HTTP, set of ${SET_SIZE}: p50 ${pct(httpMs, 50).toFixed(2)} ms, p99 ${pct(httpMs, 99).toFixed(2)} ms`);
    console.log(`resolveNumberSet() alone: p50 ${pct(fnMs, 50).toFixed(2)} ms, p99 ${pct(fnMs, 99).toFixed(2)} ms`);

    const walk = async (q: string) => {
      const ms: number[] = [];
      let cursor: string | undefined;
      let n = 0;
      do {
        const s = performance.now();
        const r = await call('GET', `/v1/number-health/numbers?limit=100${q}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        ms.push(performance.now() - s);
        if (r.status !== 200) throw new Error(`numbers: ${r.status} ${r.text}`);
        n += r.body.data.length;
        cursor = r.body.meta.cursor;
      } while (cursor);
      return { ms, n };
    };
    await walk('&area_code=201'); // warm-up
    const all = await walk('');
    console.log(`GET /v1/number-health/numbers?limit=100 over ${all.n} numbers (${all.ms.length} pages): p50 ${pct(all.ms, 50).toFixed(1)} ms, p99 ${pct(all.ms, 99).toFixed(1)} ms`);
    const watch = await walk('&state=WATCH');
    console.log(`...&state=WATCH (${watch.n} numbers, ${watch.ms.length} pages, each scanning the fleet for matches): p50 ${pct(watch.ms, 50).toFixed(1)} ms, p99 ${pct(watch.ms, 99).toFixed(1)} ms`);

    const p99Http = pct(httpMs, 99);
    const pageP99 = pct(all.ms, 99);
    const path = writeResult('number-health', [
      { name: `set resolve over HTTP, ${SET_SIZE} members, p50`, value: round(pct(httpMs, 50)), unit: 'ms' },
      { name: `set resolve over HTTP, ${SET_SIZE} members, p99`, value: round(p99Http), unit: 'ms', target: '< 5 ms', met: p99Http < 5 },
      { name: `resolveNumberSet() without HTTP, ${SET_SIZE} members, p50`, value: round(pct(fnMs, 50)), unit: 'ms' },
      { name: `resolveNumberSet() without HTTP, ${SET_SIZE} members, p99`, value: round(pct(fnMs, 99)), unit: 'ms' },
      { name: `GET /v1/number-health/numbers?limit=100, fleet of ${FLEET}, per page p50`, value: round(pct(all.ms, 50), 1), unit: 'ms' },
      { name: `GET /v1/number-health/numbers?limit=100, fleet of ${FLEET}, per page p99`, value: round(pageP99, 1), unit: 'ms', target: '< 200 ms', met: pageP99 < 200 },
      { name: `GET /v1/number-health/numbers?limit=100&state=WATCH, fleet of ${FLEET}, per page p99`, value: round(pct(watch.ms, 99), 1), unit: 'ms' },
    ], { note: 'One sequential client, gateway in the bench process; the 2-core machine was shared with other engineers\' tests and benches (see load).' });
    console.log(`wrote ${path}`);
  } finally {
    await g.stop();
    await db.$pool.end();
    const redis = createRedis(config.redisUrl);
    await unlinkPrefix(redis, env.REDIS_PREFIX);
    await redis.quit();
    await dropDatabase(config.databaseUrl);
  }
}

await main();
