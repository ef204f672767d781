// SMS benchmark: `npm run bench:sms`. Prints figures; asserts nothing.
//
// Runs the real processes (gateway/main.ts and workers/main.ts) against a database and Redis prefix of its own, with
// the sandbox SMS carrier (SANDBOX_TIME_SCALE, default 0.01: delivery receipts after 20 ms) and an organization with
// an approved texting registration (vetted by the sandbox through the API), BENCH_NUMBERS numbers (default 50), a
// raised spend cap, and a key whose request rate limit is raised. Phases:
//   0. gateway alone: the same wrk run as phase 1 with the workers stopped (accepted and queued only).
//   1. accept:  wrk (BENCH_THREADS x BENCH_CONNECTIONS, BENCH_SECONDS) POSTing /v1/sms/send, rotating the sender
//               over the numbers and the recipient over 10,000 numbers, while the workers send: accepted messages
//               per second (rows inserted / seconds; every 202 is a row) and the request's latency.
//   baseline:   the same wrk run on GET /v1/sms/messages?limit=1 (one query): the ratio accept/read says what a
//               send costs relative to the gateway's floor on the machine as loaded at that moment.
//   2. deliver: the backlog drains through the sms-send queue and the sandbox carrier: messages reaching delivered
//               per second from the first hand-over to the last delivery receipt.
// The per-number limit is SMS_NUMBER_RATE_PER_SECOND (BENCH_NUMBER_RATE, default 1000 here, so the bench measures
// the pipeline and not 50 numbers x 1 msg/s; with the default 1 msg/s, 50 numbers deliver at most 50 msg/s).
// Target: >= 1,000 accepted messages/s.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir, loadavg } from 'node:os';
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
import { call, freePort, runWrk, startProc, unlinkPrefix, waitHttp } from './harness.ts';
import { round, writeResult, type Figure } from './report.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const THREADS = Number(process.env.BENCH_THREADS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const NUMBERS = Number(process.env.BENCH_NUMBERS ?? 50);
const NUMBER_RATE = process.env.BENCH_NUMBER_RATE ?? '1000';
const DRAIN_SECONDS = Number(process.env.BENCH_DRAIN_SECONDS ?? 40);
const SCALE = process.env.SANDBOX_TIME_SCALE ?? '0.01';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function wrkScript(key: string, numbers: string[]): string {
  return `
local froms = { ${numbers.map((n) => `"${n}"`).join(', ')} }
local i = 0
wrk.method = "POST"
wrk.headers["authorization"] = "Bearer ${key}"
wrk.headers["content-type"] = "application/json"
request = function()
  i = i + 1
  local body = string.format('{"from_number":"%s","to_number":"+1212555%04d","body":"Your appointment is tomorrow at 10 AM. Reply STOP to opt out."}',
    froms[(i % #froms) + 1], (i * 7919) % 10000)
  return wrk.format(nil, "/v1/sms/send", nil, body)
end
`;
}

