// A store outage is transient, not a bug: with the PostgreSQL cluster or the Redis server this file owns stopped hard,
// the gateway (a real process) answers 503 service_unavailable with Retry-After within a bounded time (never 500,
// never a hang), /readyz of the gateway, workers and signaling says not ready, and once the store is back everything
// recovers: plain requests and dials succeed, /readyz is ready, and a call that was live across the PostgreSQL outage
// completes with its webhook.
import t, { type Test } from 'tap';
import { eventually, httpCall, testEnv, type Proc, type Response } from '../helpers/env.ts';
import { OwnPostgres, OwnRedis } from '../helpers/own-stores.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { setLimits } from '../../shared/calls/limits.ts';

t.setTimeout(420_000);
// Registered before testEnv: torn down after it (tap runs teardowns last-registered first).
const pg = await OwnPostgres.create(t);
const redis = await OwnRedis.create(t);
const env = await testEnv(t, {
  gateway: false,
  env: { DATABASE_URL: pg.url('ol_outage'), REDIS_URL: redis.url, WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: '0.01' },
});
env.db.$pool.on('error', () => undefined);
env.redis.on('error', () => undefined);
const rx = await startReceiver(t);

const workers = env.spawn('workers');
const gw = env.spawn('gateway');
const signaling = env.spawn('signaling', { SIGNALING_MEDIA: 'off' });
t.teardown(() => Promise.all([gw.kill(), workers.kill(), signaling.kill()]));
await Promise.all([workers.ready(), gw.ready(), signaling.ready()]);
const url = /"url":"(http:\/\/[^"]+)"/.exec(gw.output)![1];
/** /readyz of the internal processes that use the stores (beside their /healthz). */
const internalReadyz = [workers, signaling].map((p) => /"health":"(http:\/\/[^"]+)\/healthz"/.exec(p.output)![1]);

const org = await env.bootstrap({ numbers: 1 });
await setLimits(env.db, org.organization_id, { channel_limit: 1000, calls_per_minute: 10_000, daily_spend_cap_cents: 100_000_000 });
await env.db.none('UPDATE api_keys SET rate_limit_per_minute = 100000 WHERE id = $1', [org.api_key_id]);
const sub = await httpCall(url, 'POST', '/api/v1/webhook_subscriptions', {
  key: org.api_key, body: { webhook_url: rx.url('/completed'), event_type: 'call_completed' },
});
t.equal(sub.status, 201, 'subscribed to call_completed');

/** Longest a request may take during an outage: an answer, not a hang. */
const BOUND_MS = 5_000;

interface Timed { res: Response | null; ms: number; what: string }
async function timed(what: string, method: string, path: string, o: Parameters<typeof httpCall>[3] = {}): Promise<Timed> {
  const start = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<null>((r) => { timer = setTimeout(() => r(null), BOUND_MS * 3); });
  const res = await Promise.race([httpCall(url, method, path, o), hang]).finally(() => clearTimeout(timer));
  return { res, ms: Date.now() - start, what };
}

const dialBody = (to: string) => ({ from_number: org.phone_numbers[0], to_number: to, connect_number: '+14155550199' });
const getCall = async (id: string) => (await httpCall(url, 'GET', `/v1/calls/${id}`, { key: org.api_key })).body?.data;

/** The requests fired at the gateway while a store is down: reads, a dial, an unknown key. */
function outageRequests(callId: string) {
  return [
    timed('GET /v1/account', 'GET', '/v1/account', { key: org.api_key }),
    timed('GET /v1/calls/{id}', 'GET', `/v1/calls/${callId}`, { key: org.api_key }),
    timed('GET /v1/calls', 'GET', '/v1/calls', { key: org.api_key }),
    timed('POST /v1/calls/dial', 'POST', '/v1/calls/dial', { key: org.api_key, body: dialBody('+14155557001') }),
    timed('unknown key', 'GET', '/v1/calls', { key: `olk_${'x'.repeat(40)}` }),
  ];
}

