// Wall-clock time in an IANA time zone, from the platform's own Intl (ICU's tz database): which instant a local date
// and time is, and which local date and time an instant is. DST-correct: a local time skipped by a spring-forward
// change does not exist (null); one repeated by a fall-back change is its first occurrence.

const formats = new Map<string, Intl.DateTimeFormat>();

function format(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric',
      second: 'numeric', weekday: 'short',
    });
    // A memo of immutable formatters by zone name (a handful per process), not per-process state.
    formats.set(zone, f);
  }
  return f;
}

/** A valid IANA zone name (Intl knows it); UTC aliases included. */
export function isTimeZone(zone: string): boolean {
  if (!zone || zone.length > 64) return false;
  try {
    format(zone);
    return true;
  } catch {
    return false;
  }
}

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface LocalTime {
  year: number;
  month: number;
  day: number;
  /** Minutes since local midnight. */
  minutes: number;
  weekday: Weekday;
}

const DAY_NAMES: Record<string, Weekday> = { Mon: 'mon', Tue: 'tue', Wed: 'wed', Thu: 'thu', Fri: 'fri', Sat: 'sat', Sun: 'sun' };

/** The local date and time of an instant in the zone. */
export function localTime(zone: string, utcMs: number): LocalTime & { second: number } {
  const parts: Record<string, string> = {};
  for (const p of format(zone).formatToParts(new Date(utcMs))) parts[p.type] = p.value;
  return {
    year: Number(parts.year), month: Number(parts.month), day: Number(parts.day),
    minutes: Number(parts.hour) * 60 + Number(parts.minute), second: Number(parts.second), weekday: DAY_NAMES[parts.weekday],
  };
}

/** The zone's offset from UTC at an instant, in minutes (east positive). */
export function offsetMinutes(zone: string, utcMs: number): number {
  const l = localTime(zone, utcMs);
  const asUtc = Date.UTC(l.year, l.month - 1, l.day, 0, l.minutes, l.second);
  return Math.round((asUtc - Math.floor(utcMs / 1000) * 1000) / 60_000);
}

/** The instant of a local date and time in the zone; null when that local time does not exist (a DST gap). */
export function zonedToUtc(zone: string, year: number, month: number, day: number, minutes: number): number | null {
  const wall = Date.UTC(year, month - 1, day, 0, minutes);
  // Offsets around the wall time: the earlier one first, so a repeated (fall-back) time is its first occurrence.
  const candidates = [offsetMinutes(zone, wall - 86_400_000 / 2), offsetMinutes(zone, wall + 86_400_000 / 2)].sort((a, b) => b - a);
  for (const off of candidates) {
    const utc = wall - off * 60_000;
    if (offsetMinutes(zone, utc) === off) return utc;
  }
  return null;
}

/** The calendar day after (or `n` days after) a local date. */
export function addDays(d: { year: number; month: number; day: number }, n = 1) {
  const t = new Date(Date.UTC(d.year, d.month - 1, d.day + n));
  return { year: t.getUTCFullYear(), month: t.getUTCMonth() + 1, day: t.getUTCDate() };
}

export const weekdayOf = (d: { year: number; month: number; day: number }): Weekday =>
  WEEKDAYS[(new Date(Date.UTC(d.year, d.month - 1, d.day)).getUTCDay() + 6) % 7];

/** "HH:MM" to minutes since midnight (24:00 allowed as the end of a day); null when malformed. */
export function parseClock(s: string): number | null {
  const m = /^([01]\d|2[0-4]):([0-5]\d)$/.exec(s);
  if (!m) return null;
  const v = Number(m[1]) * 60 + Number(m[2]);
  return v > 24 * 60 ? null : v;
}

export const formatClock = (minutes: number) =>
  `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

/** How a person says an instant in the zone: "Tuesday, March 10 at 9:30 AM". */
export function spokenTime(zone: string, utcMs: number): string {
  const d = new Date(utcMs);
  const day = new Intl.DateTimeFormat('en-US', { timeZone: zone, weekday: 'long', month: 'long', day: 'numeric' }).format(d);
  const time = new Intl.DateTimeFormat('en-US', { timeZone: zone, hour: 'numeric', minute: '2-digit', hour12: true }).format(d);
  return `${day} at ${time}`;
}
