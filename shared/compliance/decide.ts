// The call-compliance decision, pure: (policy, facts about the recipient, clock) -> allowed, or the first rule that
// refuses. Rules in order: the Do-Not-Call list and opt-outs (always on), then the organization's own rules, each
// off until the organization turns it on (a new organization calls at any hour): consent, allowed days, calling
// window, frequency. Days and hours are the recipient's: every candidate zone of the number must be inside them
// (a number whose location spans zones is held to the strictest reading).
import type { Clock } from '../clock.ts';
import { localTime, WEEKDAYS, zonedInstant, type Weekday } from './timezone.ts';

export interface CompliancePolicy {
  window: { enabled: boolean; start: string; end: string };
  days: { enabled: boolean; allowed: Weekday[] };
  frequency: { enabled: boolean; maxCalls: number; periodHours: number };
  consentRequired: boolean;
}

/** Every rule off: the policy of an organization that has not set one. */
export const DEFAULT_POLICY: CompliancePolicy = {
  window: { enabled: false, start: '08:00', end: '21:00' },
  days: { enabled: false, allowed: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
  frequency: { enabled: false, maxCalls: 3, periodHours: 24 },
  consentRequired: false,
};

export interface RecipientFacts {
  onDnc: boolean;
  optedOut: boolean;
  hasConsent: boolean;
  /** Candidate IANA zones of the recipient (the contact's timezone, else the number's); empty = unknown. */
  zones: string[];
  zoneSource: 'contact' | 'number' | 'unknown';
  /** Creation instants (ms) of the latest calls to the number inside the frequency period, newest first. */
  recentCalls: number[];
}

export type ComplianceCode =
  | 'dnc_suppressed' | 'recipient_opted_out' | 'no_consent' | 'day_not_allowed' | 'outside_call_window' | 'frequency_exceeded';
export type ComplianceRule = 'dnc' | 'opt_out' | 'consent' | 'allowed_days' | 'call_window' | 'frequency';

export type Verdict =
  | { allowed: true }
  | { allowed: false; code: ComplianceCode; rule: ComplianceRule; reason: string; nextAllowedAt?: Date; timezones?: string[] };

/** Zones used when the recipient's location is unknown and a time rule is on. */
const UNKNOWN_ZONES = ['UTC'];
/** How far ahead the next opening of days and hours is looked for. */
const LOOKAHEAD_DAYS = 8;

export const minuteOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

export function decide(policy: CompliancePolicy, facts: RecipientFacts, clock: Clock): Verdict {
  if (facts.onDnc) return refuse('dnc_suppressed', 'dnc', 'is on the organization\'s Do-Not-Call list');
  if (facts.optedOut) return refuse('recipient_opted_out', 'opt_out', 'opted out of calls from the organization');
  if (policy.consentRequired && !facts.hasConsent) {
    return refuse('no_consent', 'consent', 'has no calling consent on file (the policy requires consent)');
  }
  const now = clock.now();
  if (policy.days.enabled || policy.window.enabled) {
    const zones = facts.zones.length ? facts.zones : UNKNOWN_ZONES;
    const dayOff = policy.days.enabled && zones.some((z) => !policy.days.allowed.includes(localTime(z, now).weekday));
    const hoursOff = !dayOff && policy.window.enabled && zones.some((z) => !inWindow(policy, localTime(z, now).minuteOfDay));
    if (dayOff || hoursOff) {
      const next = nextOpening(policy, zones, now);
      const where = zones.length === 1 ? zones[0] : `each of ${zones.join(', ')}`;
      const reason = dayOff
        ? `may not be called on ${localTime(zones.find((z) => !policy.days.allowed.includes(localTime(z, now).weekday))!, now).weekday} `
          + `(allowed days: ${policy.days.allowed.join(', ')}; recipient time in ${where})`
        : `is outside the calling window ${policy.window.start}-${policy.window.end} (recipient time in ${where})`;
      return {
        allowed: false, code: dayOff ? 'day_not_allowed' : 'outside_call_window', rule: dayOff ? 'allowed_days' : 'call_window',
        reason: next ? reason : `${reason}; its time zones share no permitted hours: set the contact's timezone`,
        nextAllowedAt: next ? new Date(next) : undefined, timezones: zones,
      };
    }
  }
  if (policy.frequency.enabled && facts.recentCalls.length >= policy.frequency.maxCalls) {
    const periodMs = policy.frequency.periodHours * 3_600_000;
    const oldestCounted = facts.recentCalls[policy.frequency.maxCalls - 1];
    return {
      allowed: false, code: 'frequency_exceeded', rule: 'frequency',
      reason: `was called ${facts.recentCalls.length} times in the last ${policy.frequency.periodHours} h (at most ${policy.frequency.maxCalls})`,
      nextAllowedAt: new Date(oldestCounted + periodMs),
    };
  }
  return { allowed: true };
}

const refuse = (code: ComplianceCode, rule: ComplianceRule, reason: string): Verdict => ({ allowed: false, code, rule, reason });

function inWindow(policy: CompliancePolicy, minuteOfDay: number): boolean {
  return minuteOfDay >= minuteOf(policy.window.start) && minuteOfDay < minuteOf(policy.window.end);
}

function openIn(policy: CompliancePolicy, zone: string, ms: number): boolean {
  const l = localTime(zone, ms);
  if (policy.days.enabled && !policy.days.allowed.includes(l.weekday)) return false;
  return !policy.window.enabled || inWindow(policy, l.minuteOfDay);
}

/** The earliest instant, now or later, when every zone is on an allowed day and inside the window; null when
 *  there is none within the look-ahead. All zones open together only when one of them opens, so the candidates
 *  are each zone's day starts (window start, or midnight) over the next days. */
export function nextOpening(policy: CompliancePolicy, zones: string[], now: number): number | null {
  const startMinute = policy.window.enabled ? minuteOf(policy.window.start) : 0;
  const candidates = [now];
  for (const zone of zones) {
    const today = localTime(zone, now);
    for (let d = 0; d <= LOOKAHEAD_DAYS; d++) {
      const date = new Date(Date.UTC(today.year, today.month - 1, today.day + d));
      const at = zonedInstant(zone, date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), startMinute);
      if (at > now) candidates.push(at);
    }
  }
  candidates.sort((a, b) => a - b);
  return candidates.find((t) => zones.every((z) => openIn(policy, z, t))) ?? null;
}

export const isWeekday = (s: string): s is Weekday => (WEEKDAYS as string[]).includes(s);
