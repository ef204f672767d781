// The one check every call path makes before anything is placed (shared/calls/place.ts, step 4b): the plan
// (shared/usage/plan.ts), then call compliance (decide.ts) over facts loaded in one query (on the call paths, as
// part of the placement query: factsSql). It reserves nothing and writes nothing, so a refusal leaves no row,
// channel or spend behind.
import type { Clock } from '../clock.ts';
import type { Db } from '../db.ts';
import { DomainError } from '../errors.ts';
import { decidePlan } from '../usage/plan.ts';
import { BILLED_MINUTES_SQL, monthStart, uuidv7Floor } from '../usage/usage.ts';
import { decide, DEFAULT_POLICY, type ComplianceRule, type CompliancePolicy, type RecipientFacts, type Verdict } from './decide.ts';
import { policyFromRow, type PolicyRow } from './policy.ts';
import { zonesOfNumber } from './timezone.ts';

export interface FactsRow extends Partial<PolicyRow> {
  subscription_active: boolean;
  voice_minutes_included: number | null;
  has_policy: boolean;
  on_dnc: boolean;
  opted_out: boolean;
  contact_timezone: string | null;
  has_consent: boolean;
  recent: string[] | null;
  used_minutes: string | null;
}

export interface LoadedFacts { policy: CompliancePolicy; recipient: RecipientFacts; plan: { subscriptionActive: boolean; includedMinutes: number | null; usedMinutes: number } }

/** The facts as columns and joins of a query over `organizations o`, so the dial path reads them in its placement
 *  query. `to`, `now` and `monthFloor` name the parameters holding the destination, the time and the month's
 *  first call id (factsParams). The subqueries of rules that are off are not evaluated. */
export function factsSql(p: { to: string; now: string; monthFloor: string }): { columns: string; joins: string } {
  return {
    columns: `o.subscription_active, o.voice_minutes_included, cp.organization_id IS NOT NULL AS has_policy,
            cp.window_enabled, cp.window_start, cp.window_end, cp.days_enabled, cp.allowed_days, cp.frequency_enabled,
            cp.max_calls, cp.period_hours, cp.consent_required,
            EXISTS (SELECT 1 FROM dnc_numbers d WHERE d.organization_id = o.id AND d.phone_number = ${p.to} AND d.removed_at IS NULL) AS on_dnc,
            EXISTS (SELECT 1 FROM opt_outs x WHERE x.organization_id = o.id AND x.phone_number = ${p.to} AND x.channel = 'call'
                      AND x.revoked_at IS NULL) AS opted_out,
            ct.timezone AS contact_timezone,
            CASE WHEN cp.consent_required THEN EXISTS (SELECT 1 FROM contact_consents cc WHERE cc.contact_id = ct.id
                   AND cc.channel = 'call' AND cc.revoked_at IS NULL AND cc.captured_at <= ${p.now}::timestamptz) ELSE false END AS has_consent,
            CASE WHEN cp.frequency_enabled THEN ARRAY(
                   SELECT (extract(epoch FROM c.created_at) * 1000)::bigint FROM calls c
                    WHERE c.organization_id = o.id AND c.to_number = ${p.to}
                      AND c.created_at > ${p.now}::timestamptz - make_interval(hours => cp.period_hours)
                    ORDER BY c.created_at DESC LIMIT cp.max_calls) END AS recent,
            CASE WHEN o.voice_minutes_included IS NOT NULL THEN (
                   SELECT COALESCE(sum(${BILLED_MINUTES_SQL}), 0) FROM calls c
                    WHERE c.organization_id = o.id AND c.id >= ${p.monthFloor}::uuid) END AS used_minutes`,
    joins: `LEFT JOIN compliance_policies cp ON cp.organization_id = o.id
       LEFT JOIN contacts ct ON ct.organization_id = o.id AND ct.phone_number = ${p.to} AND ct.deleted_at IS NULL`,
  };
}

/** The values of factsSql's parameters: the time and the month's first call id. */
export const factsParams = (nowMs: number): [Date, string] => [new Date(nowMs), uuidv7Floor(monthStart(new Date(nowMs)))];

/** The facts from factsSql's columns. The number's zones are looked up only when a time rule needs them and the
 *  contact has none. */
