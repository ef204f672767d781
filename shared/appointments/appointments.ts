// Appointments: the organization's availability (weekly hours in an IANA time zone, slot length, buffer, booking
// window), the bookings made by the voice agent, workflows or the API, and their cancellation.
//
// Booking is one INSERT ... ON CONFLICT DO NOTHING against the exclusion constraint of 032_appointments.sql: two
// requests for overlapping times serialize on it in PostgreSQL and the second inserts nothing (slot_unavailable).
// There is no read-then-write: the free-slot computation decides what is offered, the constraint what is booked.
// Every booking writes new_appointment to the outbox in its transaction.
import type { Db, Tx, WithinTx } from '../db.ts';
import { DomainError, notFound, stateConflict, validationError } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import { isE164 } from '../phone/e164.ts';
import { newAppointmentEventData, type AppointmentRow, type AppointmentSource, type AppointmentStatus, type WeeklyHoursValue } from './schemas.ts';
import { allSlots, bookableUntil, freeSlots, type AvailabilityRules, type Booked, type FreeSlot } from './slots.ts';
import { isTimeZone, parseClock, WEEKDAYS } from './zoned.ts';

export const NEW_APPOINTMENT_EVENT = 'new_appointment';
/** The longest range GET /v1/appointments/availability computes slots for. */
export const MAX_RANGE_DAYS = 31;
export const DEFAULT_RANGE_DAYS = 7;
export const NOTES_MAX = 2000;
const MINUTE = 60_000;
const DAY = 86_400_000;

/** What runs queries: the pool, a transaction, or a call transition's open transaction. */
export type Queryable = Pick<Tx, 'one' | 'oneOrNone' | 'any' | 'none'>;

export interface AvailabilityRow extends AvailabilityRules { organization_id: string; updated_at: Date }

export interface AvailabilityInput {
  time_zone: string;
  weekly_hours: WeeklyHoursValue;
  slot_minutes: number;
  buffer_minutes?: number;
  max_days_ahead?: number;
}

/** Checks what JSON Schema cannot: a known time zone, HH:MM times, each interval ending after it starts, the
 *  intervals of a day in order and apart. Throws validation_error naming every problem. */
export function checkAvailability(input: AvailabilityInput): void {
  const fields: Record<string, string> = {};
  if (!isTimeZone(input.time_zone)) fields.time_zone = 'must be an IANA time zone such as America/New_York';
  for (const day of WEEKDAYS) {
    let prevEnd = -1;
    (input.weekly_hours[day] ?? []).forEach((iv, i) => {
      const at = `weekly_hours.${day}[${i}]`;
      const start = parseClock(iv.start);
      const end = parseClock(iv.end);
      if (start === null || start >= 24 * 60) fields[`${at}.start`] = 'must be a time HH:MM from 00:00 to 23:59';
      if (end === null) fields[`${at}.end`] = 'must be a time HH:MM from 00:01 to 24:00';
      if (start === null || end === null) return;
      if (end <= start) fields[`${at}.end`] = 'must be after start';
      else if (end - start < input.slot_minutes) fields[`${at}.end`] = `leaves less than one slot (${input.slot_minutes} minutes) after start`;
      else if (start < prevEnd) fields[`${at}.start`] = 'must not be before the end of the previous interval of the day';
      prevEnd = Math.max(prevEnd, end);
    });
  }
  if (Object.keys(fields).length) throw validationError(fields);
}