/** Fires rounds of requests for `ms` from the moment the store went down (paced, so the key's rate limit stays
 *  out of it) and checks every answer: a success or a well-formed 503 naming the store, in bounded time.
 *  `mustFail` names the requests that cannot succeed without the store. /readyz is asked in every round too: it
 *  must answer in bounded time, and not ready (naming the store) once its one-second cache has lapsed. */
async function duringOutage(t: Test, ms: number, callId: string, store: 'postgres' | 'redis', mustFail: string[]) {
  const answers: Timed[] = [];
  const readies: (Timed & { at: number })[] = [];
  const start = Date.now();
  while (Date.now() - start < ms) {
    const at = Date.now() - start;
    const [ready, ...rest] = await Promise.all([timed('/readyz', 'GET', '/readyz'), ...outageRequests(callId)]);
    readies.push({ ...ready, at });
    answers.push(...rest);
    await new Promise((r) => setTimeout(r, 250));
  }
  const show = (a: Timed) => `${a.what}: ${a.res ? `${a.res.status} in ${a.ms} ms ${a.res.text.slice(0, 160)}` : 'no answer'}`;
  const bad = (pick: (a: Timed) => unknown) => [...new Set(answers.filter(pick).map(show))];
  const named = store === 'postgres' ? /database \(PostgreSQL\)/ : /Redis/;
  t.ok(answers.length >= 2 * 5, `${answers.length} requests during the outage`);
  t.same(bad((a) => !a.res || a.ms >= BOUND_MS), [], `every request answered within ${BOUND_MS} ms`);
  t.same(bad((a) => a.res?.status === 500), [], 'no 500');
  // An unknown key is refused (401) when its lookup and its address's rate count could still be made.
  t.same(bad((a) => a.res && a.res.status >= 300 && a.res.status !== 503 && !(a.what === 'unknown key' && a.res.status === 401)),
    [], 'no other error than 503');
  const unavailable = answers.filter((a) => a.res?.status === 503);
  t.same(bad((a) => a.res?.status === 503 && !(a.res.body?.error?.code === 'service_unavailable'
    && named.test(a.res.body.error.message ?? '') && /^[1-9]\d?$/.test(a.res.headers['retry-after'] ?? '')
    && a.res.headers['x-request-id'])), [], 'each 503: service_unavailable, a message naming the store, Retry-After, X-Request-Id');
  t.same(bad((a) => mustFail.includes(a.what) && a.res?.status !== 503), [], `${mustFail.join(', ')}: 503 throughout`);
  t.ok(unavailable.length > 0, `${unavailable.length} answers were 503 service_unavailable`);
  const slowest = answers.reduce((a, b) => (b.ms > a.ms ? b : a));
  t.comment(`slowest answer during the outage: ${slowest.what}, ${slowest.ms} ms`);

  const down = { status: 'not_ready', postgres: store === 'postgres' ? 'down' : 'ok', redis: store === 'redis' ? 'down' : 'ok' };
  t.same(readies.filter((r) => !r.res || r.ms >= BOUND_MS).map(show), [], `/readyz answered within ${BOUND_MS} ms`);
  const settled = readies.filter((r) => r.at >= 2_500);
  t.ok(settled.length >= 2, `${settled.length} /readyz answers after the first 2.5 s`);
  t.same(settled.filter((r) => r.res?.status !== 503 || JSON.stringify(r.res.body) !== JSON.stringify(down)).map(show), [],
    `/readyz: 503 ${JSON.stringify(down)}`);
}

const readyz = () => httpCall(url, 'GET', '/readyz');

/** Workers' and signaling's /readyz reach `status` with `body` (each answer within the bound). */
async function internalReadiness(t: Test, status: number, body: object) {
  for (const base of internalReadyz) {
    const r = await eventually(async () => {
      const start = Date.now();
      const res = await httpCall(base, 'GET', '/readyz');
      if (Date.now() - start >= BOUND_MS) throw new Error(`${base}/readyz took ${Date.now() - start} ms`);
      return res.status === status ? res : null;
    }, 15_000);
    t.same(r.body, body, `${base}/readyz: ${status} ${JSON.stringify(body)}`);
  }
}

