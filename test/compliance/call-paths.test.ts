// Every compliance and plan refusal end to end on the four call paths (dial, AI call, WebRTC ticket, room token):
// the reference's status, category and retryability, fields naming the rule and when calling opens next, and
// nothing left behind (no call row, ticket, channel or spend reservation, no call-rate token). A new organization
// is not refused at night.
import t, { type Test } from 'tap';
import { DEFAULT_ALL_SCOPES } from '../../shared/scopes.ts';
import { setPlan } from '../../shared/usage/plan.ts';
import { callEnv, callOrg, channelsUsed, type CallOrg } from '../calls/helpers.ts';

const { env } = await callEnv(t, {}, { workers: false });

const PATHS = {
  dial: (o: CallOrg, to: string) => env.request('POST', '/v1/calls/dial', { key: o.api_key, body: { from_number: o.from, to_number: to, connect_number: '+14155550199' } }),
  ai: (o: CallOrg, to: string) => env.request('POST', '/v1/calls', { key: o.api_key, body: { from_number: o.from, to_number: to, agent: { name: 'Ava', greeting: 'Hi.' } } }),
  webrtc: (o: CallOrg, to: string) => env.request('POST', '/v1/webrtc-token', { key: o.api_key, body: { from_number: o.from, to_number: to } }),
  room: (o: CallOrg, to: string) => env.request('POST', '/v1/room-token', { key: o.api_key, body: { from_number: o.from, to_number: to } }),
};
const ACCEPTED: Record<keyof typeof PATHS, number> = { dial: 202, ai: 202, webrtc: 201, room: 201 };

async function org(): Promise<CallOrg & { admin: string }> {
  const o = await callOrg(env);
  const admin = await env.createKey({ organizationId: o.organization_id, userId: o.user_id, scopes: [...DEFAULT_ALL_SCOPES, 'compliance:write'] });
  return { ...o, admin: admin.apiKey };
}
const policy = async (o: { admin: string }, body: Record<string, unknown>) => {
  const r = await env.request('PATCH', '/v1/compliance/policy', { key: o.admin, body });
  if (r.status !== 200) throw new Error(`policy: ${r.status} ${r.text}`);
  return r.body.data;
};
const contact = async (o: CallOrg, body: Record<string, unknown>) => {
  const r = await env.request('POST', '/v1/contacts', { key: o.api_key, body });
  if (r.status !== 201) throw new Error(`contact: ${r.status} ${r.text}`);
  return r.body.data;
};

/** What a refusal must leave as it was. */
async function footprint(o: CallOrg) {
  const day = new Date().toISOString().slice(0, 10);
  const [calls, tickets] = await Promise.all([
    env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [o.organization_id]),
    env.db.one('SELECT count(*)::int AS n FROM call_tickets WHERE organization_id = $1', [o.organization_id]),
  ]);
  return {
    calls: calls.n, tickets: tickets.n, channels: await channelsUsed(env, o.organization_id),
    reserved: Number((await env.redis.hget(`${env.config.redisPrefix}:spend:${o.organization_id}:${day}`, 'reserved')) ?? 0),
  };
}

interface Expect { status: number; code: string; category: string; rule?: string; opens?: boolean | string }

async function refusedEverywhere(t: Test, o: CallOrg, to: string, e: Expect) {
  const before = await footprint(o);
  for (const [name, place] of Object.entries(PATHS)) {
    const r = await place(o, to);
    t.equal(r.status, e.status, `${name}: ${e.status}`);
    t.equal(r.body.error?.code, e.code, `${name}: ${r.text.slice(0, 300)}`);
    t.equal(r.body.error?.category, e.category, `${name}: category`);
    if (e.rule) {
      t.equal(r.body.error.fields?.rule, e.rule, `${name}: fields.rule`);
      t.type(r.body.error.fields?.to_number, 'string', `${name}: fields.to_number explains`);
    }
    if (e.opens === undefined || e.opens === false) {
      t.notOk(r.body.error.fields?.next_allowed_at, `${name}: not retryable, no opening`);
      t.notOk(r.headers['retry-after'], `${name}: no Retry-After`);
    } else {
      const at = r.body.error.fields?.next_allowed_at;
      t.ok(at && Date.parse(at) > Date.now() - 5_000, `${name}: next_allowed_at ${at}`);
      if (typeof e.opens === 'string') t.equal(at, e.opens, `${name}: opens at ${e.opens}`);
      t.ok(Number(r.headers['retry-after']) >= 1, `${name}: Retry-After ${r.headers['retry-after']}`);
    }
  }
  t.same(await footprint(o), before, 'no call row, ticket, channel or spend left behind');
}

