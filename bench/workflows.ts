// Workflow benchmark: `npm run bench:workflows`. Prints figures; asserts nothing.
//
// Runs the real processes (gateway/main.ts and one workers/main.ts) against a database and Redis prefix of its own,
// the sandbox SMS carrier (SANDBOX_TIME_SCALE, default 0.01) and an organization with an approved texting registration
// and BENCH_CONTACTS contacts (default 100,000; 10,000 is enough while developing), all tagged "bench". One task:
// sms → wait 60 s (0.6 s scaled) → sms over contact_filter {tag: "bench"}, started at creation. Figures:
//   create:      POST /v1/tasks (the campaign's contact rows written in the request), ms;
//   scheduled:   from the start until every contact took its first step, s;
//   steps/s:     workflow steps (sms, wait, sms) taken per second per workers process, first to last;
//   total:       from the start until the task is completed, s;
//   workers RSS: the workers process's peak resident memory (VmHWM), MiB.
// SMS_NUMBER_RATE_PER_SECOND is raised (BENCH_NUMBER_RATE, default 100000): the bench measures the workflow engine,
// not one number's texting rate.
import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapOrganization } from '../shared/accounts/bootstrap.ts';
import { createApiKey } from '../shared/accounts/keys.ts';
import { setLimits } from '../shared/calls/limits.ts';
import { loadConfig } from '../shared/config.ts';
import { createDb, dropDatabase } from '../shared/db.ts';
import { randomToken } from '../shared/ids.ts';
import { createRedis } from '../shared/redis.ts';
import { DEFAULT_ALL_SCOPES } from '../shared/scopes.ts';
import { prepareDatabase } from '../infra/prepare.ts';
import { call, freePort, startProc, unlinkPrefix, waitHttp } from './harness.ts';
import { round, writeResult, type Figure } from './report.ts';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000);
const SCALE = process.env.SANDBOX_TIME_SCALE ?? '0.01';
const NUMBER_RATE = process.env.BENCH_NUMBER_RATE ?? '100000';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function peakRssMiB(pid: number | undefined): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch { return NaN; }
}