async function main(): Promise<void> {
  if (spawnSync('sh', ['-c', 'command -v wrk']).status !== 0) throw new Error('wrk is not installed (apt-get install -y wrk)');
  const id = randomToken(8).toLowerCase();
  const dir = mkdtempSync(join(tmpdir(), 'bench-sms-'));
  const [port, workersPort] = [await freePort(), await freePort()];
  const env: Record<string, string> = {
    DATABASE_URL: `postgres://127.0.0.1:5432/ol_bench_sms_${id}`, REDIS_PREFIX: `olb_${id}`,
    PORT: String(port), WORKERS_PORT: String(workersPort), SIGNALING_PORT: '0', MEDIA_PORT: '0',
    SANDBOX_TIME_SCALE: SCALE, SMS_NUMBER_RATE_PER_SECOND: NUMBER_RATE, LOG_LEVEL: 'info',
  };
  const config = loadConfig({ ...process.env, ...env });
  await prepareDatabase(config);
  const db = createDb(config.databaseUrl, 4);
  const redis = createRedis(config.redisUrl);
  const children: ChildProcess[] = [];
  try {
    const org = await bootstrapOrganization(db, { org: `Bench SMS ${id}`, scopes: [...DEFAULT_ALL_SCOPES], numbers: NUMBERS });
    await setLimits(db, org.organization_id, { daily_spend_cap_cents: 1_000_000_000_000 });
    const { apiKey } = await createApiKey(db, { organizationId: org.organization_id, userId: org.user_id, scopes: [...DEFAULT_ALL_SCOPES], rateLimitPerMinute: 100_000_000 });

    children.push(startProc('gateway', env, join(dir, 'gateway.log')));
    children.push(startProc('workers', env, join(dir, 'workers.log')));
    const base = `http://127.0.0.1:${port}`;
    await waitHttp(`${base}/readyz`);
    await waitHttp(`http://127.0.0.1:${workersPort}/healthz`);
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const reg = await call(agent, base, 'POST', '/v1/sms/registration', apiKey, { brand: { legal_name: 'Bench Co LLC', ein: '12-3456789',
      vertical: 'retail', country: 'US' }, campaign: { use_case: 'account_notification', description: 'Account notifications for the benchmark.',
      sample_messages: ['Bench Co: your order shipped. Reply STOP to opt out.'], message_flow: 'Customers opt in on the checkout page.' } });
    if (reg.status !== 202) throw new Error(`registration failed: ${reg.status} ${JSON.stringify(reg.body)}`);
    for (let i = 0; (await call(agent, base, 'GET', '/v1/sms/registration', apiKey)).body.data.status !== 'approved'; i++) {
      if (i > 300) throw new Error('registration not approved');
      await sleep(100);
    }
    // Warm-up (JIT, pools), then wait for those to be delivered.
    await Promise.all(Array.from({ length: 200 }, (_, i) => call(agent, base, 'POST', '/v1/sms/send', apiKey,
      { from_number: org.phone_numbers[i % NUMBERS], to_number: `+1415555${String(1000 + i).padStart(4, '0')}`, body: 'Warm-up. Reply STOP to opt out.' })));
    for (let i = 0; i < 600 && (await db.one(`SELECT count(*)::int AS n FROM sms_messages WHERE status NOT IN ('delivered', 'failed', 'undelivered')`)).n > 0; i++) await sleep(100);
    const before = (await db.one('SELECT count(*)::int AS n FROM sms_messages')).n;
    const t0 = new Date();

    const lua = join(dir, 'send.lua');
    writeFileSync(lua, wrkScript(apiKey, org.phone_numbers));
    const wrk = () => runWrk(base, lua, { threads: THREADS, connections: CONNECTIONS, seconds: SECONDS });
    // 0. The gateway alone (workers stopped: messages are accepted and queued, nothing is sent).
    const workers0 = children.pop()!;
    workers0.kill('SIGTERM');
    await new Promise((r) => workers0.once('exit', r));
    wrk();
    const aloneRate = ((await db.one('SELECT count(*)::int AS n FROM sms_messages')).n - before) / SECONDS;
    console.log(`gateway alone: ${aloneRate.toFixed(0)} accepted/s`);
    children.push(startProc('workers', env, join(dir, 'workers.log')));
    await waitHttp(`http://127.0.0.1:${workersPort}/healthz`);
    const before1 = (await db.one('SELECT count(*)::int AS n FROM sms_messages')).n;

    // 1. Accept while the workers send (the backlog of phase 0 included).
    const { non2xx, p50, p99 } = wrk();
    const accepted = (await db.one('SELECT count(*)::int AS n FROM sms_messages')).n - before1;
    const acceptRate = accepted / SECONDS;
    console.log(`accepted: ${accepted} messages in ${SECONDS} s = ${acceptRate.toFixed(0)}/s (non-2xx ${non2xx}); latency p50 ${p50}, p99 ${p99}`);

    // The same wrk run on a one-query authenticated read, right after: the gateway's floor on this machine now, so
    // the accept rate can be read as a ratio when the machine is shared.
    const readLua = join(dir, 'read.lua');
    writeFileSync(readLua, `wrk.headers["authorization"] = "Bearer ${apiKey}"\n`);
    const readRate = runWrk(`${base}/v1/sms/messages?limit=1`, readLua, { threads: THREADS, connections: CONNECTIONS, seconds: SECONDS }).rps;
    console.log(`baseline: GET /v1/sms/messages?limit=1 at ${readRate.toFixed(0)}/s; send/read = ${(acceptRate / readRate).toFixed(2)}`);

    // 2. Drain: delivered per second through the queue and the sandbox carrier.
    const until = Date.now() + DRAIN_SECONDS * 1000;
    let left = accepted;
    while (Date.now() < until) {
      left = (await db.one(`SELECT count(*)::int AS n FROM sms_messages WHERE created_at >= $1 AND status IN ('queued', 'sent')`, [t0])).n;
      if (left === 0) break;
      await sleep(500);
    }
    const span = await db.one(`SELECT count(*) FILTER (WHERE status = 'delivered')::int AS delivered, count(*) FILTER (WHERE status = 'failed')::int AS failed,
        EXTRACT(EPOCH FROM max(delivered_at) - min(sent_at))::float8 AS seconds FROM sms_messages WHERE created_at >= $1`, [t0]);
    const deliverRate = span.delivered / Math.max(0.001, span.seconds);
    console.log(`delivered: ${span.delivered} (failed ${span.failed}, still pending ${left}) in ${span.seconds.toFixed(1)} s = ${deliverRate.toFixed(0)}/s`);
    const charged = (await db.one(`SELECT count(*)::int AS n FROM spend_charges WHERE kind = 'sms'`)).n;
    console.log(`charges written: ${charged}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

    const figures: Figure[] = [
      { name: 'accepted SMS/s (POST /v1/sms/send), gateway alone (workers stopped)', value: round(aloneRate, 0), unit: 'msg/s',
        target: '>= 1,000/s', met: aloneRate >= 1000 },
      { name: 'accepted SMS/s (POST /v1/sms/send) with the workers sending on the same 2 cores', value: round(acceptRate, 0), unit: 'msg/s',
        target: '>= 1,000/s', met: acceptRate >= 1000 },
      { name: 'accepted SMS/s ÷ one-query authenticated reads/s (GET /v1/sms/messages?limit=1, same run)', value: round(acceptRate / readRate), unit: 'ratio' },
      { name: 'send request latency p50', value: parseFloat(p50) * (p50.endsWith('us') ? 0.001 : p50.endsWith('ms') ? 1 : 1000), unit: 'ms' },
      { name: 'send request latency p99', value: parseFloat(p99) * (p99.endsWith('us') ? 0.001 : p99.endsWith('ms') ? 1 : 1000), unit: 'ms' },
      { name: `delivered SMS/s through the sms-send queue and the sandbox carrier (1 workers process, ${NUMBERS} numbers, per-number limit ${NUMBER_RATE}/s)`,
        value: round(deliverRate, 0), unit: 'msg/s' },
    ];
    const path = writeResult('sms', figures, { note: `machine shared with other engineers' test runs (load average ${loadavg().map((l) => l.toFixed(1)).join(', ')} at the end); `
      + `${accepted} messages accepted, ${span.delivered} delivered, ${left} not delivered within ${DRAIN_SECONDS} s` });
    console.log(`wrote ${path}`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await sleep(500);
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await unlinkPrefix(redis, config.redisPrefix);
    await redis.quit();
    await db.$pool.end();
    await dropDatabase(config.databaseUrl);
    if (!process.env.BENCH_KEEP_LOGS) rmSync(dir, { recursive: true, force: true });
    else console.log(`logs: ${dir} ${readFileSync(join(dir, 'gateway.log'), 'utf8').length} bytes`);
  }
}

await main();
