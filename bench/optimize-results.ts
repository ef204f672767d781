// Results computation of an Optimize test: `node --import tsx bench/optimize-results.ts [--write]` prints the figures
// (--write also stores them in bench/results/optimize-results.json); `npm run bench:optimize` calls benchResults().
//
// The test: 1,000,000 impressions over 90 days, 3 variants with equal weights (≈ 3,700 impressions per variant per
// day), conversion rates 3.0 %, 3.2 % and 3.5 % with day-to-day noise (≈ 32,000 conversions). Measured:
//   compute          computeResults() alone on the 270 daily rows (aggregation, z-tests, exact Beta sums, SRM,
//                    decision, sorted series), median and p99 over repeated runs;
//   read + compute   what GET /v1/optimize/tests/{id}/results does for the statistics: select the 270 rows of the
//                    test from a table shaped like optimize_daily_counts (keyed by test, variant, day, with 500 other
//                    tests' rows beside them) with the query of shared/optimize/completion.ts, then computeResults();
//   worst case       the same test at ≈ 45 % conversion, where the exact Beta sum is longest (≈ 150,000 terms).
// The table is a TEMP table of one session in the maintenance database (nothing is left behind). Figures only,
// never asserted; the machine is shared, so its load is printed with them.
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../shared/config.ts';
import { adminUrl, createDb, pgp } from '../shared/db.ts';
import { computeResults, type DailyCount, type VariantInput } from '../shared/optimize/results.ts';
import { round, writeResult, type Figure } from './report.ts';

const VARIANTS: VariantInput[] = [
  { id: '0193a000-0000-7000-8000-000000000001', name: 'Control', is_control: true, weight: 1 },
  { id: '0193a000-0000-7000-8000-000000000002', name: 'New headline', is_control: false, weight: 1 },
  { id: '0193a000-0000-7000-8000-000000000003', name: 'Bigger CTA', is_control: false, weight: 1 },
];
const TEST_ID = '0193a000-0000-7000-8000-0000000000aa';
const DAYS = 90;
const IMPRESSIONS = 1_000_000;

