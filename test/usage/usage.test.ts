// Usage after real sandbox calls on every path (spawned workers, SANDBOX_TIME_SCALE 0.01) and after charge rows:
// the numbers equal what the daily spend cap counts (org_daily_spend, calls' cost, spend_charges). The plan set with
// the admin CLI: included minutes used up by those calls answer 402 voice_usage_exhausted. Validation, tenancy, scopes.
import t from 'tap';
import { ChannelAccounts } from '../../shared/channels/channel-accounts.ts';
import { SpendAccounts } from '../../shared/spend/spend-accounts.ts';
import { SpendCharges } from '../../shared/spend/charges.ts';
import { keyer } from '../../shared/redis.ts';
import { callEnv, callOrg, settled } from '../calls/helpers.ts';
import { runAdmin } from '../helpers/admin-cli.ts';

const { env } = await callEnv(t);
const org = await callOrg(env);
const other = await callOrg(env);
const key = org.api_key;
const today = new Date().toISOString().slice(0, 10);
const month = today.slice(0, 7);
const charges = new SpendCharges(env.db, new SpendAccounts(env.redis, keyer(env.config.redisPrefix), env.db));

const usage = async (query = '', k = key) => {
  const r = await env.request('GET', `/v1/usage${query}`, { key: k });
  if (r.status !== 200) throw new Error(`usage: ${r.status} ${r.text}`);
  return r.body.data;
};
const dayOf = async (k = key) => (await usage(`?from=${today}&to=${today}`, k))[0];

t.test('a new organization has zero usage and an active plan with no minute limit', async (t) => {
  const d = await dayOf();
  t.match(d, { period: today, calls: { total: 0 }, minutes: { total: 0 }, sms_segments: 0, reputation_checks: 0, spend_cents: { total: 0 } });
  const s = (await env.request('GET', '/v1/usage/summary', { key })).body.data;
  t.same(s.plan, { subscription_active: true, included_voice_minutes: null, used_voice_minutes: 0, remaining_voice_minutes: null });
  t.match(s.spend_cap, { daily_cap_cents: 100_000_000, today_cents: 0, remaining_today_cents: 100_000_000 });
  const limits = await env.db.one('SELECT channel_limit, calls_per_minute FROM organizations WHERE id = $1', [org.organization_id]);
  t.same(s.limits, { ...limits, channels_in_use: 0, allow_countries: [] }, 'the call limits, nothing held, domestic calls only');
});

t.test('the summary\'s limits list the countries an operator allowed, sorted, for this organization only', async (t) => {
  const set = await runAdmin(env.env, ['org', 'limits', '--org', org.organization_id, '--allow-countries', 'MX,GB']);
  t.equal(set.code, 0, set.stderr);
  t.teardown(() => runAdmin(env.env, ['org', 'limits', '--org', org.organization_id, '--allow-countries', 'none']));
  const s = (await env.request('GET', '/v1/usage/summary', { key })).body.data;
  t.same(s.limits.allow_countries, ['GB', 'MX']);
  const o = await env.request('GET', '/v1/usage/summary', { key: other.api_key });
  t.equal(o.status, 200);
  t.same(o.body.data.limits.allow_countries, [], 'another organization sees its own (none)');
});

t.test('the summary\'s limits say how many channels are held right now', async (t) => {
  const accounts = new ChannelAccounts(env.redis, keyer(env.config.redisPrefix), env.db);
  const held = await accounts.admit(org.organization_id, '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98', 2, 1000);
  t.ok(held.admitted);
  t.teardown(() => accounts.release(org.organization_id, '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98'));
  const s = (await env.request('GET', '/v1/usage/summary', { key })).body.data;
  t.equal(s.limits.channels_in_use, 2, 'a bridge call\'s two channels');
});

