// Channel accounting: 200 concurrent dials (through two gateways) against a limit of 10 never hold more than 10,
// and every rejected dial left no row; release is idempotent; the reconciler frees what crashed processes left.
import t from 'tap';
import { ChannelAccounts } from '../../shared/channels/channel-accounts.ts';
import type { Carrier, OriginateRequest } from '../../shared/carriers/carrier.ts';
import { CallRuntime } from '../../shared/calls/runtime.ts';
import { insertCall, loadCall } from '../../shared/calls/store.ts';
import { uuidv7 } from '../../shared/ids.ts';
import { createLogger } from '../../shared/log.ts';
import { keyer } from '../../shared/redis.ts';
import { eventually, httpCall } from '../helpers/env.ts';
import { aiCall, callEnv, callOrg, channelsUsed, dial, getCall, settled, waitStatus } from './helpers.ts';

const { env } = await callEnv(t);
const channels = new ChannelAccounts(env.redis, keyer(env.config.redisPrefix), env.db);

t.test('200 concurrent dials against a channel limit of 10', async (t) => {
  const org = await callOrg(env, { channel_limit: 10 });
  // A second gateway process: admission is atomic across replicas, not only within one.
  const gw2 = env.spawn('gateway');
  await gw2.ready();
  const url2 = /"url":"([^"]+)"/.exec(gw2.output)![1];

  let sampling = true;
  let maxCounter = 0;
  let maxLiveRows = 0;
  let samples = 0;
  const sampler = (async () => {
    while (sampling) {
      const [used, live] = await Promise.all([
        channelsUsed(env, org.organization_id),
        env.db.one('SELECT COALESCE(sum(channels), 0)::int AS n FROM calls WHERE organization_id = $1 AND ended_at IS NULL', [org.organization_id]),
      ]);
      maxCounter = Math.max(maxCounter, used);
      maxLiveRows = Math.max(maxLiveRows, live.n);
      samples++;
    }
  })();

  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => {
    const body = i % 3 === 0
      ? { path: '/v1/calls', body: { from_number: org.from, to_number: '+14155554567', agent: { greeting: 'Hi' } } }
      : { path: '/v1/calls/dial', body: { from_number: org.from, to_number: '+14155554567', connect_number: '+14155559999' } };
    const send = i % 2 ? httpCall(url2, 'POST', body.path, { key: org.api_key, body: body.body }) : env.request('POST', body.path, { key: org.api_key, body: body.body });
    return send;
  }));
  const accepted = results.filter((r) => r.status === 202).map((r) => r.body.data.call_id as string);
  const rejected = results.filter((r) => r.status !== 202);
  t.ok(accepted.length >= 5, `${accepted.length} accepted`);
  t.ok(rejected.length > 0, `${rejected.length} rejected`);
  for (const r of rejected) {
    t.equal(r.status, 409);
    t.match(r.body.error, { code: 'channel_limit_exceeded', category: 'account_limit' });
  }
  for (const id of accepted) await settled(env, org, id, 30_000);
  sampling = false;
  await sampler;
  t.comment(`accepted ${accepted.length}, rejected ${rejected.length}; ${samples} samples: max counter ${maxCounter}, max live channels in Postgres ${maxLiveRows}`);
  t.ok(maxCounter <= 10, `never more than 10 channels held (max sampled ${maxCounter})`);
  t.ok(maxLiveRows <= 10, `never more than 10 channels of live calls in Postgres (max ${maxLiveRows})`);
  const ids = (await env.db.any('SELECT id FROM calls WHERE organization_id = $1', [org.organization_id])).map((r) => r.id).sort();
  t.same(ids, [...accepted].sort(), 'a row for every accepted dial and none for a rejected one');
  // A call's end is committed first and its channels released right after (an effect of the same job): a call can
  // look settled an instant before its release.
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 10_000);
  t.pass('all released');
  t.same([...(await channels.holds(org.organization_id)).keys()], []);
  await gw2.kill('SIGTERM');
});