const hourIso = (d: Date, h: number, dayOffset = 0) =>
  new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + dayOffset, h)).toISOString();

t.test('a new organization has every rule off: calls at the recipient\'s 3 a.m. on any day go through', async (t) => {
  const o = await org();
  const p = (await env.request('GET', '/v1/compliance/policy', { key: o.api_key })).body.data;
  t.match(p, { call_window: { enabled: false }, allowed_days: { enabled: false }, frequency: { enabled: false }, consent_required: false, updated_at: null });
  // A zone where it is 03:00 now (Etc/GMT-N is UTC+N).
  const offset = ((3 - new Date().getUTCHours() + 36) % 24) - 12;
  const zone = offset === 0 ? 'UTC' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
  await contact(o, { phone_number: '+14155554501', timezone: zone });
  for (const [name, place] of Object.entries(PATHS)) {
    const r = await place(o, '+14155554501');
    t.equal(r.status, ACCEPTED[name as keyof typeof PATHS], `${name} at 03:00 in ${zone}: ${r.text.slice(0, 200)}`);
  }
  // The same contact with the window on is refused: the rule, not the hour, decides.
  await policy(o, { call_window: { enabled: true, start: '08:00', end: '21:00' } });
  const r = await PATHS.dial(o, '+14155554501');
  t.equal(r.body.error?.code, 'outside_call_window');
});

t.test('dnc_suppressed: the organization\'s Do-Not-Call list, whatever the policy', async (t) => {
  const o = await org();
  t.equal((await env.request('POST', '/v1/compliance/dnc', { key: o.api_key, body: { phone_number: '+14155554502', reason: 'asked' } })).status, 201);
  await refusedEverywhere(t, o, '+14155554502', { status: 403, code: 'dnc_suppressed', category: 'compliance_block', rule: 'dnc' });
  t.equal((await env.request('DELETE', '/v1/compliance/dnc/%2B14155554502', { key: o.api_key })).status, 204);
  t.equal((await PATHS.dial(o, '+14155554502')).status, 202, 'callable again once removed');
});

t.test('recipient_opted_out: a call opt-out applies; an SMS opt-out does not', async (t) => {
  const o = await org();
  const c = await contact(o, { phone_number: '+14155554503' });
  t.equal((await env.request('POST', `/v1/contacts/${c.id}/opt-outs`, { key: o.api_key, body: { channel: 'call' } })).status, 201);
  await refusedEverywhere(t, o, '+14155554503', { status: 403, code: 'recipient_opted_out', category: 'compliance_block', rule: 'opt_out' });
  // An opt-out recorded by SMS STOP (a row of opt_outs with channel sms) does not block calls.
  await env.db.none(`INSERT INTO opt_outs (organization_id, phone_number, channel, source) VALUES ($1, '+14155554504', 'sms', 'sms_stop')`, [o.organization_id]);
  t.equal((await PATHS.dial(o, '+14155554504')).status, 202);
  // Opting back in lifts it.
  t.equal((await env.request('DELETE', `/v1/contacts/${c.id}/opt-outs/call`, { key: o.api_key })).status, 200);
  t.equal((await PATHS.dial(o, '+14155554503')).status, 202);
});

t.test('no_consent: with consent_required, a live call consent of the contact is needed', async (t) => {
  const o = await org();
  await policy(o, { consent_required: true });
  await refusedEverywhere(t, o, '+14155554505', { status: 403, code: 'no_consent', category: 'compliance_block', rule: 'consent' });
  const c = await contact(o, { phone_number: '+14155554505' });
  await refusedEverywhere(t, o, '+14155554505', { status: 403, code: 'no_consent', category: 'compliance_block', rule: 'consent' });
  const sms = await env.request('POST', `/v1/contacts/${c.id}/consents`, { key: o.api_key, body: { channel: 'sms', source: 'web form' } });
  t.equal(sms.status, 201);
  t.equal((await PATHS.dial(o, '+14155554505')).body.error?.code, 'no_consent', 'an SMS consent is not a call consent');
  const call = await env.request('POST', `/v1/contacts/${c.id}/consents`, { key: o.api_key, body: { channel: 'call', source: 'recorded call' } });
  t.equal((await PATHS.dial(o, '+14155554505')).status, 202, 'with a call consent');
  t.equal((await env.request('DELETE', `/v1/contacts/${c.id}/consents/${call.body.data.id}`, { key: o.api_key })).status, 200);
  t.equal((await PATHS.dial(o, '+14155554505')).body.error?.code, 'no_consent', 'revoked consent no longer counts');
});

