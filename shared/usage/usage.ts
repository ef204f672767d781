// Usage per UTC day or month, read from what the daily spend cap counts: calls (their type, billed minutes and
// cost, on the UTC day they were admitted, like org_daily_spend), spend_charges (SMS segments, paid reputation
// checks, remediation) and org_daily_spend itself (the settled total the guardrail reads). Nothing is counted twice
// or kept elsewhere.
import type { Static } from '@sinclair/typebox';
import type { Db } from '../db.ts';
import type { CallType } from '../calls/model.ts';
import type { UsagePeriodResponse, UsageSummaryResponse } from './schemas.ts';

/** Billed leg-minutes of a call row `c`: every started minute of every answered leg (a bridge pays for both legs),
 *  as its cost counts them (shared/calls/pricing.ts); 0 until the call ends. */
export const BILLED_MINUTES_SQL = 'CASE WHEN c.price_cents_per_minute > 0 THEN c.cost_cents / c.price_cents_per_minute ELSE 0 END';

/** The smallest UUIDv7 of an instant: a call's id is a UUIDv7 of its created_at (shared/calls/place.ts), so a time
 *  range of calls is an id range on the calls_org index (no index on created_at is kept for this). */
export function uuidv7Floor(d: Date): string {
  const h = d.getTime().toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7000-8000-000000000000`;
}

export const monthStart = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
export const PATHS: CallType[] = ['bridge', 'ai', 'webrtc', 'room', 'inbound'];

export type Granularity = 'day' | 'month';

/** One day's or month's usage as the API answers it (calls and minutes by CallType, plus total). */
export type UsagePeriod = Static<typeof UsagePeriodResponse>;

const emptyByPath = () => ({ total: 0, bridge: 0, ai: 0, webrtc: 0, room: 0, inbound: 0 });
const empty = (period: string): UsagePeriod => ({
  period, calls: emptyByPath(), minutes: emptyByPath(), sms_segments: 0, reputation_checks: 0,
  spend_cents: { total: 0, calls: 0, sms: 0, reputation_checks: 0, remediation: 0 },
});

/** Usage of each period from `from` to `to` (UTC dates, inclusive), oldest first; periods without use are listed
 *  with zeros. `subEntityId` (the sub_entity_id filter, after shared/sub-entities/limit.ts listFilter): only the calls
 *  and SMS messages of that sub-entity count (an SMS charge is its message's: spend_charges.ref is the message id);
 *  reputation checks and remediation belong to the organization and count 0, and spend_cents.total is the sum of that
 *  sub-entity's calls and SMS (org_daily_spend is kept per organization only). */
export async function usageByPeriod(db: Db, organizationId: string, from: string, to: string, g: Granularity,
  subEntityId?: string): Promise<UsagePeriod[]> {
  const bucket = (expr: string) => `to_char(${expr}, '${g === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM'}')`;
  const sub = subEntityId !== undefined;
  const [calls, charges, spend] = await db.task('usage', (t) => Promise.all([
    t.any<{ p: string; type: CallType; n: number; minutes: string; cents: string }>(
      `SELECT ${bucket("(c.created_at AT TIME ZONE 'UTC')")} AS p, c.type, count(*)::int AS n,
              sum(${BILLED_MINUTES_SQL}) AS minutes, sum(c.cost_cents) AS cents
         FROM calls c
        WHERE c.organization_id = $1 AND c.id >= $4::uuid AND c.id < $5::uuid
          AND c.created_at >= ($2::date)::timestamp AT TIME ZONE 'UTC' AND c.created_at < ($3::date + 1)::timestamp AT TIME ZONE 'UTC'
          ${sub ? 'AND c.sub_entity_id = $6::uuid' : ''}
        GROUP BY 1, 2`, [organizationId, from, to, uuidv7Floor(new Date(`${from}T00:00:00Z`)),
        uuidv7Floor(new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000)), subEntityId ?? null]),
    t.any<{ p: string; kind: string; quantity: string; cents: string }>(
      `SELECT ${bucket('s.day')} AS p, s.kind, sum(s.quantity) AS quantity, sum(s.cents) AS cents
         FROM spend_charges s WHERE s.organization_id = $1 AND s.day BETWEEN $2::date AND $3::date
         ${sub ? `AND s.kind = 'sms' AND EXISTS (SELECT 1 FROM sms_messages m
                    WHERE m.id::text = s.ref AND m.organization_id = $1 AND m.sub_entity_id = $4::uuid)` : ''}
        GROUP BY 1, 2`,
      [organizationId, from, to, subEntityId ?? null]),
    sub ? Promise.resolve([] as { p: string; cents: string }[]) : t.any<{ p: string; cents: string }>(
      `SELECT ${bucket('o.day')} AS p, sum(o.cents) AS cents
         FROM org_daily_spend o WHERE o.organization_id = $1 AND o.day BETWEEN $2::date AND $3::date GROUP BY 1`,
      [organizationId, from, to]),
  ]));
  const out = new Map<string, UsagePeriod>();
  for (const p of periods(from, to, g)) out.set(p, empty(p));
  const at = (p: string) => out.get(p) ?? out.set(p, empty(p)).get(p)!;
  for (const r of calls) {
    const u = at(r.p);
    u.calls[r.type] += r.n; u.calls.total += r.n;
    u.minutes[r.type] += Number(r.minutes); u.minutes.total += Number(r.minutes);
    u.spend_cents.calls += Number(r.cents);
  }
  for (const r of charges) {
    const u = at(r.p);
    if (r.kind === 'sms') { u.sms_segments += Number(r.quantity); u.spend_cents.sms += Number(r.cents); }
    if (r.kind === 'reputation_check') { u.reputation_checks += Number(r.quantity); u.spend_cents.reputation_checks += Number(r.cents); }
    if (r.kind === 'remediation') u.spend_cents.remediation += Number(r.cents);
  }
  if (sub) for (const u of out.values()) u.spend_cents.total = u.spend_cents.calls + u.spend_cents.sms;
  for (const r of spend) at(r.p).spend_cents.total = Number(r.cents);
  return [...out.values()].sort((a, b) => a.period.localeCompare(b.period));
}

