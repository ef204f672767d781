// Replicas: two gateways and two workers processes on one PostgreSQL and one Redis behave as one service. A key's
// rate limit holds across both gateways, an Idempotency-Key replays on either, every call progresses exactly once,
// every webhook is delivered once, a revoked key is refused by both at once, and a footprint change made through
// the API shows in GET /v1/account on every gateway on the next request.
import t from 'tap';
import { revokeAndAnnounce } from '../../shared/accounts/revocation.ts';
import { keyer } from '../../shared/redis.ts';
import { eventually, httpCall, type TestEnv } from '../helpers/env.ts';
import { callEnv, callOrg, deliveriesFor, settled, startRx, subscribeCalls } from '../calls/helpers.ts';

const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.02' });
const secondWorkers = env.spawn('workers');
const secondGateway = env.spawn('gateway');
await Promise.all([secondWorkers.ready(), secondGateway.ready()]);
const url2 = /"url":"(http:\/\/[^"]+)"/.exec(secondGateway.output)?.[1];
if (!url2) throw new Error(`second gateway announced no URL:\n${secondGateway.output}`);
const gateways = [env.url, url2];
const on = (i: number, method: string, path: string, o: Parameters<TestEnv['request']>[2] = {}) => httpCall(gateways[i % 2], method, path, o);

t.test('a key\'s rate limit holds across both gateways', async (t) => {
  const org = await env.bootstrap({ numbers: 1 });
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'], rateLimitPerMinute: 40 });
  // 70 requests alternating between the gateways, 10 at a time.
  const statuses: number[] = [];
  for (let batch = 0; batch < 7; batch++) {
    const res = await Promise.all(Array.from({ length: 10 }, (_, i) => on(batch * 10 + i, 'GET', '/v1/account', { key: k.apiKey })));
    statuses.push(...res.map((r) => r.status));
  }
  t.equal(statuses.filter((s) => s === 200).length, 40, 'exactly the limit is admitted, whichever gateway answers');
  t.equal(statuses.filter((s) => s === 429).length, 30, 'the rest are refused');
  const [a, b] = await Promise.all([on(0, 'GET', '/v1/account', { key: k.apiKey }), on(1, 'GET', '/v1/account', { key: k.apiKey })]);
  t.same([a.status, b.status], [429, 429], 'both gateways keep refusing in this window');
  t.equal(a.headers['x-ratelimit-remaining'], '0');
  t.equal(b.headers['x-ratelimit-remaining'], '0');
});

