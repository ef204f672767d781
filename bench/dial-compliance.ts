// Dial with call compliance on vs off: `npm run bench:dial-compliance`. Prints figures; asserts nothing.
//
// The real gateway (gateway/main.ts) against a database and Redis prefix of its own, workers stopped (dials are
// accepted and queued: what is measured is the dial request's own path, where the compliance check runs). Two
// organizations dial the same 2,000 contact numbers at random (wrk, BENCH_SECONDS each, alternating off, on, off,
// on in one run so both see the same machine):
//   off: no policy (a new organization: every rule off); the Do-Not-Call and opt-out lookups still run
//   on:  every rule on: calling window (00:00-24:00, so calls are admitted but evaluated in the recipient's zone),
//        all seven days, at most 100 calls per number per 24 h, consent required; every contact has a call consent,
//        half have a timezone (the rest take the zone of their area code); 1,000 other numbers on the DNC list and
//        1,000 opted out.
// Both have a calling history of 10 calls per contact over the last 30 days (20,000 calls), and the tables are
// analyzed after seeding, as in a running deployment (BENCH_ORDER=on,off,... changes the order of the runs).
// Figures: accepted dials/s and dial latency for each, the on/off ratio, and the check's own time per call (its
// query and decision run sequentially in this process, for each organization).
import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapOrganization } from '../shared/accounts/bootstrap.ts';
import { createApiKey } from '../shared/accounts/keys.ts';
import { setLimits } from '../shared/calls/limits.ts';
import { systemClock } from '../shared/clock.ts';
import { assertCallAllowed } from '../shared/compliance/guard.ts';
import { loadConfig } from '../shared/config.ts';
import { createDb, type Db } from '../shared/db.ts';
import { randomToken } from '../shared/ids.ts';
import { createRedis } from '../shared/redis.ts';
import { DEFAULT_ALL_SCOPES } from '../shared/scopes.ts';
import { prepareDatabase } from '../infra/prepare.ts';
import { dropBenchData, freePort, post, runWrk, startProc, waitHttp, type Wrk } from './harness.ts';
import { round, writeResult, type Figure } from './report.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const THREADS = Number(process.env.BENCH_THREADS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const CONTACTS = 2000;
/** Contact numbers: +1 415 555 3000 ... 4999 (sandbox numbers that answer; 555-1212 is outside the range). */
const contactNumber = (i: number) => `+1415555${3000 + i}`;

const ms = (s: string) => {
  const m = /^([\d.]+)(us|ms|s)$/.exec(s);
  return m ? Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1) : NaN;
};

async function seedOrg(db: Db, id: string, name: string, compliance: boolean) {
  const org = await bootstrapOrganization(db, { org: `${name} ${id}`, scopes: [...DEFAULT_ALL_SCOPES], numbers: 1 });
  await setLimits(db, org.organization_id, { channel_limit: 1_000_000, calls_per_minute: 10_000_000, daily_spend_cap_cents: 1_000_000_000_000 });
  const { apiKey } = await createApiKey(db, { organizationId: org.organization_id, userId: org.user_id, scopes: [...DEFAULT_ALL_SCOPES], rateLimitPerMinute: 100_000_000 });
  const o = org.organization_id;
  await db.none(
    `INSERT INTO contacts (id, organization_id, phone_number, name, timezone)
     SELECT gen_random_uuid(), $1, '+1415555' || (3000 + i), 'Contact ' || i, CASE WHEN i % 2 = 0 THEN 'America/Los_Angeles' END
       FROM generate_series(0, $2 - 1) i`, [o, CONTACTS]);
  await db.none(`INSERT INTO dnc_numbers (id, organization_id, phone_number) SELECT gen_random_uuid(), $1, '+1312555' || (1000 + i) FROM generate_series(0, 999) i`, [o]);
  await db.none(`INSERT INTO opt_outs (organization_id, phone_number, channel, source) SELECT $1, '+1646555' || (1000 + i), 'call', 'bench' FROM generate_series(0, 999) i`, [o]);
  // A calling history, as an organization that calls its contacts has: 10 past calls per contact over 30 days (the
  // frequency rule reads the last 24 h of them).
  await db.none(
    `INSERT INTO calls (id, organization_id, type, direction, from_number, to_number, connect_number, status, call_outcome, legs, channels,
                        carrier, time_scale, max_duration_seconds, ring_timeout_seconds, price_cents_per_minute, created_at, updated_at, ended_at)
     SELECT ol_uuidv7(c.at), $1, 'bridge', 'outbound', $2, '+1415555' || (3000 + i % $3), '+14155559999', 'COMPLETED', 'answered', '{}', 2,
            'sandbox', 1, 3600, 30, 1, c.at, now(), now()
       FROM generate_series(0, $3 * 10 - 1) i, LATERAL (SELECT now() - (i * 2592 / $3 || ' seconds')::interval * 100 AS at) c`, [o, org.phone_numbers[0], CONTACTS]);
  if (compliance) {
    await db.none(`INSERT INTO contact_consents (id, organization_id, contact_id, channel, source, captured_at)
                   SELECT gen_random_uuid(), $1, id, 'call', 'bench', now() - interval '1 day' FROM contacts WHERE organization_id = $1`, [o]);
    await db.none(`INSERT INTO compliance_policies (organization_id, window_enabled, window_start, window_end, days_enabled, allowed_days,
                     frequency_enabled, max_calls, period_hours, consent_required)
                   VALUES ($1, true, '00:00', '24:00', true, '{mon,tue,wed,thu,fri,sat,sun}', true, 100, 24, true)`, [o]);
  }
  return { organizationId: o, apiKey, from: org.phone_numbers[0] };
}

