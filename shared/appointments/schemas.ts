// The answers of /v1/appointments: an appointment (its view beside its schema), the availability with its free
// slots, and the calendar feed's URL. The new_appointment webhook's data is the appointment view.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import { formatClock, offsetMinutes, WEEKDAYS, type Weekday } from './zoned.ts';

export const APPOINTMENT_STATUSES = ['booked', 'cancelled'] as const;
export type AppointmentStatus = (typeof APPOINTMENT_STATUSES)[number];
export const APPOINTMENT_SOURCES = ['agent', 'workflow', 'api'] as const;
export type AppointmentSource = (typeof APPOINTMENT_SOURCES)[number];

const Ts = (description: string) => Type.String({ format: 'date-time', description });

export const AppointmentResponse = Type.Object({
  id: Type.String({ description: 'The appointment id (UUIDv7: ordering by id is ordering by booking time).' }),
  status: Type.Union(APPOINTMENT_STATUSES.map((s) => Type.Literal(s)), {
    description: 'booked: holds its time; cancelled: released (POST /v1/appointments/{id}/cancel), the time is free again.' }),
  source: Type.Union(APPOINTMENT_SOURCES.map((s) => Type.Literal(s)), {
    description: 'Who booked it: agent (the voice agent during call_id), workflow (a workflow step), api (POST /v1/appointments).' }),
  start_at: Ts('When it starts (UTC).'),
  end_at: Ts('When it ends (UTC): start_at plus the slot length in force when it was booked.'),
  time_zone: Type.String({ description: 'The IANA time zone of the availability it was booked in.' }),
  local_start: Type.String({ description: 'start_at as local time in time_zone with its UTC offset (ISO 8601), e.g. 2026-03-10T09:30:00-04:00.' }),
  call_id: Nullable(Type.String(), 'The call it was booked during (GET /v1/calls/{id}); null when not booked on a call.'),
  contact_id: Nullable(Type.String(), 'The contact it is with (GET /v1/contacts/{id}), when known.'),
  phone_number: Nullable(Type.String(), 'The phone number of the person it is with (E.164), when known.'),
  name: Nullable(Type.String(), 'The name of the person it is with, when known.'),
  notes: Nullable(Type.String(), 'Free text notes.'),
  cancelled_at: Nullable(Ts('When it was cancelled.'), 'When it was cancelled; null while booked.'),
  cancel_reason: Nullable(Type.String(), 'Why it was cancelled, as given.'),
  created_at: Ts('When it was booked.'),
  updated_at: Ts('When it last changed.'),
}, { description: 'An appointment booked with the organization.' });
export type AppointmentView = Static<typeof AppointmentResponse>;