export async function factsFromRow(r: FactsRow, to: string): Promise<LoadedFacts> {
  const policy = r.has_policy ? policyFromRow(r as PolicyRow) : DEFAULT_POLICY;
  const timeRules = policy.window.enabled || policy.days.enabled;
  const zones = r.contact_timezone ? [r.contact_timezone] : timeRules ? await zonesOfNumber(to) : [];
  return {
    policy,
    recipient: {
      onDnc: r.on_dnc, optedOut: r.opted_out, hasConsent: r.has_consent, zones,
      zoneSource: r.contact_timezone ? 'contact' : zones.length ? 'number' : 'unknown',
      recentCalls: (r.recent ?? []).map(Number),
    },
    plan: { subscriptionActive: r.subscription_active, includedMinutes: r.voice_minutes_included, usedMinutes: Number(r.used_minutes ?? 0) },
  };
}

const STANDALONE = factsSql({ to: '$2', now: '$3', monthFloor: '$4' });

/** Everything the decisions need about the organization and the number, in one round trip. */
export async function loadFacts(db: Db, organizationId: string, to: string, nowMs: number): Promise<LoadedFacts> {
  // A prepared statement (named): planned once per connection, not on every check.
  const r = await db.one<FactsRow>({ name: 'compliance-facts',
    text: `SELECT ${STANDALONE.columns} FROM organizations o ${STANDALONE.joins} WHERE o.id = $1`,
    values: [organizationId, to, ...factsParams(nowMs)] });
  return factsFromRow(r, to);
}

/** Throws the plan's or compliance's refusal of a call to `to`; `toField` is the request's name for it. */
export function assertFactsAllow(facts: LoadedFacts, toField: string, clock: Clock): void {
  const planRefusal = decidePlan(facts.plan);
  if (planRefusal) throw planRefusal;
  const verdict = decide(facts.policy, facts.recipient, clock);
  if (!verdict.allowed) throw complianceError(verdict, toField, clock.now());
}

/** loadFacts, then assertFactsAllow. */
export async function assertCallAllowed(db: Db, organizationId: string, to: string, toField: string, clock: Clock): Promise<void> {
  assertFactsAllow(await loadFacts(db, organizationId, to, clock.now()), toField, clock);
}

/** The refusal as the API answers it: fields name the number's reason, the rule, and when calling opens next. */
export function complianceError(v: Exclude<Verdict, { allowed: true }>, toField: string, nowMs: number): DomainError {
  const fields: Record<string, string> = { [toField]: v.reason, rule: v.rule };
  let retryAfterSeconds: number | undefined;
  if (v.timezones) fields.timezone = v.timezones.join(',');
  if (v.nextAllowedAt) {
    fields.next_allowed_at = v.nextAllowedAt.toISOString();
    retryAfterSeconds = Math.max(1, Math.ceil((v.nextAllowedAt.getTime() - nowMs) / 1000));
  }
  const when = v.nextAllowedAt ? `; calling opens at ${v.nextAllowedAt.toISOString()}` : '';
  return new DomainError(v.code, `The ${toField} ${v.reason}${when}.`, {
    fields, retryAfterSeconds,
    resolutionHint: HINTS[v.rule],
  });
}

const HINTS: Record<ComplianceRule, string> = {
  dnc: 'Remove the number from the Do-Not-Call list (DELETE /v1/compliance/dnc/{phone_number}) only if the recipient asked to be called again.',
  opt_out: 'The recipient opted out; only the recipient can opt back in (DELETE /v1/contacts/{id}/opt-outs/call records it).',
  consent: 'Record the contact\'s calling consent (POST /v1/contacts/{id}/consents with channel "call").',
  allowed_days: 'Retry at fields.next_allowed_at, or change the allowed days of the compliance policy.',
  call_window: 'Retry at fields.next_allowed_at, or set the contact\'s timezone if the number\'s location is wrong.',
  frequency: 'Retry at fields.next_allowed_at.',
};

/** Every code this check can answer: listed by each call path's OpenAPI operation. */
export const CALL_POLICY_ERRORS = ['no_active_subscription', 'voice_usage_exhausted', 'dnc_suppressed', 'recipient_opted_out',
  'no_consent', 'day_not_allowed', 'outside_call_window', 'frequency_exceeded'] as const;
