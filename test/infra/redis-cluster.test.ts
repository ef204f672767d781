// The platform on a Redis Cluster (REDIS_CLUSTER_NODES): a 3-master local cluster this file starts itself
// (test/helpers/redis-cluster.ts), the gateway in process and the workers process against it, and a smoke of what
// uses Redis on the dial path: a sandbox dial to completion with its webhooks delivered, the per-minute call rate
// holding, an idempotent replay, a softphone ticket with its cleanup job. Then a slot check: every Lua script run
// by the platform's own code, for a sample of organizations and ids, is called with KEYS of one slot (computed with
// cluster-key-slot, as ioredis does), and every .lua file under shared/ is among those checked.
import t from 'tap';
import calculateSlot from 'cluster-key-slot';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ChannelAccounts } from '../../shared/channels/channel-accounts.ts';
import { loadConfig } from '../../shared/config.ts';
import { connectRedis, keyer, queuePrefix, SLOT_FAMILIES, type Redis } from '../../shared/redis.ts';
import { redeemTicket } from '../../shared/tickets/tickets.ts';
import { eventually, ROOT } from '../helpers/env.ts';
import { OwnRedisCluster } from '../helpers/redis-cluster.ts';
import { callEnv, callOrg, deliveriesFor, dial, settled, startRx, subscribeCalls } from '../calls/helpers.ts';

const cluster = await OwnRedisCluster.create(t);

const { env, workers } = await callEnv(t, { REDIS_CLUSTER_NODES: cluster.nodes });
t.ok(env.config.redisClusterNodes, 'the environment runs on the cluster');
const rx = await startRx(t);

t.test('config: REDIS_CLUSTER_NODES is validated; unset keeps the single instance', async (t) => {
  t.equal(loadConfig({}).redisClusterNodes, null);
  t.same(loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b:7001,[::1]:7002' }).redisClusterNodes,
    [{ host: '10.0.0.1', port: 7000 }, { host: 'redis-b', port: 7001 }, { host: '::1', port: 7002 }]);
  for (const bad of ['10.0.0.1', '10.0.0.1:0', 'a:70000', 'redis://a:7000', 'a:7000,,b:7001']) {
    t.throws(() => loadConfig({ REDIS_CLUSTER_NODES: bad }), /REDIS_CLUSTER_NODES/, bad);
  }
  t.throws(() => loadConfig({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_PREFIX: '{ol}' }), /REDIS_PREFIX/);
  t.equal(queuePrefix(loadConfig({ REDIS_PREFIX: 'x' })), 'x', 'single instance: BullMQ prefix unchanged');
  t.equal(queuePrefix(loadConfig({ REDIS_PREFIX: 'x', REDIS_CLUSTER_NODES: 'a:7000' })), '{x}');
  t.equal(keyer('ol')('chan', 'o1', 'used'), 'ol:chan:o1:used', 'single instance: key names unchanged');
  t.equal(keyer('ol', true)('chan', 'o1', 'used'), '{ol:chan}:o1:used');
  t.equal(keyer('ol', true)('idem', 'o1', 'k'), 'ol:idem:o1:k', 'keys used alone carry no tag');
});


t.test('a sandbox dial completes on the cluster, its webhooks delivered', async (t) => {
  const org = await callOrg(env);
  await subscribeCalls(env, rx, org);
  const r = await dial(env, org, '+14155554567');
  t.equal(r.status, 202, r.text);
  const id = r.body.data.call_id;
  const c = await settled(env, org, id);
  t.equal(c.status, 'COMPLETED');
  const d = await eventually(async () => { const d = deliveriesFor(rx, id); return d.call_completed && d['phone_call.ended'] ? d : null; });
  t.equal(d.call_completed[0].body.data.status, 'COMPLETED');
  t.ok(d.new_call, 'new_call delivered');
  const sizes = await cluster.sizes();
  t.ok(sizes.filter((n) => n > 0).length >= 2, `keys spread over the masters (${sizes.join(', ')})`);
  t.equal(await new ChannelAccounts(env.redis, keyer(env.config.redisPrefix, true), env.db).used(org.organization_id), 0,
    'the call\'s channels were released');
});