export interface AppointmentRow {
  id: string;
  organization_id: string;
  call_id: string | null;
  contact_id: string | null;
  phone_number: string | null;
  name: string | null;
  start_at: Date;
  end_at: Date;
  blocked_until: Date;
  time_zone: string;
  status: AppointmentStatus;
  source: AppointmentSource;
  notes: string | null;
  sequence: number;
  cancelled_at: Date | null;
  cancel_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

/** An instant as local ISO 8601 time with the zone's offset: 2026-03-10T09:30:00-04:00. */
export function localIso(zone: string, utcMs: number): string {
  const off = offsetMinutes(zone, utcMs);
  const local = new Date(utcMs + off * 60_000).toISOString().slice(0, 19);
  const sign = off < 0 ? '-' : '+';
  return `${local}${sign}${formatClock(Math.abs(off))}`;
}

export function appointmentView(a: AppointmentRow): AppointmentView {
  return {
    id: a.id, status: a.status, source: a.source, start_at: a.start_at.toISOString(), end_at: a.end_at.toISOString(),
    time_zone: a.time_zone, local_start: localIso(a.time_zone, a.start_at.getTime()), call_id: a.call_id, contact_id: a.contact_id,
    phone_number: a.phone_number, name: a.name, notes: a.notes, cancelled_at: a.cancelled_at?.toISOString() ?? null,
    cancel_reason: a.cancel_reason, created_at: a.created_at.toISOString(), updated_at: a.updated_at.toISOString(),
  };
}

/** The payload of new_appointment: the appointment as the API answers it, and its organization. */
export const newAppointmentEventData = (a: AppointmentRow) => ({ ...appointmentView(a), organization_id: a.organization_id });

export const Interval = Type.Object({
  start: Type.String({ description: 'Local opening time, HH:MM (24-hour).' }),
  end: Type.String({ description: 'Local closing time, HH:MM, after start (24:00 for midnight).' }),
}, { additionalProperties: false, description: 'One opening interval of a day, in the availability\'s time zone.' });

const DayHours = (day: string) => Type.Optional(Type.Array(Interval, { maxItems: 6, description: `Opening intervals on ${day} (none or absent: closed).` }));
const DAY_NAMES: Record<Weekday, string> = { mon: 'Mondays', tue: 'Tuesdays', wed: 'Wednesdays', thu: 'Thursdays', fri: 'Fridays', sat: 'Saturdays', sun: 'Sundays' };

export const WeeklyHours = Type.Object(Object.fromEntries(WEEKDAYS.map((d) => [d, DayHours(DAY_NAMES[d])])) as Record<Weekday, ReturnType<typeof DayHours>>,
  { additionalProperties: false, description: 'Bookable hours per weekday (mon ... sun), local wall-clock time in time_zone.' });
export type WeeklyHoursValue = Partial<Record<Weekday, { start: string; end: string }[]>>;

export const Slot = Type.Object({
  start_at: Ts('Slot start (UTC).'),
  end_at: Ts('Slot end (UTC).'),
  local_start: Type.String({ description: 'Slot start in the availability\'s time zone, with its offset.' }),
}, { description: 'A free slot: bookable now.' });

export const AvailabilitySettings = Type.Object({
  time_zone: Type.String({ description: 'IANA time zone of the weekly hours, e.g. America/New_York.' }),
  weekly_hours: WeeklyHours,
  slot_minutes: Type.Integer({ description: 'Length of one appointment in minutes; slots start every slot_minutes from each opening.' }),
  buffer_minutes: Type.Integer({ description: 'Minutes kept free after each appointment before the next may start.' }),
  max_days_ahead: Type.Integer({ description: 'How many days ahead slots are offered and may be booked.' }),
  calendar_feed: Type.Object({
    enabled: Type.Boolean({ description: 'Whether the organization has an iCalendar feed URL (POST /v1/appointments/calendar-feed makes one).' }),
    rotated_at: Nullable(Ts('When its secret was last made.'), 'When the feed\'s secret URL was last made; null when none.'),
  }, { description: 'The iCalendar feed (its URL is shown only when made).' }),
  updated_at: Ts('When the availability was last set.'),
}, { description: 'The organization\'s bookable availability.' });

export const AvailabilityResponse = Type.Object({
  ...AvailabilitySettings.properties,
  from: Ts('Start of the range the slots cover.'),
  to: Ts('End of the range the slots cover.'),
  slots: Type.Array(Slot, { description: 'The free slots starting in [from, to), earliest first: weekly hours minus booked appointments and their buffers, never in the past nor past max_days_ahead.' }),
}, { description: 'The availability and its free slots over a range.' });
export type AvailabilityView = Static<typeof AvailabilityResponse>;

export const FeedResponse = Type.Object({
  url: Type.String({ description: 'The secret iCalendar URL (webcal clients: replace https:// with webcal://). Shown only now; a new one replaces it.' }),
  rotated_at: Ts('When it was made.'),
}, { description: 'The organization\'s iCalendar feed URL.' });

const ID = '01939b2c-4d5e-7f60-8a1b-2c3d4e5f6a7b';
export const APPOINTMENT_EXAMPLE: AppointmentView = {
  id: ID, status: 'booked', source: 'agent', start_at: '2026-03-10T13:30:00.000Z', end_at: '2026-03-10T14:00:00.000Z',
  time_zone: 'America/New_York', local_start: '2026-03-10T09:30:00-04:00', call_id: '01939b2a-0b1c-7d2e-9f30-4a5b6c7d8e9f',
  contact_id: null, phone_number: '+14155550109', name: null, notes: 'Booked by Ava during the call.', cancelled_at: null,
  cancel_reason: null, created_at: '2026-03-06T15:04:05.000Z', updated_at: '2026-03-06T15:04:05.000Z',
};
export const WEEKLY_EXAMPLE: WeeklyHoursValue = {
  mon: [{ start: '09:00', end: '12:00' }, { start: '13:00', end: '17:00' }], tue: [{ start: '09:00', end: '17:00' }],
  wed: [{ start: '09:00', end: '17:00' }], thu: [{ start: '09:00', end: '17:00' }], fri: [{ start: '09:00', end: '13:00' }],
};
