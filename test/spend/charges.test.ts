// SpendCharges (shared/spend/charges.ts): idempotent per (organization, kind, ref), refused under the daily spend cap
// and without an active subscription, and a charge whose settle was lost (a crash after its commit) settled by the calls reconciler from its row.
import t from 'tap';
import { reconcileOnce } from '../../shared/calls/reconcile.ts';
import { CallRuntime } from '../../shared/calls/runtime.ts';
import { createLogger } from '../../shared/log.ts';
import { keyer } from '../../shared/redis.ts';
import { SpendAccounts } from '../../shared/spend/spend-accounts.ts';
import { SpendCharges, utcDay } from '../../shared/spend/charges.ts';
import { setPlan } from '../../shared/usage/plan.ts';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t, { gateway: false });
const key = keyer(env.config.redisPrefix);
const spend = new SpendAccounts(env.redis, key, env.db);
const charges = new SpendCharges(env.db, spend);
const day = utcDay(new Date());
const settled = async (orgId: string) => (await env.db.oneOrNone<{ cents: number }>(
  'SELECT cents::int FROM org_daily_spend WHERE organization_id = $1 AND day = $2::date', [orgId, day]))?.cents ?? 0;

t.test('the same ref is charged once, also under concurrency', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const c = { organizationId: org.organization_id, kind: 'reputation_check' as const, ref: 'check-1', cents: 10, capCents: 1000 };
  const first = await charges.charge(c);
  t.match(first, { charged: true, cents: 10, day });
  const again = await charges.charge(c);
  t.same(again, { charged: false, reason: 'duplicate', chargeId: (first as { chargeId: string }).chargeId });
  const racing = await Promise.all(Array.from({ length: 10 }, () => charges.charge({ ...c, ref: 'check-2' })));
  t.equal(racing.filter((r) => r.charged).length, 1, 'one of ten racing charges wins');
  t.ok(racing.every((r) => r.charged || (r.reason === 'duplicate' && r.chargeId)), 'the others are duplicates of it');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM spend_charges WHERE organization_id = $1', [org.organization_id])).n, 2);
  t.equal(await settled(org.organization_id), 20, 'each ref counted once in the day\'s spend');
  const redis = await spend.read(org.organization_id, day);
  t.equal(redis?.settled, 20, 'Redis settled agrees');
  t.equal(redis?.reserved, 0, 'losers dropped their reservations');
  t.equal(redis?.calls.size, 0);
  const other = await charges.charge({ ...c, kind: 'remediation' });
  t.equal(other.charged, true, 'the same ref under another kind is another charge');
});

t.test('the daily cap refuses a charge that does not fit', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const c = (ref: string) => charges.charge({ organizationId: org.organization_id, kind: 'sms', ref, cents: 10, capCents: 25 });
  t.equal((await c('a')).charged, true);
  t.equal((await c('b')).charged, true);
  const refused = await c('c');
  t.same(refused, { charged: false, reason: 'spend_cap', settled: 20, reserved: 0 });
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM spend_charges WHERE organization_id = $1', [org.organization_id])).n, 2, 'no row for the refused charge');
  t.equal(await settled(org.organization_id), 20);
  const free = await charges.charge({ organizationId: org.organization_id, kind: 'sms', ref: 'd', cents: 0, capCents: 25 });
  t.equal(free.charged, true, 'a zero-price charge is recorded without touching the cap');
});

t.test('without an active subscription a new charge is refused before anything is reserved or written', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const c = (ref: string) => charges.charge({ organizationId: org.organization_id, kind: 'reputation_check', ref, cents: 10, capCents: 1000 });
  const paid = await c('paid-before');
  t.equal(paid.charged, true);
  await setPlan(env.db, org.organization_id, { active: false });
  for (const kind of ['reputation_check', 'remediation', 'sms'] as const) {
    await t.rejects(charges.charge({ organizationId: org.organization_id, kind, ref: `after-${kind}`, cents: 10, capCents: 1000 }),
      { code: 'no_active_subscription', category: 'account_limit' }, kind);
  }
  await t.rejects(charges.charge({ organizationId: org.organization_id, kind: 'sms', ref: 'free', cents: 0, capCents: 1000 }),
    { code: 'no_active_subscription' }, 'also a zero-price charge');
  t.same(await c('paid-before'), { charged: false, reason: 'duplicate', chargeId: (paid as { chargeId: string }).chargeId },
    'what was paid before stays paid (a retry completes it, nothing new is charged)');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM spend_charges WHERE organization_id = $1', [org.organization_id])).n, 1, 'no row');
  t.equal(await settled(org.organization_id), 10);
  t.match(await spend.read(org.organization_id, day), { settled: 10, reserved: 0 }, 'nothing reserved');
  await setPlan(env.db, org.organization_id, { active: true });
  t.equal((await c('after-reactivation')).charged, true, 'reactivated, charged again');
});

t.test('the reconciler settles a charge whose settle was lost', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  // What a process that died after the commit leaves: the row and the day's total, and a live reservation whose id
  // is the row's id.
  const id = '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f99';
  const admitted = await spend.reserve(org.organization_id, day, id, { worstCents: 10, minimumCents: 10, capCents: 1000, now: Date.now() - 120_000 });
  t.equal(admitted.admitted, true);
  await env.db.tx(async (tx) => {
    await tx.none(`INSERT INTO spend_charges (id, organization_id, day, kind, ref, cents) VALUES ($1, $2, $3::date, 'reputation_check', 'lost', 10)`,
      [id, org.organization_id, day]);
    await tx.none(`INSERT INTO org_daily_spend (organization_id, day, cents) VALUES ($1, $2::date, 10)
      ON CONFLICT (organization_id, day) DO UPDATE SET cents = org_daily_spend.cents + 10`, [org.organization_id, day]);
  });
  t.match(await spend.read(org.organization_id, day), { settled: 0, reserved: 10 }, 'reserved, not settled');
  const rt = new CallRuntime({ config: env.config, db: env.db, redis: env.redis, key, log: createLogger('test', 'silent'), queues: env.queues, tokenKeys: env.tokenKeys }, false);
  const report = await reconcileOnce(rt, new Map(), Date.now(), { spendHolds: true });
  t.ok(report.spend_settled >= 1, 'the reconciler settled it');
  const after = await spend.read(org.organization_id, day);
  t.equal(after?.settled, 10, 'at the row\'s price');
  t.equal(after?.reserved, 0);
  t.equal(after?.calls.has(id), false);
});