export async function setAvailability(db: Db, organizationId: string, input: AvailabilityInput, within?: WithinTx<AvailabilityRow>): Promise<AvailabilityRow> {
  checkAvailability(input);
  // Stored with the days in order and closed days left out.
  const weekly: WeeklyHoursValue = {};
  for (const d of WEEKDAYS) if (input.weekly_hours[d]?.length) weekly[d] = input.weekly_hours[d]!.map((iv) => ({ start: iv.start, end: iv.end }));
  return db.tx('appointments-availability', async (tx) => {
    const row = await tx.one<AvailabilityRow>(
      `INSERT INTO appointment_availability (organization_id, time_zone, weekly_hours, slot_minutes, buffer_minutes, max_days_ahead)
       VALUES ($1, $2, $3:json, $4, $5, $6)
       ON CONFLICT (organization_id) DO UPDATE SET time_zone = EXCLUDED.time_zone, weekly_hours = EXCLUDED.weekly_hours,
         slot_minutes = EXCLUDED.slot_minutes, buffer_minutes = EXCLUDED.buffer_minutes, max_days_ahead = EXCLUDED.max_days_ahead,
         updated_at = now()
       RETURNING *`,
      [organizationId, input.time_zone, weekly, input.slot_minutes, input.buffer_minutes ?? 0, input.max_days_ahead ?? 60]);
    await within?.(tx, row);
    return row;
  });
}

export const findAvailability = (q: Queryable, organizationId: string) =>
  q.oneOrNone<AvailabilityRow>('SELECT * FROM appointment_availability WHERE organization_id = $1', [organizationId]);

export async function getAvailability(q: Queryable, organizationId: string): Promise<AvailabilityRow> {
  const row = await findAvailability(q, organizationId);
  if (!row) {
    throw new DomainError('not_found', 'The organization has not set its availability.',
      { resolutionHint: 'Set it with PUT /v1/appointments/availability.' });
  }
  return row;
}

/** Booked appointments whose blocked time may touch [fromMs, toMs). */
export const bookedBetween = (q: Queryable, organizationId: string, fromMs: number, toMs: number) =>
  q.any<Booked>(
    `SELECT start_at, blocked_until FROM appointments
      WHERE organization_id = $1 AND status = 'booked' AND start_at < $3 AND blocked_until > $2`,
    [organizationId, new Date(fromMs), new Date(toMs)]);

export interface SlotRange { from?: string; to?: string }

/** The free slots over a range (default: now and the next 7 days; at most 31 days). */
export async function availabilityWithSlots(db: Db, organizationId: string, range: SlotRange, nowMs: number) {
  const rules = await getAvailability(db, organizationId);
  const fields: Record<string, string> = {};
  const fromMs = range.from === undefined ? nowMs : Date.parse(range.from);
  if (Number.isNaN(fromMs)) fields.from = 'must be a date-time such as 2026-03-09T00:00:00Z';
  const toMs = range.to === undefined ? fromMs + DEFAULT_RANGE_DAYS * DAY : Date.parse(range.to);
  if (Number.isNaN(toMs)) fields.to = 'must be a date-time such as 2026-03-16T00:00:00Z';
  else if (!fields.from && toMs <= fromMs) fields.to = 'must be after from';
  else if (!fields.from && toMs - fromMs > MAX_RANGE_DAYS * DAY) fields.to = `must be at most ${MAX_RANGE_DAYS} days after from`;
  if (Object.keys(fields).length) throw validationError(fields);
  const rulesBuffer = rules.buffer_minutes * MINUTE;
  const booked = await bookedBetween(db, organizationId, fromMs - rulesBuffer, toMs + rules.slot_minutes * MINUTE + rulesBuffer);
  return { rules, fromMs, toMs, slots: freeSlots(rules, booked, fromMs, toMs, nowMs) };
}

/** The first free slot from now within the booking window (the voice agent offers it). */
export async function nextFreeSlot(q: Queryable, rules: AvailabilityRow, nowMs: number): Promise<FreeSlot | null> {
  const until = bookableUntil(rules, nowMs);
  // A week at a time: the usual answer is in the first one.
  for (let from = nowMs; from < until; from += 7 * DAY) {
    const to = Math.min(from + 7 * DAY, until);
    const booked = await bookedBetween(q, rules.organization_id, from - rules.buffer_minutes * MINUTE, to + (rules.slot_minutes + rules.buffer_minutes) * MINUTE);
    const [first] = freeSlots(rules, booked, from, to, nowMs);
    if (first) return first;
  }
  return null;
}