t.test('an Idempotency-Key replays on the other gateway, and calls placed on both progress exactly once', async (t) => {
  const rx = await startRx(t);
  const org = await callOrg(env);
  await subscribeCalls(env, rx, org, ['new_call', 'call_completed']);
  const body = { from_number: org.from, to_number: '+14155554567', connect_number: '+14155550199' };
  const first = await on(0, 'POST', '/v1/calls/dial', { key: org.api_key, body, headers: { 'idempotency-key': 'replica-key-1' } });
  t.equal(first.status, 202);
  const again = await on(1, 'POST', '/v1/calls/dial', { key: org.api_key, body, headers: { 'idempotency-key': 'replica-key-1' } });
  t.equal(again.status, 202, 'the other gateway replays');
  t.equal(again.headers['idempotency-replay'], 'true');
  t.equal(again.body.data.call_id, first.body.data.call_id, 'the same call');
  const conflict = await on(1, 'POST', '/v1/calls/dial', { key: org.api_key, body: { ...body, to_number: '+14155554568' },
    headers: { 'idempotency-key': 'replica-key-1' } });
  t.equal(conflict.status, 409, 'another body with the key is a conflict on either gateway');

  // 40 more calls, half through each gateway; both workers processes share the queues.
  const placed = await Promise.all(Array.from({ length: 40 }, (_, i) =>
    on(i, 'POST', '/v1/calls/dial', { key: org.api_key, body: { ...body, to_number: `+1415555${String(4500 + i).padStart(4, '0')}` } })));
  t.ok(placed.every((r) => r.status === 202), 'every dial accepted');
  const ids = [first.body.data.call_id, ...placed.map((r) => r.body.data.call_id as string)];
  for (const id of ids) {
    const c = await settled(env, org, id, 60_000);
    t.equal(c.status, 'COMPLETED', `${id} completed`);
  }
  const rows = await env.db.one<{ n: number }>('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [org.organization_id]);
  t.equal(rows.n, 41, 'one row per call, none twice');
  const events = await env.db.any<{ id: string; n: number }>(
    `SELECT data->>'id' AS id, count(*)::int AS n FROM events WHERE event_type = 'call_completed' AND data->>'id' = ANY($1) GROUP BY 1`, [ids]);
  t.equal(events.length, 41, 'every call ended once');
  t.ok(events.every((e) => e.n === 1), 'one call_completed event per call');
  await rx.waitFor(() => ids.every((id) => (deliveriesFor(rx, id).call_completed ?? []).length >= 1
    && (deliveriesFor(rx, id).new_call ?? []).length >= 1), 60_000);
  // Deliveries are at least once; with nobody crashing each webhook-id arrives once.
  for (const id of ids) {
    const d = deliveriesFor(rx, id);
    t.equal(d.call_completed.length, 1, `${id}: one call_completed delivery`);
    t.equal(d.new_call.length, 1, `${id}: one new_call delivery`);
  }
  const legs = await env.db.any<{ id: string; connect: string; destination: string }>(
    `SELECT id, legs->'connect'->>'status' AS connect, legs->'destination'->>'status' AS destination FROM calls WHERE id = ANY($1::uuid[])`, [ids]);
  t.ok(legs.every((l) => l.connect === 'ENDED' && l.destination === 'ENDED'), 'every leg was dialed and ended');
});

t.test('a revoked key is refused by both gateways at once', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'] });
  // Both gateways have the key cached.
  for (const i of [0, 1]) t.equal((await on(i, 'GET', '/v1/account', { key: k.apiKey })).status, 200);
  t.ok(await revokeAndAnnounce(env.db, env.redis, keyer(env.config.redisPrefix), k.apiKeyId));
  const [a, b] = await Promise.all([on(0, 'GET', '/v1/account', { key: k.apiKey }), on(1, 'GET', '/v1/account', { key: k.apiKey })]);
  t.same([a.status, b.status], [401, 401], 'the first request after the revocation is refused on each gateway');
});

t.test('a footprint change made through the API is seen on the other gateway at once, before any change notice', async (t) => {
  // A third gateway whose database change notices arrive 10 s late: only the API's own announcement can make it
  // drop what it keeps, so it must read what was just written.
  const slow = env.spawn('gateway', { ACCOUNT_NOTICE_FAULT_DELAY_MS: '10000' });
  await slow.ready();
  t.teardown(() => slow.kill('SIGKILL'));
  const url3 = /"url":"(http:\/\/[^"]+)"/.exec(slow.output)![1];
  const org = await env.bootstrap({ numbers: 1 });
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read', 'phone_numbers:write'] });
  const footprint = async () => (await httpCall(url3, 'GET', '/v1/account', { key: k.apiKey })).body.data.footprint.phone_numbers;
  t.equal(await footprint(), 1, 'the slow gateway keeps the footprint');

  const bought = await httpCall(env.url, 'POST', '/v1/phone-numbers', { key: k.apiKey, body: { area_code: '512' } });
  t.equal(bought.status, 202, bought.text);
  t.equal(await footprint(), 2, 'the number ordered on the first gateway counts on the next read of the slow one');
  const released = await httpCall(env.url, 'DELETE', `/v1/phone-numbers/${bought.body.data.id}`, { key: k.apiKey });
  t.equal(released.status, 200, released.text);
  t.equal(await footprint(), 1, 'and its release');

  // A change made outside the API (SQL by hand) has no announcement: the slow gateway shows it with the notice.
  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED' WHERE organization_id = $1`, [org.organization_id]);
  t.equal(await footprint(), 1, 'not yet: its notice is 10 s late (the hook is what makes the reads above meaningful)');
  await eventually(async () => (await footprint()) === 0, 30_000);
});

t.test('two gateways and two workers stop cleanly', async (t) => {
  await Promise.all([secondGateway.kill('SIGTERM'), secondWorkers.kill('SIGTERM')]);
  await eventually(async () => /"msg":"stopped"/.test(secondGateway.output) && /"msg":"stopped"/.test(secondWorkers.output), 15_000);
  t.pass('stopped');
});