t.test('calls on every path: counts, billed minutes by path and spend equal the cap\'s numbers', async (t) => {
  const placed = await Promise.all([
    env.request('POST', '/v1/calls/dial', { key, body: { from_number: org.from, to_number: '+14155554567', connect_number: '+14155550199' } }),
    env.request('POST', '/v1/calls', { key, body: { from_number: org.from, to_number: '+14155554568', agent: { name: 'Ava', greeting: 'Hi.' } } }),
    env.request('POST', '/v1/room-token', { key, body: { from_number: org.from, to_number: '+14155554569' } }),
    env.request('POST', '/v1/webrtc-token', { key, body: { from_number: org.from, to_number: '+14155554570' } }),
  ]);
  t.same(placed.map((r) => r.status), [202, 202, 201, 201], placed.map((r) => r.text.slice(0, 120)).join(' | '));
  const ids = placed.map((r) => r.body.data.call_id);
  // The bridge, AI and room calls answer, talk 10 sandbox seconds and end; the unredeemed WebRTC ticket's call stays QUEUED.
  for (const id of ids.slice(0, 3)) await settled(env, org, id, 120_000);
  const rows = await env.db.any('SELECT type, cost_cents, price_cents_per_minute AS price FROM calls WHERE organization_id = $1', [org.organization_id]);
  const minutes = (type: string) => rows.filter((r) => r.type === type).reduce((m, r) => m + r.cost_cents / r.price, 0);
  const cost = rows.reduce((s, r) => s + r.cost_cents, 0);
  t.ok(cost > 0, `the calls cost ${cost} cents`);
  t.equal(minutes('bridge'), 2, 'a bridge pays a minute on each leg');
  t.equal(minutes('ai'), 1);
  t.equal(minutes('room'), 1);

  const d = await dayOf();
  t.same(d.calls, { total: 4, bridge: 1, ai: 1, webrtc: 1, room: 1, inbound: 0 });
  t.same(d.minutes, { total: 4, bridge: 2, ai: 1, webrtc: 0, room: 1, inbound: 0 });
  const spend = await env.db.one('SELECT cents::int AS cents FROM org_daily_spend WHERE organization_id = $1 AND day = $2', [org.organization_id, today]);
  t.equal(d.spend_cents.total, spend.cents, 'spend is the settled total the cap counts');
  t.equal(d.spend_cents.calls, cost);
  t.equal(d.spend_cents.total, cost, 'all of it calls so far');
  const s = (await env.request('GET', '/v1/usage/summary', { key })).body.data;
  t.same(s.today, d);
  t.same({ ...s.month, period: today }, d, 'the month so far (one day of use) sums the days');
  t.equal(s.month.period, month);
  t.equal(s.spend_cap.today_cents, spend.cents);
  t.equal(s.plan.used_voice_minutes, 4);
});

t.test('charge rows (SMS segments, paid reputation checks) count in usage and in the cap alike', async (t) => {
  const before = await dayOf();
  const sms = await charges.charge({ organizationId: org.organization_id, kind: 'sms', ref: 'msg-1', cents: 4, quantity: 2, capCents: 100_000_000 });
  const rep = await charges.charge({ organizationId: org.organization_id, kind: 'reputation_check', ref: 'check-1', cents: 8, capCents: 100_000_000 });
  t.ok(sms.charged && rep.charged);
  await charges.charge({ organizationId: org.organization_id, kind: 'sms', ref: 'msg-1', cents: 4, quantity: 2, capCents: 100_000_000 }); // duplicate: not charged twice
  const d = await dayOf();
  t.equal(d.sms_segments, before.sms_segments + 2);
  t.equal(d.reputation_checks, before.reputation_checks + 1);
  t.same(d.spend_cents, { ...before.spend_cents, total: before.spend_cents.total + 12, sms: 4, reputation_checks: 8 });
  const spend = await env.db.one('SELECT cents::int AS cents FROM org_daily_spend WHERE organization_id = $1 AND day = $2', [org.organization_id, today]);
  t.equal(d.spend_cents.total, spend.cents, 'still the cap\'s number');
  t.equal(d.spend_cents.total, d.spend_cents.calls + d.spend_cents.sms + d.spend_cents.reputation_checks + d.spend_cents.remediation, 'the parts add up');
  const m = await usage(`?granularity=month&from=${month}-01&to=${today}`);
  t.equal(m.length, 1);
  t.same({ ...m[0], period: today }, d, 'by month: the same totals');
});

