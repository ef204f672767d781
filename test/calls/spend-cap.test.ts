// The daily spend cap over calls in progress (shared/spend, shared/calls/pricing.ts): admission reserves what a
// call may cost, concurrent dials never reserve past the cap, a call whose reservation runs out is ended, settled
// spend never exceeds the cap, the reservations return to 0 afterwards, and the reconciler (workers) repairs the
// Redis counters from PostgreSQL.
import t from 'tap';
import { setLimits } from '../../shared/calls/limits.ts';
import { step, type MachineCall } from '../../shared/calls/machine.ts';
import type { Leg } from '../../shared/calls/model.ts';
import { legsCents, spendDeadline, worstCaseCents } from '../../shared/calls/pricing.ts';
import { keyer } from '../../shared/redis.ts';
import { SpendAccounts } from '../../shared/spend/spend-accounts.ts';
import { eventually } from '../helpers/env.ts';
import { aiCall, callEnv, callOrg, dial, getCall, settled, waitStatus, type CallOrg } from './helpers.ts';

const { env } = await callEnv(t);

const day = () => new Date().toISOString().slice(0, 10);
const spendAccounts = new SpendAccounts(env.redis, keyer(env.config.redisPrefix), env.db);
const dayKey = (org: CallOrg) => spendAccounts.dayKey(org.organization_id, day());
/** The organization's day as Redis holds it: settled, reserved and each live call's reservation. */
async function spendDay(org: CallOrg) {
  const d = await spendAccounts.read(org.organization_id, day());
  const calls: Record<string, number> = {};
  for (const [id, r] of d?.calls ?? []) calls[id] = r.cents;
  return { exists: d !== null, settled: d?.settled ?? 0, reserved: d?.reserved ?? 0, calls };
}
const pgSpent = async (org: CallOrg) =>
  Number((await env.db.oneOrNone('SELECT cents FROM org_daily_spend WHERE organization_id = $1', [org.organization_id]))?.cents ?? 0);

t.test('cap 5 cents, 20 concurrent never-ending bridge dials: one admitted, 19 refused, ended when its money runs out', async (t) => {
  const org = await callOrg(env, { daily_spend_cap_cents: 5 });
  const all = await Promise.all(Array.from({ length: 20 }, () => dial(env, org, '+14155550008', '+12125550008')));
  const ok = all.filter((r) => r.status === 202);
  const refused = all.filter((r) => r.status !== 202);
  t.equal(ok.length, 1, 'a bridge reserves min(worst case, 5 cents): the first takes all 5');
  t.equal(refused.length, 19);
  for (const r of refused) {
    t.equal(r.status, 402);
    t.match(r.body.error, { code: 'spend_cap_reached', category: 'account_limit' });
  }
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [org.organization_id])).n, 1, 'no row for refused dials');
  const id = ok[0].body.data.call_id;
  const live = await spendDay(org);
  t.same(live, { exists: true, settled: 0, reserved: 5, calls: { [id]: 5 } }, 'the reservation is in Redis');
  t.equal((await env.db.one('SELECT spend_reserved_cents FROM calls WHERE id = $1', [id])).spend_reserved_cents, 5, 'and on the row');

  const c = await settled(env, org, id, 30_000);
  t.match(c, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'max_duration_reached', picked_up: true });
  t.ok(c.cost_cents <= 5 && c.cost_cents >= 4, `cost ${c.cost_cents} within the 5 cents reserved`);
  t.equal(c.max_duration_seconds, 120, 'the reservation buys 2 minutes of both legs');
  t.ok(await pgSpent(org) <= 5, 'settled spend never exceeds the cap');
  // The settle runs right after the call's end commits (its release effect): wait for it rather than race it.
  await eventually(async () => (await spendDay(org)).reserved === 0, 30_000);
  t.same(await spendDay(org), { exists: true, settled: c.cost_cents, reserved: 0, calls: {} }, 'reservation replaced by the cost');
  const again = await dial(env, org, '+14155550008', '+12125550008');
  t.equal(again.status, 402, 'the cap is spent');
});

