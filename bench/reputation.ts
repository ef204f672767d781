// npm run bench:reputation [-- --numbers 2000 --concurrency 20 --limited 300 --rate 50]
//
// The background reputation refresh through a real workers process against the sandbox provider (50 ms per lookup,
// SANDBOX_TIME_SCALE 1), real PostgreSQL and Redis. Two phases, each on enrolled numbers never checked:
//   unthrottled: --numbers numbers, the limiter set far above what one process does, --concurrency lookups in flight:
//                numbers/s from the worker's start to the last evidence written; compared with the sandbox's ceiling
//                for that concurrency (concurrency / 50 ms).
//   limited:     --limited numbers at REPUTATION_RATE_PER_SECOND=--rate: the measured rate over the limit shows the
//                limiter holds the provider to its budget.
// Figures are printed and written to bench/results/reputation.json, never asserted. The machine is shared.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { SANDBOX_LOOKUP_MS } from '../shared/caller-trust/reputation/sandbox.ts';
import { testEnv, type TestEnv } from '../test/helpers/env.ts';
import { round, writeResult, type Figure } from './report.ts';

const { values: args } = parseArgs({
  options: {
    numbers: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '20' },
    limited: { type: 'string', default: '300' },
    rate: { type: 'string', default: '50' },
  },
});
const NUMBERS = Number(args.numbers);
const CONCURRENCY = Number(args.concurrency);
const LIMITED = Number(args.limited);
const RATE = Number(args.rate);

const teardowns: (() => unknown)[] = [];
const env = await testEnv({ teardown: (fn) => teardowns.push(fn) }, {
  gateway: false,
  env: { SANDBOX_TIME_SCALE: '1', REPUTATION_SCAN_MS: '200', REPUTATION_BATCH_SIZE: '1000', DATABASE_POOL_MAX: '' },
});

/** `count` enrolled ACTIVE numbers never checked, in exchange `exchange`. */
async function seedNumbers(e: TestEnv, exchange: number, count: number): Promise<void> {
  const org = await e.bootstrap({ numbers: 0 });
  await e.db.none(
    `INSERT INTO phone_numbers (phone_number, name, organization_id, user_id, status, iso_country, area_code, reputation_enrolled_at, activated_at)
     SELECT '+1628' || $1 || lpad(i::text, 4, '0'), 'bench', $2, $3, 'ACTIVE', 'US', '628', now(), now() FROM generate_series(0, $4 - 1) i`,
    [String(exchange), org.organization_id, org.user_id, count]);
}

const done = async () => (await env.db.one<{ n: number }>(
  `SELECT count(*)::int AS n FROM reputation_lookups WHERE reason = 'background' AND completed_at IS NOT NULL`)).n;

/** CPU seconds (user + system) a process has used (clock ticks of 10 ms). */
const cpuSeconds = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(stat[11]) + Number(stat[12])) / 100;
};

/** Runs a workers process until `total` lookups completed; answers the seconds from its readiness to the last and
 *  the CPU seconds the workers process used meanwhile. */
async function run(total: number, extra: Record<string, string>): Promise<{ seconds: number; cpu: number }> {
  const workers = env.spawn('workers', extra);
  try {
    await workers.ready(60_000);
    const start = performance.now();
    const cpu0 = cpuSeconds(workers.child.pid!);
    const until = Date.now() + 120_000;
    while ((await done()) < total) {
      if (Date.now() > until) throw new Error(`only ${await done()} of ${total} numbers refreshed in 120 s`);
      await new Promise((r) => setTimeout(r, 25));
    }
    return { seconds: (performance.now() - start) / 1000, cpu: cpuSeconds(workers.child.pid!) - cpu0 };
  } finally {
    await workers.kill('SIGTERM');
  }
}

try {
  await seedNumbers(env, 500, NUMBERS);
  const { seconds, cpu } = await run(NUMBERS, { REPUTATION_RATE_PER_SECOND: '100000', REPUTATION_CONCURRENCY: String(CONCURRENCY) });
  const rate = NUMBERS / seconds;
  const cpuPerNumberMs = (cpu * 1000) / NUMBERS;
  const ceiling = CONCURRENCY / (SANDBOX_LOOKUP_MS / 1000);
  console.log(`unthrottled: ${NUMBERS} numbers in ${seconds.toFixed(1)} s = ${rate.toFixed(0)} numbers/s `
    + `(${(100 * rate / ceiling).toFixed(0)} % of the sandbox ceiling of ${ceiling}/s at ${CONCURRENCY} in flight); `
    + `workers CPU ${cpuPerNumberMs.toFixed(2)} ms per number`);

  await seedNumbers(env, 600, LIMITED);
  const { seconds: limitedSeconds } = await run(NUMBERS + LIMITED, { REPUTATION_RATE_PER_SECOND: String(RATE), REPUTATION_CONCURRENCY: String(CONCURRENCY) });
  const limitedRate = LIMITED / limitedSeconds;
  console.log(`limited to ${RATE}/s: ${LIMITED} numbers in ${limitedSeconds.toFixed(1)} s = ${limitedRate.toFixed(1)} numbers/s `
    + `(${(limitedRate / RATE).toFixed(2)} of the limit)`);
  const charges = (await env.db.one<{ n: number }>('SELECT count(*)::int AS n FROM spend_charges')).n;
  const repeats = (await env.db.one<{ n: number }>('SELECT COALESCE(sum(attempts - 1), 0)::int AS n FROM reputation_lookups')).n;
  console.log(`charges to organizations: ${charges}; repeated lookups: ${repeats}; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);

  const figures: Figure[] = [
    { name: `background refresh, one workers process, ${CONCURRENCY} lookups in flight, sandbox 50 ms per lookup`, value: Math.round(rate), unit: 'numbers/s' },
    { name: 'the same, share of the sandbox ceiling (in flight / lookup time)', value: round(rate / ceiling), unit: 'ratio' },
    { name: 'the same, workers process CPU per number refreshed', value: round(cpuPerNumberMs), unit: 'ms' },
    { name: `limiter at ${RATE}/s, measured rate over the limit`, value: round(limitedRate / RATE), unit: 'ratio', target: '<= 1', met: limitedRate / RATE <= 1.05 },
    { name: 'background refreshes charged to organizations', value: charges, unit: 'charges', target: '0', met: charges === 0 },
    { name: 'lookups repeated', value: repeats, unit: 'lookups', target: '0', met: repeats === 0 },
  ];
  writeResult('reputation', figures, { note: `${NUMBERS} numbers unthrottled, ${LIMITED} limited; the machine is shared by several engineers' test runs (see load_average)` });
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