/** Deterministic PRNG (mulberry32) so every run measures the same data. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** 90 days × 3 variants of counts summing to exactly `IMPRESSIONS`, with normal-approximated binomial noise. */
export function syntheticDaily(rates: number[], seed = 42): DailyCount[] {
  const rand = prng(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const start = Date.UTC(2026, 7, 1);
  const rows: DailyCount[] = [];
  const perCell = IMPRESSIONS / (DAYS * VARIANTS.length);
  let left = IMPRESSIONS;
  for (let d = 0; d < DAYS; d++) {
    const day = new Date(start + d * 86_400_000).toISOString().slice(0, 10);
    VARIANTS.forEach((v, i) => {
      const last = d === DAYS - 1 && i === VARIANTS.length - 1;
      const impressions = last ? left : Math.max(0, Math.round(perCell + gauss() * Math.sqrt(perCell)));
      left -= impressions;
      const p = rates[i];
      const conversions = Math.min(impressions, Math.max(0, Math.round(impressions * p + gauss() * Math.sqrt(impressions * p * (1 - p)))));
      rows.push({ variant_id: v.id, day, impressions, conversions, revenue_cents: conversions * 4_900 });
    });
  }
  return rows;
}

const percentile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

interface Timing { median: number; p99: number; cpuMedian: number; cpuP99: number }

/** Wall time and this process's CPU time (user + system) per run, in ms: on a loaded machine the wall-time tail is
 *  mostly waiting for a core, the CPU time is what the work costs. */
async function timeRuns(runs: number, warmup: number, fn: () => unknown | Promise<unknown>): Promise<Timing> {
  for (let i = 0; i < warmup; i++) await fn();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await fn();
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  wall.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return { median: percentile(wall, 0.5), p99: percentile(wall, 0.99), cpuMedian: percentile(cpu, 0.5), cpuP99: percentile(cpu, 0.99) };
}

export async function benchResults(opts: { runs?: number; databaseUrl?: string } = {}): Promise<Figure[]> {
  const runs = opts.runs ?? 300;
  const typical = syntheticDaily([0.03, 0.032, 0.035]);
  const worst = syntheticDaily([0.45, 0.452, 0.455], 7);
  const compute = await timeRuns(runs, 30, () => computeResults(VARIANTS, typical));
  const heavy = await timeRuns(Math.max(20, Math.floor(runs / 3)), 10, () => computeResults(VARIANTS, worst));

  const db = createDb(adminUrl(opts.databaseUrl ?? loadConfig().databaseUrl), 1, 'bench-optimize-results');
  let read: Timing;
  try {
    read = await db.task(async (s) => {
      // The shape of optimize_daily_counts (migration 013), without its foreign keys.
      await s.none(`CREATE TEMP TABLE optimize_daily_bench (
        test_id uuid NOT NULL, variant_id uuid NOT NULL, day date NOT NULL,
        impressions bigint NOT NULL, conversions bigint NOT NULL, revenue_cents bigint NOT NULL,
        PRIMARY KEY (test_id, variant_id, day))`);
      // 500 other tests' rows beside the measured one, so the read goes through the index like in production.
      await s.none(`INSERT INTO optimize_daily_bench
        SELECT t.id, v.id, DATE '2026-08-01' + d, 3700, 110, 539000
        FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, 500)) t,
          LATERAL (SELECT gen_random_uuid() AS id FROM generate_series(1, 3) WHERE t.id IS NOT NULL) v,
          generate_series(0, ${DAYS - 1}) d`);
      const cs = new pgp.helpers.ColumnSet(['test_id', 'variant_id', 'day', 'impressions', 'conversions', 'revenue_cents'],
        { table: 'optimize_daily_bench' });
      await s.none(pgp.helpers.insert(typical.map((r) => ({ test_id: TEST_ID, ...r })), cs));
      await s.none('ANALYZE optimize_daily_bench');
      const readAndCompute = async () => {
        const rows = await s.any<DailyCount>(`SELECT variant_id, to_char(day, 'YYYY-MM-DD') AS day, impressions, conversions,
          revenue_cents FROM optimize_daily_bench WHERE test_id = $1 ORDER BY day, variant_id`, [TEST_ID]);
        if (rows.length !== DAYS * VARIANTS.length) throw new Error(`read ${rows.length} rows`);
        return computeResults(VARIANTS, rows);
      };
      const r = await timeRuns(runs, 30, readAndCompute);
      await s.none('DROP TABLE optimize_daily_bench');
      return r;
    });
  } finally {
    await db.$pool.end();
  }

  const result = computeResults(VARIANTS, typical);
  const impressions = result.variants.reduce((s, v) => s + v.impressions, 0);
  if (impressions !== IMPRESSIONS) throw new Error(`synthetic data has ${impressions} impressions`);
  const target = '< 50 ms';
  return [
    { name: 'results of a 1M-impression, 90-day, 3-variant test: computeResults, median', value: round(compute.median, 3), unit: 'ms' },
    { name: 'results of a 1M-impression test: computeResults, p99', value: round(compute.p99, 3), unit: 'ms', target, met: compute.p99 < 50 },
    { name: 'results of a 1M-impression test: computeResults CPU time, p99', value: round(compute.cpuP99, 3), unit: 'ms' },
    { name: 'results of a 1M-impression test: read 270 daily rows from PostgreSQL + computeResults, median', value: round(read.median, 3), unit: 'ms' },
    { name: 'results of a 1M-impression test: read from PostgreSQL + computeResults, p99', value: round(read.p99, 3), unit: 'ms', target, met: read.p99 < 50 },
    { name: 'results of a 1M-impression test: read + computeResults CPU time of this process, p99', value: round(read.cpuP99, 3), unit: 'ms' },
    { name: 'results at 45 % conversion (longest exact Beta sum), computeResults p99', value: round(heavy.p99, 3), unit: 'ms', target, met: heavy.p99 < 50 },
  ];
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const figures = await benchResults();
  console.log(`\noptimize results — load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} on a shared machine\n`);
  for (const f of figures) {
    console.log(`  ${f.name}: ${f.value} ${f.unit}${f.target ? ` (target ${f.target}: ${f.met ? 'met' : 'NOT met'})` : ''}`);
  }
  if (process.argv.includes('--write')) {
    console.log(`\nwritten to ${writeResult('optimize-results', figures, { note: 'shared 2-core machine; see its load average' })}`);
  }
}