t.test('AI calls: full worst-case reservations, then the cap\'s remainder; settled spend is exactly the cap', async (t) => {
  const org = await callOrg(env, { daily_spend_cap_cents: 5, max_call_minutes: 2 });
  const all = await Promise.all(Array.from({ length: 20 }, () => aiCall(env, org, '+14155550008')));
  const ok = all.filter((r) => r.status === 202);
  t.equal(ok.length, 3, '2 + 2 + 1 cents');
  t.ok(all.filter((r) => r.status !== 202).every((r) => r.status === 402 && r.body.error.code === 'spend_cap_reached'));
  const ids = ok.map((r) => r.body.data.call_id as string);
  const rows = await env.db.any('SELECT spend_reserved_cents AS r, max_duration_seconds AS m FROM calls WHERE id = ANY($1::uuid[]) ORDER BY 1', [ids]);
  t.same(rows.map((x) => [x.r, x.m]), [[1, 60], [2, 120], [2, 120]], 'the last one can afford one minute');
  const ended = await Promise.all(ids.map((id) => settled(env, org, id, 30_000)));
  for (const c of ended) t.match(c, { status: 'COMPLETED', disconnection_reason: 'max_duration_reached' });
  t.same(ended.map((c) => c.cost_cents).sort(), [1, 2, 2]);
  t.equal(await pgSpent(org), 5);
  await eventually(async () => (await spendDay(org)).reserved === 0, 30_000);
  t.same(await spendDay(org), { exists: true, settled: 5, reserved: 0, calls: {} });
});

t.test('a hung-up call settles its real cost and frees the rest of its reservation', async (t) => {
  const org = await callOrg(env, { daily_spend_cap_cents: 150 });
  const a = await dial(env, org, '+14155550008', '+12125550008');
  t.equal(a.status, 202);
  t.equal((await spendDay(org)).reserved, 121, 'worst case of a 60-minute bridge: 60 + 61 minutes (the connect leg pays the ring)');
  t.equal((await dial(env, org, '+14155550008', '+12125550008')).status, 202, '29 cents left: a second bridge gets them');
  const third = await dial(env, org, '+14155550008', '+12125550008');
  t.equal(third.status, 402);
  t.match(third.body.error.message, /150 cents/);
  await waitStatus(env, org, a.body.data.call_id, 'ANSWERED');
  await env.request('POST', `/v1/calls/${a.body.data.call_id}/hangup`, { key: org.api_key });
  const c = await settled(env, org, a.body.data.call_id);
  const s = await eventually(async () => { const d = await spendDay(org); return d.reserved === 29 ? d : null; });
  t.equal(s.settled, c.cost_cents, 'its cost is settled');
  t.equal((await dial(env, org, '+14155550008', '+12125550008')).status, 202, 'and the freed money admits again');
});

t.test('Redis loses the day: the gateway seeds it from PostgreSQL before admitting; the reconciler repairs it', async (t) => {
  // 180 minutes (108 s here) for 180 cents: the call outlives the test and leaves nothing of the cap.
  const org = await callOrg(env, { daily_spend_cap_cents: 180, max_call_minutes: 180 });
  const a = await aiCall(env, org, '+14155550008');
  t.equal(a.status, 202);
  const id = a.body.data.call_id;
  await waitStatus(env, org, id, 'ANSWERED');
  t.equal((await spendDay(org)).reserved, 180);

  await env.redis.del(dayKey(org));
  const refused = await aiCall(env, org, '+14155550008');
  t.equal(refused.status, 402, 'the wiped day is rebuilt (live call included) before the next admission');
  t.same(await spendDay(org), { exists: true, settled: 0, reserved: 180, calls: { [id]: 180 } });

  await env.redis.del(dayKey(org));
  const repaired = await eventually(async () => { const d = await spendDay(org); return d.exists ? d : null; }, 30_000);
  t.same(repaired, { exists: true, settled: 0, reserved: 180, calls: { [id]: 180 } }, 'the reconciler seeded it from the live calls');

  await env.redis.hset(dayKey(org), 'reserved', 999);
  await eventually(async () => (await spendDay(org)).reserved === 180, 30_000);
  t.pass('a drifted counter is recounted from the reservations');

  // A call that ended while its settle was lost: its reservation stays until the reconciler settles it.
  const before = await spendDay(org);
  await env.db.none(`UPDATE calls SET status = 'COMPLETED', ended_at = now(), cost_cents = 2 WHERE id = $1`, [id]);
  await eventually(async () => (await spendDay(org)).reserved === 0, 30_000);
  t.same(await spendDay(org), { exists: true, settled: before.settled + 2, reserved: 0, calls: {} }, 'settled with its cost');
});