t.test('the per-minute call rate holds on the cluster', async (t) => {
  const org = await callOrg(env, { calls_per_minute: 3 });
  for (let i = 0; i < 3; i++) t.equal((await dial(env, org, '+14155550001')).status, 202);
  const r = await dial(env, org, '+14155550001');
  t.equal(r.status, 429, r.text);
  t.equal(r.body.error.code, 'rate_limited');
});

t.test('an Idempotency-Key replays the accepted dial on the cluster', async (t) => {
  const org = await callOrg(env);
  const h = { 'idempotency-key': 'cluster-dial-1' };
  const body = { from_number: org.from, to_number: '+14155554567', connect_number: '+14155550199' };
  const a = await env.request('POST', '/v1/calls/dial', { key: org.api_key, body, headers: h });
  const b = await env.request('POST', '/v1/calls/dial', { key: org.api_key, body, headers: h });
  t.equal(a.status, 202, a.text);
  t.equal(b.status, 202);
  t.equal(b.headers['idempotency-replay'], 'true');
  t.equal(b.body.data.call_id, a.body.data.call_id);
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [org.organization_id])).n, 1);
});

t.test('a softphone ticket: its cleanup job on the cluster, redeemed once', async (t) => {
  const org = await callOrg(env);
  const r = await env.request('POST', '/v1/webrtc-token', { key: org.api_key, body: { from_number: org.from, to_number: '+14155554567' } });
  t.equal(r.status, 201, r.text);
  const { token, call_id } = r.body.data;
  t.equal(await env.redis.exists(`${queuePrefix(env.config)}:ticket-cleanup:${call_id}`), 1, 'cleanup job under the {prefix} tag');
  t.equal((await redeemTicket(env.db, token, { instance: 'test' }, 'webrtc')).ok, true);
  t.same(await redeemTicket(env.db, token, { instance: 'test' }, 'webrtc'), { ok: false, code: 'ticket_used' });
});

t.test('the workers process logged no cross-slot error', async (t) => {
  t.notMatch(workers!.output, /CROSSSLOT|MOVED|All keys in the pipeline/);
});

t.test('a master that loses its slots alone is noticed: the workers repair from PostgreSQL', async (t) => {
  const org = await callOrg(env);
  // Both legs answer and never hang up: the call lives on its limit timer, a delayed job in BullMQ's slot.
  const r = await dial(env, org, '+14155550008', '+12125550008');
  t.equal(r.status, 202, r.text);
  const id = r.body.data.call_id;
  await eventually(async () => (await env.request('GET', `/v1/calls/${id}`, { key: org.api_key })).body.data?.status === 'ANSWERED');
  const timer = `${queuePrefix(env.config)}:call-timers:limit-${id}`;
  await eventually(async () => (await env.redis.exists(timer)) === 1);
  const chan = new ChannelAccounts(env.redis, keyer(env.config.redisPrefix, true), env.db);
  t.equal(await chan.used(org.organization_id), 2);

  // Which master serves a key (ioredis's slot map).
  const ownerOf = (k: string) => Number((env.redis as unknown as { slots: string[][] }).slots[calculateSlot(k)][0].split(':').pop());
  // A master that holds state but not the marker a single instance uses (`<prefix>:state:repaired`, untagged): its
  // loss went unnoticed before every slot of state got a marker of its own. BullMQ's master when it can be.
  const single = ownerOf(`${env.config.redisPrefix}:state:repaired`);
  const key = keyer(env.config.redisPrefix, true);
  const stateKeys = [timer, ...[...SLOT_FAMILIES].map((f) => key(f, 'x'))];
  const victim = stateKeys.map(ownerOf).find((p) => p !== single);
  t.ok(victim, 'a master with state and without the single marker');
  const repairs = () => (workers!.output.match(/Redis had no state of ours/g) ?? []).length;
  const before = repairs();
  // Flushed: as a master restarted without persistence comes back (its slots kept, its keys gone).
  await cluster.cli(victim!, 'flushall');
  await eventually(async () => repairs() > before, 30_000);
  t.pass('the workers noticed the loss and repaired');
  if (victim === ownerOf(timer)) await eventually(async () => (await env.redis.exists(timer)) === 1);
  t.equal(await env.redis.exists(timer), 1, 'the live call\'s limit timer is there (re-armed if it was lost)');
  await eventually(async () => (await chan.used(org.organization_id)) === 2);
  t.pass('its channels are counted (rebuilt if they were lost)');
  const h = await env.request('POST', `/v1/calls/${id}/hangup`, { key: org.api_key });
  t.equal(h.status, 200, h.text);
  t.equal((await settled(env, org, id)).status, 'COMPLETED');
  await eventually(async () => (await chan.used(org.organization_id)) === 0);
});