/** Every day (YYYY-MM-DD) or month (YYYY-MM) from `from` to `to`. */
export function periods(from: string, to: string, g: Granularity): string[] {
  const out: string[] = [];
  const d = new Date(`${from}T00:00:00Z`);
  const end = new Date(`${to}T00:00:00Z`);
  if (g === 'month') d.setUTCDate(1);
  while (d <= end) {
    out.push(d.toISOString().slice(0, g === 'day' ? 10 : 7));
    if (g === 'day') d.setUTCDate(d.getUTCDate() + 1); else d.setUTCMonth(d.getUTCMonth() + 1);
  }
  return out;
}

export type UsageSummary = Static<typeof UsageSummaryResponse>;

/** `channelsInUse`: the organization's held channels right now (the channel accounts in Redis). `subEntityId`: today
 *  and month are that sub-entity's (usageByPeriod); plan, spend cap and limits stay the organization's (they are
 *  kept per organization: remaining minutes and what is left of the cap are what the organization has left). */
export async function usageSummary(db: Db, organizationId: string, now: Date, channelsInUse: () => Promise<number>,
  subEntityId?: string): Promise<UsageSummary> {
  const today = now.toISOString().slice(0, 10);
  const first = monthStart(now).toISOString().slice(0, 10);
  const [days, subDays, org, inUse] = await Promise.all([
    usageByPeriod(db, organizationId, first, today, 'day'),
    subEntityId === undefined ? Promise.resolve(null) : usageByPeriod(db, organizationId, first, today, 'day', subEntityId),
    db.one<{ subscription_active: boolean; voice_minutes_included: number | null; cap: string; channel_limit: number; calls_per_minute: number; allow_countries: string[] }>(
      `SELECT subscription_active, voice_minutes_included, daily_spend_cap_cents AS cap, channel_limit, calls_per_minute, allow_countries
         FROM organizations WHERE id = $1`, [organizationId]),
    channelsInUse(),
  ]);
  const month = days.reduce((m, d) => add(m, d), empty(first.slice(0, 7)));
  const day = days[days.length - 1];
  const cap = Number(org.cap);
  const used = month.minutes.total;
  const shown = subDays ?? days;
  return {
    today: shown[shown.length - 1], month: subDays ? subDays.reduce((m, d) => add(m, d), empty(first.slice(0, 7))) : month,
    plan: {
      subscription_active: org.subscription_active, included_voice_minutes: org.voice_minutes_included, used_voice_minutes: used,
      remaining_voice_minutes: org.voice_minutes_included === null ? null : Math.max(0, org.voice_minutes_included - used),
    },
    spend_cap: { daily_cap_cents: cap, today_cents: day.spend_cents.total, remaining_today_cents: Math.max(0, cap - day.spend_cents.total) },
    limits: { channel_limit: org.channel_limit, channels_in_use: inUse, calls_per_minute: org.calls_per_minute,
      allow_countries: [...org.allow_countries].sort() },
  };
}

function add(a: UsagePeriod, b: UsagePeriod): UsagePeriod {
  const sum = <T extends Record<string, number>>(x: T, y: T) =>
    Object.fromEntries(Object.keys(x).map((k) => [k, x[k] + y[k]])) as T;
  return {
    period: a.period, calls: sum(a.calls, b.calls), minutes: sum(a.minutes, b.minutes),
    sms_segments: a.sms_segments + b.sms_segments, reputation_checks: a.reputation_checks + b.reputation_checks,
    spend_cents: sum(a.spend_cents, b.spend_cents),
  };
}