t.test('pricing: billing never exceeds the reservation, whatever order the events arrive in', async (t) => {
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
  const leg = (role: 'connect' | 'destination', answered: number | null, ended: number | null = null): Leg =>
    ({ role, number: '+14155550008', status: ended !== null ? 'ENDED' : answered !== null ? 'ANSWERED' : 'RINGING', reason: null,
      originated_at: at(0), answered_at: answered !== null ? at(answered) : null, ended_at: ended !== null ? at(ended) : null });
  const base = { time_scale: 1, price_cents_per_minute: 1 };
  // Bridge, 5 cents: connect answered at 2 s, destination at 4 s.
  const legs = { connect: leg('connect', 2), destination: leg('destination', 4) };
  const dl = spendDeadline({ ...base, legs, spend_reserved_cents: 5 });
  t.equal(dl, Date.parse(at(4)) + 120_000 + 499, 'last instant both legs still cost 5 (3 + 2 started minutes)');
  t.equal(legsCents(legs, dl, 1, 1), 5);
  t.equal(legsCents(legs, dl + 1, 1, 1), 6);
  t.equal(spendDeadline({ ...base, legs, spend_reserved_cents: null }), Infinity, 'calls without a reservation are unbounded');
  t.equal(worstCaseCents('bridge', 3600, 30, 1), 121);
  t.equal(worstCaseCents('ai', 3600, 30, 2), 120);

  // A remote hang-up reported long after the money ran out ends the call at the money's deadline.
  const call: MachineCall = {
    id: '0', type: 'bridge', status: 'ANSWERED', legs, picked_up: true, answered_at: new Date(at(4)), ended_at: null,
    originated_at: new Date(at(0)), call_outcome: null, failure_code: null, failure_category: null, disconnection_reason: null,
    duration_seconds: null, time_scale: 1, max_duration_seconds: 120, price_cents_per_minute: 1, cost_cents: 0, spend_reserved_cents: 5,
  };
  const late = step(call, { type: 'carrier', event: { carrier: 'sandbox', callId: '0', legId: 'x', role: 'destination', kind: 'ended',
    reason: 'completed', at: at(4000) } });
  t.match(late.call, { status: 'COMPLETED', disconnection_reason: 'max_duration_reached', cost_cents: 5 });
  const limit = step(call, { type: 'limit', at: new Date(dl) });
  t.match(limit.call, { disconnection_reason: 'max_duration_reached', cost_cents: 5 });
  t.equal(limit.effects.find((e) => e.kind === 'release')?.kind, 'release');
  t.same(step({ ...call, status: 'RINGING', legs: { connect: leg('connect', 2), destination: leg('destination', null) } },
    { type: 'carrier', event: { carrier: 'sandbox', callId: '0', legId: 'x', role: 'destination', kind: 'ended', reason: 'no_answer', at: at(3000) } })
    .call.cost_cents, 5, 'a connect leg left up while the destination rings is billed up to the reservation');
});

t.test('helpers still agree with the record', async (t) => {
  const org = await callOrg(env);
  const r = await aiCall(env, org, '+14155554567');
  const c = await settled(env, org, r.body.data.call_id);
  t.equal(c.cost_cents, 1);
  t.equal((await getCall(env, org, c.id)).max_duration_seconds, 3600, 'a far cap leaves the call-length limit as it was');
  await setLimits(env.db, org.organization_id, { daily_spend_cap_cents: 1 });
  t.equal((await aiCall(env, org, '+14155554567')).status, 402, 'the settled minute used the 1-cent cap');
});
