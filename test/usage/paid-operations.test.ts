// Every paid operation checks the plan the same way (shared/usage/plan.ts, subscriptionRefusal): with the
// organization's subscription inactive, calls on every path, SMS, a fresh reputation check and a remediation case
// answer the same 402 no_active_subscription, and leave no charge, no spend, no reservation and no record behind. A
// message accepted before the subscription lapsed fails at hand-over, uncharged. Reactivated, the same requests go
// through.
import t from 'tap';
import { setLimits } from '../../shared/calls/limits.ts';
import { keyer } from '../../shared/redis.ts';
import { createSmsCarrier } from '../../shared/sms/configured.ts';
import { insertOutbound } from '../../shared/sms/messages.ts';
import { handOver, NO_SUBSCRIPTION_ERROR } from '../../shared/sms/send.ts';
import { SpendAccounts } from '../../shared/spend/spend-accounts.ts';
import { SpendCharges, utcDay } from '../../shared/spend/charges.ts';
import { setPlan } from '../../shared/usage/plan.ts';
import { channelsUsed } from '../calls/helpers.ts';
import { addNumber, num } from '../caller-trust/reputation-helpers.ts';
import { smsEnv, textingOrg } from '../sms/helpers.ts';

const { env } = await smsEnv(t);
const org = await textingOrg(env, { org: 'Lapsed Co' });
const key = org.api_key;
await setLimits(env.db, org.organization_id, { channel_limit: 1000, calls_per_minute: 10_000, daily_spend_cap_cents: 100_000_000 });
const spend = new SpendAccounts(env.redis, keyer(env.config.redisPrefix), env.db);

const FLAGGED = num(401, 1118); // the sandbox provider: ATT MEDIUM, VERIZON HIGH
const UNCHECKED = num(401, 1111);
for (const n of [FLAGGED, UNCHECKED]) await addNumber(env, org, n);
const flagged = await env.request('GET', `/v1/caller-trust/reputation/numbers/${encodeURIComponent(FLAGGED)}?fresh=true`, { key });
if (flagged.status !== 200) throw new Error(`refresh of ${FLAGGED}: ${flagged.status} ${flagged.text}`);

const count = async (sql: string) => (await env.db.one(sql, [org.organization_id])).n as number;
const OPERATIONS: { name: string; ok: number; run: () => ReturnType<typeof env.request<any>>; records: () => Promise<number> }[] = [
  { name: 'POST /v1/calls/dial', ok: 202,
    run: () => env.request('POST', '/v1/calls/dial', { key, body: { from_number: org.from, to_number: '+14155554601', connect_number: '+14155550199' } }),
    records: () => count('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1') },
  { name: 'POST /v1/calls', ok: 202,
    run: () => env.request('POST', '/v1/calls', { key, body: { from_number: org.from, to_number: '+14155554602', agent: { name: 'Ava', greeting: 'Hi.' } } }),
    records: () => count('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1') },
  { name: 'POST /v1/webrtc-token', ok: 201,
    run: () => env.request('POST', '/v1/webrtc-token', { key, body: { from_number: org.from, to_number: '+14155554603' } }),
    records: () => count('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1') },
  { name: 'POST /v1/room-token', ok: 201,
    run: () => env.request('POST', '/v1/room-token', { key, body: { from_number: org.from, to_number: '+14155554606' } }),
    records: () => count('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1') },
  { name: 'POST /v1/sms/send', ok: 202,
    run: () => env.request('POST', '/v1/sms/send', { key, body: { from_number: org.from, to_number: '+14155554604', body: 'Your appointment is tomorrow.' } }),
    records: () => count('SELECT count(*)::int AS n FROM sms_messages WHERE organization_id = $1') },
  { name: 'GET /v1/caller-trust/reputation/numbers/{phone}?fresh=true', ok: 200,
    run: () => env.request('GET', `/v1/caller-trust/reputation/numbers/${encodeURIComponent(UNCHECKED)}?fresh=true`, { key }),
    records: () => count(`SELECT count(*)::int AS n FROM reputation_lookups WHERE organization_id = $1 AND reason = 'paid'`) },
  { name: 'POST /v1/caller-trust/reputation/remediations', ok: 201,
    run: () => env.request('POST', '/v1/caller-trust/reputation/remediations', { key, body: { phone_number: FLAGGED, kind: 'umbrella' } }),
    records: () => count('SELECT count(*)::int AS n FROM reputation_remediations WHERE organization_id = $1') },
];

const money = async () => ({
  charges: await count('SELECT count(*)::int AS n FROM spend_charges WHERE organization_id = $1'),
  settled: await count(`SELECT COALESCE(sum(cents), 0)::int AS n FROM org_daily_spend WHERE organization_id = $1`),
  reserved: (await spend.read(org.organization_id, utcDay(new Date())))?.reserved ?? 0,
  channels: await channelsUsed(env, org.organization_id),
});

t.test('with the subscription inactive every paid operation answers the same 402 and leaves nothing behind', async (t) => {
  await setPlan(env.db, org.organization_id, { active: false });
  const before = await money();
  const answers: unknown[] = [];
  for (const op of OPERATIONS) {
    const records = await op.records();
    const r = await op.run();
    t.equal(r.status, 402, `${op.name}: ${r.text}`);
    t.equal(r.body.error?.code, 'no_active_subscription', op.name);
    answers.push(r.body.error);
    t.equal(await op.records(), records, `${op.name}: no record written`);
    t.same(await money(), before, `${op.name}: no charge, spend, reservation or channel`);
  }
  t.same(answers, OPERATIONS.map(() => ({ code: 'no_active_subscription', message: 'Your organization has no active subscription.',
    category: 'account_limit', resolution_hint: 'An administrator can reactivate it: admin org plan --org <id> --active true' })),
  'every operation answers the same error');
});

t.test('a message accepted before the subscription lapsed fails at hand-over, uncharged', async (t) => {
  await setPlan(env.db, org.organization_id, { active: true });
  // Queued as the accept path leaves it, without a send job: the hand-over below is the only one.
  const m = await insertOutbound(env.db, { organizationId: org.organization_id, local: org.from, remote: '+14155554605', body: 'Hello',
    encoding: 'GSM-7', segments: 1 });
  await setPlan(env.db, org.organization_id, { active: false });
  const before = await money();
  const charges = new SpendCharges(env.db, spend);
  t.equal(await handOver({ db: env.db, charges, carrier: createSmsCarrier(env.queues, env.config) }, m.id), 'failed');
  t.match(await env.db.one('SELECT status, error_message, provider_id, sent_at FROM sms_messages WHERE id = $1', [m.id]),
    { status: 'failed', error_message: NO_SUBSCRIPTION_ERROR, provider_id: null, sent_at: null });
  t.same(await money(), before, 'not charged');
});

t.test('reactivated, the same operations go through', async (t) => {
  await setPlan(env.db, org.organization_id, { active: true });
  for (const op of OPERATIONS) {
    const r = await op.run();
    t.equal(r.status, op.ok, `${op.name}: ${r.text}`);
  }
  t.ok((await money()).charges > 0, 'the paid ones were charged');
});