t.test('outside_call_window: the recipient\'s local hours, with the next opening', async (t) => {
  const o = await org();
  const now = new Date();
  const h = now.getUTCHours();
  // A one-hour window two hours ahead (or, late in the UTC day, three hours back: it opens tomorrow) in UTC.
  const [start, opens] = h + 3 <= 23 ? [h + 2, hourIso(now, h + 2)] : [h - 3, hourIso(now, h - 3, 1)];
  const hh = (n: number) => `${String(n).padStart(2, '0')}:00`;
  await policy(o, { call_window: { enabled: true, start: hh(start), end: hh(start + 1) } });
  await contact(o, { phone_number: '+14155554506', timezone: 'UTC' });
  await refusedEverywhere(t, o, '+14155554506', { status: 403, code: 'outside_call_window', category: 'compliance_block', rule: 'call_window', opens });
  const r = await PATHS.dial(o, '+14155554506');
  t.equal(r.body.error.fields.timezone, 'UTC', 'the zone used is named');
  // Without a contact timezone the number's area code decides (415: Los Angeles).
  const la = await PATHS.dial(o, '+14155554507');
  t.equal(la.body.error?.fields?.timezone, 'America/Los_Angeles');
});

t.test('day_not_allowed: the recipient\'s local day', async (t) => {
  const o = await org();
  const now = new Date();
  const today = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'][now.getUTCDay()];
  const others = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].filter((d) => d !== today);
  await policy(o, { allowed_days: { enabled: true, days: others } });
  await contact(o, { phone_number: '+14155554508', timezone: 'UTC' });
  await refusedEverywhere(t, o, '+14155554508', { status: 403, code: 'day_not_allowed', category: 'compliance_block', rule: 'allowed_days', opens: hourIso(now, 0, 1) });
});

t.test('frequency_exceeded: 429, at most max_calls per number in the rolling period', async (t) => {
  const o = await org();
  await policy(o, { frequency: { enabled: true, max_calls: 2, period_hours: 24 } });
  const first = await PATHS.dial(o, '+14155554509');
  t.equal(first.status, 202);
  t.equal((await PATHS.ai(o, '+14155554509')).status, 202, 'second call within the limit');
  const oldest = await env.db.one('SELECT min(created_at) AS at FROM calls WHERE organization_id = $1', [o.organization_id]);
  await refusedEverywhere(t, o, '+14155554509', { status: 429, code: 'frequency_exceeded', category: 'compliance_block', rule: 'frequency',
    opens: new Date(oldest.at.getTime() + 24 * 3600_000).toISOString() });
  t.equal((await PATHS.dial(o, '+14155554510')).status, 202, 'another number is not affected');
});

t.test('no_active_subscription and voice_usage_exhausted: 402 account_limit on every path', async (t) => {
  const o = await org();
  await setPlan(env.db, o.organization_id, { active: false });
  await refusedEverywhere(t, o, '+14155554511', { status: 402, code: 'no_active_subscription', category: 'account_limit' });
  await setPlan(env.db, o.organization_id, { active: true, includedMinutes: 0 });
  await refusedEverywhere(t, o, '+14155554511', { status: 402, code: 'voice_usage_exhausted', category: 'account_limit' });
  await setPlan(env.db, o.organization_id, { includedMinutes: null });
  t.equal((await PATHS.dial(o, '+14155554511')).status, 202, 'no limit again');
});

t.test('refusals come before the call rate: they use no call-rate token', async (t) => {
  const o = await org();
  await env.db.none('UPDATE organizations SET calls_per_minute = 1 WHERE id = $1', [o.organization_id]);
  await env.request('POST', '/v1/compliance/dnc', { key: o.api_key, body: { phone_number: '+14155554512' } });
  for (let i = 0; i < 3; i++) t.equal((await PATHS.dial(o, '+14155554512')).body.error?.code, 'dnc_suppressed');
  t.equal((await PATHS.dial(o, '+14155554513')).status, 202, 'the one call of the minute is still available');
});