export interface NewBooking {
  startMs: number;
  source: AppointmentSource;
  call_id?: string | null;
  contact_id?: string | null;
  phone_number?: string | null;
  name?: string | null;
  notes?: string | null;
}

/** Inserts a booking for a slot of `rules` unless it overlaps a booked one (then null), with its new_appointment
 *  event. Runs inside the caller's transaction; the caller wakes the relay after the commit. */
export async function insertBooking(q: Queryable, rules: AvailabilityRow, b: NewBooking): Promise<AppointmentRow | null> {
  const end = b.startMs + rules.slot_minutes * MINUTE;
  const row = await q.oneOrNone<AppointmentRow>(
    `INSERT INTO appointments (id, organization_id, call_id, contact_id, phone_number, name, start_at, end_at, blocked_until,
       time_zone, source, notes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     ON CONFLICT DO NOTHING RETURNING *`,
    [uuidv7(), rules.organization_id, b.call_id ?? null, b.contact_id ?? null, b.phone_number ?? null, b.name ?? null,
      new Date(b.startMs), new Date(end), new Date(end + rules.buffer_minutes * MINUTE), rules.time_zone, b.source, b.notes ?? null]);
  if (row) await recordEvent(q as Tx, { organizationId: rules.organization_id, eventType: NEW_APPOINTMENT_EVENT, data: newAppointmentEventData(row) });
  return row;
}

export interface BookInput {
  start_at: string;
  source?: 'api' | 'workflow';
  call_id?: string;
  contact_id?: string;
  phone_number?: string;
  name?: string;
  notes?: string;
}

/** POST /v1/appointments: books one slot of the availability. */
export async function createAppointment(db: Db, organizationId: string, input: BookInput, nowMs: number,
  within?: WithinTx<AppointmentRow>): Promise<AppointmentRow> {
  const fields: Record<string, string> = {};
  const startMs = Date.parse(input.start_at);
  if (Number.isNaN(startMs)) fields.start_at = 'must be a date-time such as 2026-03-10T13:30:00Z';
  if (input.phone_number !== undefined && !isE164(input.phone_number)) fields.phone_number = 'must be an E.164 number such as +14155550123';
  if (input.contact_id !== undefined && !isUuid(input.contact_id)) fields.contact_id = 'is not a contact of your organization';
  if (input.call_id !== undefined && !isUuid(input.call_id)) fields.call_id = 'is not a call of your organization';
  if (input.phone_number === undefined && input.contact_id === undefined) fields.phone_number = 'is required (or contact_id)';
  if (Object.keys(fields).length) throw validationError(fields);

  const row = await db.tx('appointments-book', async (tx) => {
    const rules = await findAvailability(tx, organizationId);
    if (!rules) {
      throw validationError({ start_at: 'cannot be booked: the organization has not set its availability' },
        'Set the availability first (PUT /v1/appointments/availability).');
    }
    const refs: Record<string, string> = {};
    let phone = input.phone_number ?? null;
    let name = input.name ?? null;
    if (input.contact_id !== undefined) {
      const c = await tx.oneOrNone<{ phone_number: string; name: string | null }>(
        'SELECT phone_number, name FROM contacts WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL', [input.contact_id, organizationId]);
      if (!c) refs.contact_id = 'is not a contact of your organization';
      else { phone ??= c.phone_number; name ??= c.name; }
    }
    if (input.call_id !== undefined) {
      const c = await tx.oneOrNone('SELECT 1 FROM calls WHERE id = $1 AND organization_id = $2', [input.call_id, organizationId]);
      if (!c) refs.call_id = 'is not a call of your organization';
    }
    const slot = allSlots(rules, startMs, startMs + 1)[0];
    if (!slot || slot.startMs !== startMs) {
      refs.start_at = `is not the start of a slot of the availability (${rules.slot_minutes}-minute slots from each opening of the weekly hours in ${rules.time_zone}); see GET /v1/appointments/availability`;
    } else if (startMs <= nowMs) {
      refs.start_at = 'is in the past';
    } else if (startMs >= bookableUntil(rules, nowMs)) {
      refs.start_at = `is more than ${rules.max_days_ahead} days ahead (max_days_ahead)`;
    }
    if (Object.keys(refs).length) throw validationError(refs);
    const saved = await insertBooking(tx, rules, { startMs, source: input.source ?? 'api', call_id: input.call_id ?? null,
      contact_id: input.contact_id ?? null, phone_number: phone, name, notes: input.notes ?? null });
    if (!saved) {
      throw new DomainError('slot_unavailable', 'That time is already booked (or inside the buffer of a booking).',
        { fields: { start_at: 'is already booked' }, resolutionHint: 'Pick another slot from GET /v1/appointments/availability.' });
    }
    await within?.(tx, saved);
    return saved;
  });
  wakeRelay(db);
  return row;
}