t.test('ranges: every day listed with zeros; validation', async (t) => {
  const days = await usage('?from=2026-01-30&to=2026-02-02');
  t.same(days.map((d: { period: string }) => d.period), ['2026-01-30', '2026-01-31', '2026-02-01', '2026-02-02']);
  t.ok(days.every((d: { calls: { total: number } }) => d.calls.total === 0));
  t.same((await usage('?granularity=month&from=2026-01-15&to=2026-03-01')).map((d: { period: string }) => d.period), ['2026-01', '2026-02', '2026-03']);
  const def = await usage();
  t.equal(def[0].period, `${month}-01`, 'default: the month so far');
  t.equal(def[def.length - 1].period, today);
  for (const [q, field] of [['?from=2026-03-02&to=2026-03-01', 'to'], ['?from=2026-02-30', 'from'], ['?from=2024-01-01&to=2026-01-01', 'to'],
    ['?from=yesterday', 'from'], ['?granularity=week', 'granularity']] as const) {
    const r = await env.request('GET', `/v1/usage${q}`, { key });
    t.equal(r.status, 400, q);
    t.ok(r.body.error.fields?.[field], `${q}: fields.${field}`);
  }
});

t.test('the plan, set with the admin CLI: included minutes used up answer 402 voice_usage_exhausted', async (t) => {
  const admin = (...args: string[]) => runAdmin(env.env, ['org', 'plan', ...args]);
  const shown = await admin('--org', org.organization_id);
  t.equal(shown.code, 0, shown.stderr);
  t.same(JSON.parse(shown.stdout), { organization_id: org.organization_id, subscription_active: true, voice_minutes_included: null });
  const set = await admin('--org', org.organization_id, '--included-minutes', '4');
  t.same(JSON.parse(set.stdout), { organization_id: org.organization_id, subscription_active: true, voice_minutes_included: 4 });
  const r = await env.request('POST', '/v1/calls', { key, body: { from_number: org.from, to_number: '+14155554571', agent: { name: 'Ava', greeting: 'Hi.' } } });
  t.equal(r.status, 402);
  t.match(r.body.error, { code: 'voice_usage_exhausted', category: 'account_limit' });
  t.match((await env.request('GET', '/v1/usage/summary', { key })).body.data.plan, { included_voice_minutes: 4, used_voice_minutes: 4, remaining_voice_minutes: 0 });
  await admin('--org', org.organization_id, '--included-minutes', '5');
  t.equal((await env.request('POST', '/v1/webrtc-token', { key, body: { from_number: org.from, to_number: '+14155554572' } })).status, 201, 'a minute left');
  const off = await admin('--org', org.organization_id, '--active', 'false', '--included-minutes', 'none');
  t.same(JSON.parse(off.stdout), { organization_id: org.organization_id, subscription_active: false, voice_minutes_included: null });
  t.equal((await env.request('POST', '/v1/room-token', { key, body: { from_number: org.from, to_number: '+14155554573' } })).body.error?.code, 'no_active_subscription');
  await admin('--org', org.organization_id, '--active', 'true');
  for (const bad of [['--org', 'nope'], ['--org', org.organization_id, '--active', 'maybe'], ['--org', org.organization_id, '--included-minutes', '-1'],
    ['--org', '00000000-0000-4000-8000-000000000000', '--active', 'true']]) {
    const b = await admin(...bad);
    t.equal(b.code, 2, `${bad.join(' ')}: exit 2`);
    t.equal(b.stderr.trim().split('\n').length, 1, 'one line');
  }
  const help = await runAdmin(env.env, ['help', 'org', 'plan']);
  t.match(help.stdout, /--included-minutes/);
});

t.test('tenancy and scopes', async (t) => {
  const d = await dayOf(other.api_key);
  t.match(d, { calls: { total: 0 }, spend_cents: { total: 0 }, sms_segments: 0 }, 'another organization sees only its own usage');
  const k = (await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['calls:read'] })).apiKey;
  for (const path of ['/v1/usage', '/v1/usage/summary']) {
    const r = await env.request('GET', path, { key: k });
    t.equal(r.status, 403, path);
    t.equal(r.body.error.code, 'scope_missing');
  }
  const ok = (await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['usage:read'] })).apiKey;
  t.equal((await env.request('GET', '/v1/usage/summary', { key: ok })).status, 200);
});