async function main(): Promise<void> {
  const id = randomToken(8).toLowerCase();
  const dir = mkdtempSync(join(tmpdir(), 'bench-workflows-'));
  const [port, workersPort] = [await freePort(), await freePort()];
  const env: Record<string, string> = {
    DATABASE_URL: `postgres://127.0.0.1:5432/ol_bench_wf_${id}`, REDIS_PREFIX: `olb_${id}`,
    PORT: String(port), WORKERS_PORT: String(workersPort), SIGNALING_PORT: '0', MEDIA_PORT: '0',
    SANDBOX_TIME_SCALE: SCALE, SMS_NUMBER_RATE_PER_SECOND: NUMBER_RATE, LOG_LEVEL: 'info',
  };
  const config = loadConfig({ ...process.env, ...env });
  await prepareDatabase(config);
  const db = createDb(config.databaseUrl, 4);
  const redis = createRedis(config.redisUrl);
  const children: ChildProcess[] = [];
  try {
    const org = await bootstrapOrganization(db, { org: `Bench WF ${id}`, scopes: [...DEFAULT_ALL_SCOPES], numbers: 1 });
    await setLimits(db, org.organization_id, { daily_spend_cap_cents: 1_000_000_000_000 });
    const { apiKey } = await createApiKey(db, { organizationId: org.organization_id, userId: org.user_id, scopes: [...DEFAULT_ALL_SCOPES], rateLimitPerMinute: 100_000_000 });
    await db.none(`INSERT INTO contacts (id, organization_id, phone_number, name, tags)
                   SELECT gen_random_uuid(), $1, '+1212' || (2000000 + g)::text, 'Person ' || g, ARRAY['bench'] FROM generate_series(1, $2) g`,
    [org.organization_id, CONTACTS]);
    children.push(startProc('gateway', env, join(dir, 'gateway.log')));
    const workers = startProc('workers', env, join(dir, 'workers.log'));
    children.push(workers);
    const base = `http://127.0.0.1:${port}`;
    await waitHttp(`${base}/readyz`);
    await waitHttp(`http://127.0.0.1:${workersPort}/healthz`);
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const reg = await call(agent, base, 'POST', '/v1/sms/registration', apiKey, { brand: { legal_name: 'Bench Co LLC', ein: '12-3456789',
      vertical: 'retail', country: 'US' }, campaign: { use_case: 'account_notification', description: 'Account notifications for the benchmark.',
      sample_messages: ['Bench Co: your order shipped. Reply STOP to opt out.'], message_flow: 'Customers opt in on the checkout page.' } });
    if (reg.status !== 202) throw new Error(`registration failed: ${reg.status} ${JSON.stringify(reg.body)}`);
    for (let i = 0; (await call(agent, base, 'GET', '/v1/sms/registration', apiKey)).body.data.status !== 'approved'; i++) {
      if (i > 300) throw new Error('registration not approved');
      await sleep(100);
    }
    const steps = [{ type: 'sms', body: 'Hi {first_name}, a reminder. Reply STOP to opt out.' }, { type: 'wait', seconds: 60 }, { type: 'sms', body: 'Last reminder, {first_name}.' }];
    const t0 = Date.now();
    const created = await call(agent, base, 'POST', '/v1/tasks', apiKey, { name: 'Bench', from_number: org.phone_numbers[0], contact_filter: { tag: 'bench' }, steps, start: true });
    if (created.status !== 201) throw new Error(`create failed: ${created.status} ${JSON.stringify(created.body)}`);
    const createMs = Date.now() - t0;
    const task = created.body.data;
    console.log(`create: ${CONTACTS} contacts in ${createMs} ms`);
    let scheduledS = NaN;
    for (;;) {
      const r = await db.one(`SELECT count(*) FILTER (WHERE seq > 0 OR state IN ('completed', 'cancelled'))::int AS first, count(*) FILTER (WHERE state IN ('completed', 'cancelled'))::int AS done
                                FROM workflow_contacts WHERE campaign_id = $1`, [task.campaign_id]);
      if (Number.isNaN(scheduledS) && r.first === CONTACTS) { scheduledS = (Date.now() - t0) / 1000; console.log(`scheduled: every contact took its first step after ${scheduledS.toFixed(1)} s`); }
      if (r.done === CONTACTS) break;
      await sleep(500);
    }
    const totalS = (Date.now() - t0) / 1000;
    const span = await db.one(`SELECT count(*)::int AS n, EXTRACT(EPOCH FROM max(started_at) - min(started_at))::float8 AS s FROM workflow_step_runs WHERE campaign_id = $1`, [task.campaign_id]);
    const stepsPerS = span.n / Math.max(0.001, span.s);
    const rss = peakRssMiB(workers.pid);
    // Every SMS step must have been sent: a bench whose steps fail measures the failure path, not the engine.
    const sms = await db.one(`SELECT count(*) FILTER (WHERE outcome = 'sent')::int AS sent, count(*) FILTER (WHERE outcome IS DISTINCT FROM 'sent')::int AS other,
                                     min(detail) FILTER (WHERE outcome IS DISTINCT FROM 'sent') AS why
                                FROM workflow_step_runs WHERE campaign_id = $1 AND type = 'sms'`, [task.campaign_id]);
    console.log(`sms steps: ${sms.sent} sent, ${sms.other} not${sms.why ? ` (e.g. ${sms.why})` : ''}`);
    if (sms.sent !== 2 * CONTACTS) throw new Error(`only ${sms.sent} of ${2 * CONTACTS} SMS steps were sent: the figures would not measure the engine`);
    console.log(`steps: ${span.n} in ${span.s.toFixed(1)} s = ${stepsPerS.toFixed(0)}/s (one workers process); total ${totalS.toFixed(1)} s; workers peak RSS ${rss.toFixed(0)} MiB`);
    const figures: Figure[] = [
      { name: 'contacts', value: CONTACTS, unit: 'contacts' },
      { name: 'create (POST /v1/tasks with the campaign rows)', value: createMs, unit: 'ms' },
      { name: 'scheduled (every contact took its first step)', value: round(scheduledS, 1), unit: 's' },
      { name: 'workflow steps per second per workers process', value: round(stepsPerS, 0), unit: 'steps/s' },
      { name: 'total (sms → wait 0.6 s → sms, to completed)', value: round(totalS, 1), unit: 's' },
      { name: 'workers peak RSS', value: round(rss, 0), unit: 'MiB' },
      { name: 'SMS steps sent (all of them, or the run stops)', value: sms.sent, unit: 'messages' },
    ];
    const file = writeResult('workflows', figures, { note: `SANDBOX_TIME_SCALE ${SCALE}; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}` });
    console.log(`written to ${file}`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
    await unlinkPrefix(redis, config.redisPrefix);
    await redis.quit();
    await db.$pool.end();
    await dropDatabase(config.databaseUrl);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
