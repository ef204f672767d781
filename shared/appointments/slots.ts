// Free slots: the weekly hours laid over the calendar in the availability's time zone (DST-correct: 09:00 is 09:00
// local on either side of a change), minus the booked appointments and their buffers. Pure: the caller reads the
// bookings. Slots start at each opening and every slot_minutes after it, and must end by the interval's close.
import type { WeeklyHoursValue } from './schemas.ts';
import { addDays, localTime, parseClock, weekdayOf, zonedToUtc } from './zoned.ts';

export interface AvailabilityRules {
  time_zone: string;
  weekly_hours: WeeklyHoursValue;
  slot_minutes: number;
  buffer_minutes: number;
  max_days_ahead: number;
}

export interface Booked { start_at: Date; blocked_until: Date }
export interface FreeSlot { startMs: number; endMs: number }

const MINUTE = 60_000;
const DAY = 86_400_000;

/** Every slot of the weekly hours starting in [fromMs, toMs), booked or not, earliest first. */
export function allSlots(rules: AvailabilityRules, fromMs: number, toMs: number): FreeSlot[] {
  const out: FreeSlot[] = [];
  const zone = rules.time_zone;
  // From the local day before `from` (an interval may have started the local day before in UTC terms) to the day of `to`.
  let day: { year: number; month: number; day: number } = addDays(localTime(zone, fromMs), -1);
  const last = localTime(zone, toMs);
  const lastKey = last.year * 10_000 + last.month * 100 + last.day;
  while (day.year * 10_000 + day.month * 100 + day.day <= lastKey) {
    for (const iv of rules.weekly_hours[weekdayOf(day)] ?? []) {
      const open = parseClock(iv.start)!;
      const close = parseClock(iv.end)!;
      for (let m = open; m + rules.slot_minutes <= close; m += rules.slot_minutes) {
        const start = zonedToUtc(zone, day.year, day.month, day.day, m);
        // A local time a spring-forward change skips does not exist: no slot then.
        if (start === null || start < fromMs || start >= toMs) continue;
        out.push({ startMs: start, endMs: start + rules.slot_minutes * MINUTE });
      }
    }
    day = addDays(day);
  }
  return out.sort((a, b) => a.startMs - b.startMs);
}

/** Whether a slot taken now (its time plus the buffer) would overlap a booking's [start_at, blocked_until). */
export const overlaps = (s: FreeSlot, bufferMinutes: number, b: Booked) =>
  s.startMs < b.blocked_until.getTime() && b.start_at.getTime() < s.endMs + bufferMinutes * MINUTE;

/** The bookable window at `nowMs`: from now to max_days_ahead days ahead. */
export const bookableUntil = (rules: AvailabilityRules, nowMs: number) => nowMs + rules.max_days_ahead * DAY;

/** The free slots starting in [fromMs, toMs) at `nowMs`: not in the past, not past max_days_ahead, and clear of every
 *  booking with the buffer. */
export function freeSlots(rules: AvailabilityRules, booked: Booked[], fromMs: number, toMs: number, nowMs: number): FreeSlot[] {
  const from = Math.max(fromMs, nowMs);
  const to = Math.min(toMs, bookableUntil(rules, nowMs));
  if (from >= to) return [];
  return allSlots(rules, from, to).filter((s) => !booked.some((b) => overlaps(s, rules.buffer_minutes, b)));
}