t.test('admission and release scripts: atomic limit, idempotent per call', async (t) => {
  const org = uuidv7();
  t.same(await channels.admit(org, 'c1', 2, 3), { admitted: true, used: 2 });
  t.same(await channels.admit(org, 'c1', 2, 3), { admitted: true, used: 2 }, 'admitting the same call again holds nothing more');
  t.same(await channels.admit(org, 'c2', 2, 3), { admitted: false, used: 2 });
  t.same(await channels.admit(org, 'c3', 1, 3), { admitted: true, used: 3 });
  t.equal(await channels.release(org, 'c1'), 2);
  t.equal(await channels.release(org, 'c1'), 0, 'a second release frees nothing');
  t.equal(await channels.release(org, 'nope'), 0);
  t.equal(await channels.used(org), 1);
  t.equal(await channels.release(org, 'c3'), 1);
  t.equal(await channels.used(org), 0);
  t.notOk((await channels.organizationsHolding()).includes(org), 'an organization without holds is forgotten');
});

t.test('reconciler: orphan holds, calls ended behind its back, a drifted counter, lost dial jobs, stuck calls', async (t) => {
  const org = await callOrg(env, { channel_limit: 50 });
  // A hold whose dial never got a row (the gateway died between admission and insert), two minutes old.
  await channels.admit(org.organization_id, uuidv7(), 2, 50, Date.now() - 120_000);
  // A hold of a call that ended in Postgres while its release was lost.
  const live = await aiCall(env, org, '+14155550008');
  const liveId = live.body.data.call_id;
  await waitStatus(env, org, liveId, 'ANSWERED');
  await env.db.none(`UPDATE calls SET status = 'COMPLETED', ended_at = now(), call_outcome = 'answered' WHERE id = $1`, [liveId]);
  // A live call whose counter drifted.
  const other = await aiCall(env, org, '+12125550008');
  await waitStatus(env, org, other.body.data.call_id, 'ANSWERED');
  await env.redis.incrby(`${env.config.redisPrefix}:chan:${org.organization_id}:used`, 5);
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 1, 10_000);
  t.same([...(await channels.holds(org.organization_id)).keys()], [other.body.data.call_id], 'only the live call holds');

  // A call committed QUEUED whose dial job was lost: re-enqueued, then it runs to completion.
  const lostId = uuidv7(Date.now() - 30_000);
  await channels.admit(org.organization_id, lostId, 1, 50);
  await insertCall(env.db, {
    id: lostId, organization_id: org.organization_id, api_key_id: org.api_key_id, user_id: org.user_id, type: 'ai',
    from_number: org.from, to_number: '+14155554567', connect_number: null, phone_number_id: null, agent_id: null,
    agent: { id: null, name: 'A', greeting: 'Hi', prompt: '', voice: 'neutral' }, record: false,
    legs: { destination: { role: 'destination', number: '+14155554567', status: 'PENDING', reason: null, originated_at: null, answered_at: null, ended_at: null } },
    channels: 1, carrier: 'sandbox', time_scale: 0.01, max_duration_seconds: 3600, ring_timeout_seconds: 30, price_cents_per_minute: 1,
    created_at: new Date(Date.now() - 30_000),
  });
  const lost = await settled(env, org, lostId, 20_000);
  t.match(lost, { status: 'COMPLETED', disconnection_reason: 'remote_hangup' }, 'the lost dial was re-enqueued and ran');

  // A call stuck ringing long past any ring time (its carrier events were lost): ended and released.
  const stuckId = uuidv7(Date.now() - 300_000);
  await channels.admit(org.organization_id, stuckId, 1, 50);
  await insertCall(env.db, {
    id: stuckId, organization_id: org.organization_id, api_key_id: null, user_id: null, type: 'ai', from_number: org.from,
    to_number: '+14155554567', connect_number: null, phone_number_id: null, agent_id: null,
    agent: { id: null, name: 'A', greeting: 'Hi', prompt: '', voice: 'neutral' }, record: false,
    legs: { destination: { role: 'destination', number: '+14155554567', status: 'RINGING', reason: null, originated_at: new Date(Date.now() - 300_000).toISOString(), answered_at: null, ended_at: null } },
    channels: 1, carrier: 'sandbox', time_scale: 0.01, max_duration_seconds: 3600, ring_timeout_seconds: 30, price_cents_per_minute: 1,
    created_at: new Date(Date.now() - 300_000),
  });
  await env.db.none(`UPDATE calls SET status = 'RINGING', originated_at = now() - interval '5 minutes', updated_at = now() - interval '5 minutes' WHERE id = $1`, [stuckId]);
  const stuck = await settled(env, org, stuckId, 20_000);
  t.match(stuck, { status: 'FAILED', call_outcome: 'failed', disconnection_reason: 'setup_timeout' });
  await eventually(async () => !(await channels.holds(org.organization_id)).has(stuckId), 10_000);

  await env.request('POST', `/v1/calls/${other.body.data.call_id}/hangup`, { key: org.api_key });
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 10_000);
});