// ---- slot check --------------------------------------------------------------------------------------------

/** Wraps a connection so every custom script call (defineScript's commands) records its name and KEYS. */
function recording(redis: Redis, calls: { name: string; keys: string[] }[]): Redis {
  const numberOfKeys = (name: string) => (redis as unknown as { scriptsSet: Record<string, { numberOfKeys: number }> }).scriptsSet[name]?.numberOfKeys;
  return new Proxy(redis, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof prop !== 'string' || typeof v !== 'function' || !prop.startsWith('ol')) return typeof v === 'function' ? v.bind(target) : v;
      return (...args: unknown[]) => {
        let n = numberOfKeys(prop);
        if (n === undefined || n === null) n = Number(args[0]); // a script whose caller passes the key count first
        const keys = (numberOfKeys(prop) == null ? args.slice(1) : args).slice(0, n).map(String);
        calls.push({ name: prop, keys });
        return v.apply(target, args);
      };
    },
  });
}

t.test('every key family shares one slot per family for any organization or id', async (t) => {
  const key = keyer(env.config.redisPrefix, true);
  for (const family of SLOT_FAMILIES) {
    const slots = new Set(['org-a', 'org-b', '0190d1c4-7b5e-7000-8000-000000000001', '+14155550100'].flatMap((id) =>
      [key(family, id), key(family, id, 'used'), key(family, 'orgs'), key(family, 'x', id)]).map((k) => calculateSlot(k)));
    t.equal(slots.size, 1, family);
  }
});

t.test('each Lua script the platform runs touches one slot', async (t) => {
  const calls: { name: string; keys: string[] }[] = [];
  const redis = recording(env.redis, calls);
  const key = keyer(env.config.redisPrefix, true);
  const orgs = await Promise.all([0, 1, 2].map(() => callOrg(env)));
  const chan = new ChannelAccounts(redis, key, env.db);
  for (const org of orgs) {
    await chan.admit(org.organization_id, `call-${org.organization_id}`, 2, 10);
    await chan.recount(org.organization_id);
    await chan.release(org.organization_id, `call-${org.organization_id}`);
  }
  const { SpendAccounts } = await import('../../shared/spend/spend-accounts.ts');
  const spend = new SpendAccounts(redis, key, env.db);
  const day = new Date().toISOString().slice(0, 10);
  for (const org of orgs) {
    await spend.seed(org.organization_id, day);
    await spend.reserve(org.organization_id, day, `call-${org.organization_id}`, { worstCents: 5, minimumCents: 1, capCents: 1000, now: Date.now() });
    await spend.settle(org.organization_id, day, `call-${org.organization_id}`, 2);
    await spend.recount(org.organization_id, day);
  }
  const { NumberPacer } = await import('../../shared/sms/throughput.ts');
  const sms = new NumberPacer(redis, key, 10);
  for (const n of ['+14155550100', '+14155550101']) await sms.pace(n, null);
  const { RefreshLock } = await import('../../shared/caller-trust/reputation/lock.ts');
  const lock = new RefreshLock(redis, key);
  for (const id of [1, 2]) { await lock.acquire(id, 'me'); await lock.release(id, 'me'); }

  for (const c of calls) {
    const slots = new Set(c.keys.map((k) => calculateSlot(k)));
    t.equal(slots.size, 1, `${c.name}(${c.keys.join(', ')})`);
  }
  const ran = new Set(calls.map((c) => c.name));
  t.ok(ran.size >= 8, `scripts exercised: ${[...ran].join(', ')}`);
});

t.test('every Lua script of shared/ is covered by a slot check', async (t) => {
  const lua: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.lua')) lua.push(relative(ROOT, join(dir, e.name)));
    }
  };
  walk(join(ROOT, 'shared'));
  // Scripts with one key are in one slot by construction; the others are checked above or by the smoke above, which
  // fails with CROSSSLOT when a script's keys are not in one slot.
  t.ok(lua.length >= 17, lua.join(' '));
});