async function main(): Promise<void> {
  const id = randomToken(8).toLowerCase();
  const loadBefore = round(loadavg()[0]);
  const dir = mkdtempSync(join(tmpdir(), 'bench-dial-compliance-'));
  const port = await freePort();
  const env: Record<string, string> = {
    DATABASE_URL: `postgres://127.0.0.1:5432/ol_bench_dialc_${id}`, REDIS_PREFIX: `olb_${id}`,
    PORT: String(port), WORKERS_PORT: '0', SIGNALING_PORT: '0', MEDIA_PORT: '0', SANDBOX_TIME_SCALE: '0.01', LOG_LEVEL: 'info',
  };
  const config = loadConfig({ ...process.env, ...env });
  await prepareDatabase(config);
  const db = createDb(config.databaseUrl, 4);
  const redis = createRedis(config.redisUrl);
  let gateway: ChildProcess | null = null;
  try {
    const off = await seedOrg(db, id, 'Bench compliance off', false);
    const on = await seedOrg(db, id, 'Bench compliance on', true);
    // What autovacuum does after a bulk load: without statistics the planner may read every contact of the
    // organization to find one (the (organization, id) index looks as good as the (organization, number) one), or
    // scan the calls for the frequency rule.
    await db.none('ANALYZE');
    gateway = startProc('gateway', env, join(dir, 'gateway.log'));
    const base = `http://127.0.0.1:${port}`;
    await waitHttp(`${base}/readyz`);
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });

    const lua = (o: typeof off) => {
      const file = join(dir, `${o.organizationId}.lua`);
      writeFileSync(file, [
        'wrk.method = "POST"',
        'wrk.headers["Content-Type"] = "application/json"',
        `wrk.headers["Authorization"] = "Bearer ${o.apiKey}"`,
        'request = function()',
        `  local to = "+1415555" .. (3000 + math.random(0, ${CONTACTS - 1}))`,
        `  return wrk.format(nil, nil, nil, '{"from_number":"${o.from}","to_number":"' .. to .. '","connect_number":"+14155559999"}')`,
        'end',
      ].join('\n'));
      return file;
    };
    const scripts = { off: lua(off), on: lua(on) };
    // Warm-up (JIT, pools, the zone lookup's files) on both, each refusal-free.
    for (const o of [off, on]) {
      const warm = await Promise.all(Array.from({ length: 200 }, (_, i) =>
        post(agent, base, '/v1/calls/dial', o.apiKey, { from_number: o.from, to_number: contactNumber(i * 7 % CONTACTS), connect_number: '+14155559999' })));
      const bad = warm.filter((r) => r.status !== 202);
      if (bad.length) throw new Error(`warm-up refused: ${JSON.stringify(bad[0].body)}`);
    }

    const count = async (orgId: string) => (await db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [orgId])).n as number;
    const runs: Record<'off' | 'on', { accepted: number; wrk: Wrk }[]> = { off: [], on: [] };
    for (const mode of (process.env.BENCH_ORDER?.split(',') ?? ['off', 'on', 'off', 'on']) as ('off' | 'on')[]) {
      const o = mode === 'off' ? off : on;
      const before = await count(o.organizationId);
      const wrk = runWrk(`${base}/v1/calls/dial`, scripts[mode], { threads: THREADS, connections: CONNECTIONS, seconds: SECONDS });
      runs[mode].push({ accepted: ((await count(o.organizationId)) - before) / SECONDS, wrk });
      console.log(`${mode}: ${Math.round(runs[mode].at(-1)!.accepted)} accepted dials/s, non-2xx ${wrk.non2xx}, p50 ${wrk.p50} p99 ${wrk.p99}`);
    }
    const sum = (mode: 'off' | 'on') => {
      const r = runs[mode];
      return {
        accepted: r.reduce((s, x) => s + x.accepted, 0) / r.length, non2xx: r.reduce((s, x) => s + x.wrk.non2xx, 0),
        p50: r.reduce((s, x) => s + ms(x.wrk.p50), 0) / r.length, p99: r.reduce((s, x) => s + ms(x.wrk.p99), 0) / r.length,
      };
    };
    // The check alone, in this process: sequential assertCallAllowed calls (one query + the decision) per organization.
    const checkMs: Record<'off' | 'on', number> = { off: 0, on: 0 };
    for (const [mode, o] of [['off', off], ['on', on]] as const) {
      const n = 500;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await assertCallAllowed(db, o.organizationId, contactNumber(i % CONTACTS), 'to_number', systemClock);
      checkMs[mode] = (performance.now() - t0) / n;
    }
    console.log(`the check alone (sequential, in-process): off ${checkMs.off.toFixed(2)} ms, on ${checkMs.on.toFixed(2)} ms per call`);
    const [a, b] = [sum('off'), sum('on')];
    const ratio = b.accepted / a.accepted;
    const load = loadavg().map((l) => round(l));
    console.log(`\nbench:dial-compliance — gateway alone (workers stopped), ${availableParallelism()} cores, load ${loadBefore} before, ${load.join(' ')} after`);
    console.log(`compliance off: ${Math.round(a.accepted)} accepted dials/s (p50 ${a.p50.toFixed(1)} ms, p99 ${a.p99.toFixed(1)} ms, non-2xx ${a.non2xx})`);
    console.log(`compliance on:  ${Math.round(b.accepted)} accepted dials/s (p50 ${b.p50.toFixed(1)} ms, p99 ${b.p99.toFixed(1)} ms, non-2xx ${b.non2xx})`);
    console.log(`on / off: ${ratio.toFixed(2)}x; target >= 1,000 accepted dials/s with compliance on: ${b.accepted >= 1000 ? 'met' : 'NOT met'}`);
    const range = (mode: 'off' | 'on') => {
      const v = runs[mode].map((x) => Math.round(x.accepted));
      return [Math.min(...v), Math.max(...v)] as [number, number];
    };
    const figures: Figure[] = [
      { name: 'accepted dials/s, gateway alone, compliance off (no policy; DNC and opt-out lookups)', value: range('off'), unit: 'dials/s' },
      { name: 'accepted dials/s, gateway alone, every compliance rule on, 2,000 contacts', value: range('on'), unit: 'dials/s',
        target: '>= 1,000/s', met: b.accepted >= 1000 },
      { name: 'compliance on / off, accepted dials/s (same run, alternated)', value: round(ratio), unit: 'x' },
      { name: 'the compliance check alone, every rule off (one query, sequential)', value: round(checkMs.off), unit: 'ms per call' },
      { name: 'the compliance check alone, every rule on (one query, sequential)', value: round(checkMs.on), unit: 'ms per call' },
      { name: 'dial p99, compliance off', value: round(a.p99, 1), unit: 'ms' },
      { name: 'dial p99, compliance on', value: round(b.p99, 1), unit: 'ms' },
    ];
    writeResult('dial', figures, {
      file: `dial.compliance-${new Date().toISOString().slice(0, 10)}`,
      note: `bench:dial-compliance; wrk -t${THREADS} -c${CONNECTIONS} -d${SECONDS}s x 2 per mode, alternated; load ${loadBefore} on ${availableParallelism()} cores before the run${loadBefore > 0.7 ? ' (the machine was busy: compare the ratio, not the absolute rates)' : ''}`,
    });
  } finally {
    if (gateway && gateway.exitCode === null) {
      // SIGTERM when profiling: the CPU profile is written on a clean exit.
      const exited = new Promise((r) => gateway!.once('exit', r));
      gateway.kill(process.env.BENCH_CPU_PROF ? 'SIGTERM' : 'SIGKILL');
      await exited;
    }
    await dropBenchData(redis, db, config.databaseUrl, env.REDIS_PREFIX);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