t.test('both legs of a bridge present the organization\'s from_number; the carrier gets the leg ids and limits', async (t) => {
  const org = await callOrg(env);
  const originated: OriginateRequest[] = [];
  const fake: Carrier = {
    name: 'fake', timeScale: 1, pricePerMinuteCents: 1,
    async originate(r) { originated.push(r); }, async hangup() {}, async bridge() {},
  };
  const rt = new CallRuntime({ config: env.config, db: env.db, redis: env.redis, key: keyer(env.config.redisPrefix), log: createLogger('test', 'warn'), queues: env.queues, tokenKeys: env.tokenKeys }, fake);
  const r = await dial(env, org, '+14155554567', '+14155559999', { record: true });
  const call = (await loadCall(env.db, r.body.data.call_id))!;
  await rt.run(call, [{ kind: 'originate', role: 'connect' }, { kind: 'originate', role: 'destination' }]);
  t.match(originated, [
    { role: 'connect', number: '+14155559999', from: org.from, legId: `${call.id}-connect`, ringTimeoutSeconds: 30, maxDurationSeconds: 3600, record: true },
    { role: 'destination', number: '+14155554567', from: org.from, legId: `${call.id}-destination` },
  ]);
  const c = await settled(env, org, call.id);
  t.equal((await getCall(env, org, c.id)).legs[1].number, '+14155554567');
});

t.test('calls inserted in one turn share a statement; a bad row fails only its own insert', async (t) => {
  const org = await callOrg(env, {});
  const call = (id: string, organizationId = org.organization_id) => ({
    id, organization_id: organizationId, api_key_id: null, user_id: null, type: 'ai' as const, from_number: org.from,
    to_number: '+14155554567', connect_number: null, phone_number_id: null, agent_id: null,
    agent: { id: null, name: 'A', greeting: 'Hi', prompt: '', voice: 'neutral' }, record: false,
    legs: { destination: { role: 'destination' as const, number: '+14155554567', status: 'PENDING' as const, reason: null, originated_at: null, answered_at: null, ended_at: null } },
    channels: 1, carrier: 'sandbox', time_scale: 0.01, max_duration_seconds: 3600, ring_timeout_seconds: 30, price_cents_per_minute: 1,
    created_at: new Date(),
  });
  const ids = [uuidv7(), uuidv7(), uuidv7(), uuidv7()];
  // The third belongs to no organization (a foreign-key violation): in a shared statement it would take the others down.
  const results = await Promise.allSettled(ids.map((id, i) => insertCall(env.db, call(id, i === 2 ? '00000000-0000-7000-8000-000000000000' : org.organization_id))));
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  // (ids made in one millisecond are not ordered among themselves: compare as sets)
  const rows = await env.db.any('SELECT id FROM calls WHERE id IN ($1:csv)', [ids]);
  t.same(rows.map((r) => r.id).sort(), [ids[0], ids[1], ids[3]].sort(), 'the good rows are there, the bad one is not');
  const events = await env.db.one(`SELECT count(*)::int AS n FROM events WHERE event_type = 'new_call' AND data->>'id' IN ($1:csv)`, [ids]);
  t.equal(events.n, 3, 'one new_call event per inserted call');
  for (const id of [ids[0], ids[1], ids[3]]) await env.db.none('DELETE FROM calls WHERE id = $1', [id]);
});