t.test('PostgreSQL stopped hard: 503 with Retry-After and /readyz not ready; back: the live call completes', async (t) => {
  t.equal((await readyz()).status, 200, 'ready before');
  // Answered after 2 s, talks 10 s: its hang-up falls due while PostgreSQL is down.
  const placed = await httpCall(url, 'POST', '/v1/calls/dial', { key: org.api_key, body: dialBody('+14155551234') });
  t.equal(placed.status, 202, 'the call is placed before the outage');
  const callId = placed.body.data.call_id;
  await eventually(async () => (await getCall(callId))?.status === 'ANSWERED', 30_000);

  pg.stopHard();
  await duringOutage(t, 10_000, callId, 'postgres', ['GET /v1/calls/{id}', 'GET /v1/calls', 'POST /v1/calls/dial', 'unknown key']);
  await internalReadiness(t, 503, { status: 'not_ready', postgres: 'down', redis: 'ok' });
  t.equal((await httpCall(url, 'GET', '/healthz')).status, 200, '/healthz: the process is still up');

  await pg.start();
  await eventually(async () => (await readyz()).status === 200, 30_000);
  t.pass('/readyz: ready again');
  await internalReadiness(t, 200, { status: 'ready', postgres: 'ok', redis: 'ok' });
  const account = await eventually(async () => {
    const r = await httpCall(url, 'GET', '/v1/account', { key: org.api_key });
    return r.status === 200 ? r : null;
  }, 30_000);
  t.equal(account.body.data.organization.id, org.organization_id, 'GET /v1/account answers');
  const after = await eventually(async () => {
    const r = await httpCall(url, 'POST', '/v1/calls/dial', { key: org.api_key, body: dialBody('+14155557002') });
    return r.status === 202 ? r : null;
  }, 30_000);
  t.ok(after.body.data.call_id, 'a new dial is accepted');
  const ended = await eventually(async () => { const c = await getCall(callId); return c?.status === 'COMPLETED' ? c : null; }, 60_000);
  t.equal(ended.status, 'COMPLETED', 'the call placed before the outage completed');
  await rx.waitFor((reqs) => reqs.some((r) => r.body?.data?.id === callId), 60_000);
  t.pass('its call_completed webhook arrived');
});

t.test('Redis killed: 503 with Retry-After and /readyz not ready, never a hang; restarted: requests and dials succeed', async (t) => {
  t.equal((await readyz()).status, 200, 'ready before');
  const placed = await httpCall(url, 'POST', '/v1/calls/dial', { key: org.api_key, body: dialBody('+14155550002') });
  t.equal(placed.status, 202, 'a call before the outage');

  await redis.kill();
  await duringOutage(t, 10_000, placed.body.data.call_id, 'redis', ['POST /v1/calls/dial']);
  await internalReadiness(t, 503, { status: 'not_ready', postgres: 'ok', redis: 'down' });
  t.equal((await httpCall(url, 'GET', '/healthz')).status, 200, '/healthz: the process is still up');

  await redis.start();
  await eventually(async () => (await readyz()).status === 200, 30_000);
  t.pass('/readyz: ready again');
  await internalReadiness(t, 200, { status: 'ready', postgres: 'ok', redis: 'ok' });
  await eventually(async () => (await httpCall(url, 'GET', '/v1/account', { key: org.api_key })).status === 200, 30_000);
  t.pass('GET /v1/account answers');
  const after = await eventually(async () => {
    const r = await httpCall(url, 'POST', '/v1/calls/dial', { key: org.api_key, body: dialBody('+14155557003') });
    return r.status === 202 ? r : null;
  }, 30_000);
  t.ok(after.body.data.call_id, 'a new dial is accepted');
});

// The processes kept running through both outages (they log and carry on; none exited).
t.test('the gateway, workers and signaling processes outlived both outages', async (t) => {
  for (const [name, p] of [['gateway', gw], ['workers', workers], ['signaling', signaling]] as [string, Proc][]) {
    t.equal(p.child.exitCode, null, `${name} still running`);
  }
});