export async function getAppointment(q: Queryable, organizationId: string, id: string): Promise<AppointmentRow> {
  const row = isUuid(id)
    ? await q.oneOrNone<AppointmentRow>('SELECT * FROM appointments WHERE id = $1 AND organization_id = $2', [id, organizationId])
    : null;
  if (!row) throw notFound(`Appointment ${id}`);
  return row;
}

export async function cancelAppointment(db: Db, organizationId: string, id: string, reason: string | undefined,
  within?: WithinTx<AppointmentRow>): Promise<AppointmentRow> {
  return db.tx('appointments-cancel', async (tx) => {
    const cur = await getAppointment(tx, organizationId, id);
    const row = await tx.oneOrNone<AppointmentRow>(
      `UPDATE appointments SET status = 'cancelled', cancelled_at = now(), cancel_reason = $3, sequence = sequence + 1, updated_at = now()
        WHERE id = $1 AND organization_id = $2 AND status = 'booked' RETURNING *`, [cur.id, organizationId, reason ?? null]);
    if (!row) throw stateConflict('appointment', 'cancelled', 'The appointment is already cancelled.');
    await within?.(tx, row);
    return row;
  });
}

export interface AppointmentFilters { from?: string; to?: string; status?: AppointmentStatus; call_id?: string }

/** One keyset page of the organization's appointments by id (booking order); from/to bound start_at. */
export async function listAppointments(db: Db, organizationId: string, p: PageParams, f: AppointmentFilters): Promise<AppointmentRow[]> {
  const fields: Record<string, string> = {};
  const from = f.from === undefined ? undefined : Date.parse(f.from);
  const to = f.to === undefined ? undefined : Date.parse(f.to);
  if (from !== undefined && Number.isNaN(from)) fields.from = 'must be a date-time such as 2026-03-09T00:00:00Z';
  if (to !== undefined && Number.isNaN(to)) fields.to = 'must be a date-time such as 2026-03-16T00:00:00Z';
  if (from !== undefined && to !== undefined && !fields.from && !fields.to && to <= from) fields.to = 'must be after from';
  if (f.call_id !== undefined && !isUuid(f.call_id)) fields.call_id = 'must be a call id (uuid)';
  if (Object.keys(fields).length) throw validationError(fields);
  const values: unknown[] = [organizationId];
  let where = 'organization_id = $1';
  const and = (sql: string, v: unknown) => { values.push(v); where += ` AND ${sql} $${values.length}`; };
  if (from !== undefined) and('start_at >=', new Date(from));
  if (to !== undefined) and('start_at <', new Date(to));
  if (f.status) and('status =', f.status);
  if (f.call_id) and('call_id =', f.call_id);
  const k = keysetClause('id', p, values.length + 1);
  return db.any<AppointmentRow>(`SELECT * FROM appointments WHERE ${where}${k.where}${k.tail}`, [...values, ...k.values]);
}
