// /v1/appointments: bookings made by the voice agent during calls, by workflows or through the API, the
// organization's availability with its free slots, and the secret iCalendar feed (rules in shared/appointments;
// docs/reference/appointments.md). Reads need bookings:read; every write needs agents:write (the scope of what
// the voice agent books from: the reference names no bookings write scope).
import { Type } from '@sinclair/typebox';
import {
  availabilityWithSlots, cancelAppointment, createAppointment, DEFAULT_RANGE_DAYS, getAppointment, getAvailability, listAppointments,
  MAX_RANGE_DAYS, NOTES_MAX, setAvailability, type AvailabilityRow,
} from '../../shared/appointments/appointments.ts';
import { FeedCache, feedOrganization, feedState, feedUrl, rotateFeed } from '../../shared/appointments/feed.ts';
import {
  APPOINTMENT_EXAMPLE, APPOINTMENT_STATUSES, AppointmentResponse, appointmentView, AvailabilityResponse, AvailabilitySettings,
  FeedResponse, Interval, localIso, WEEKLY_EXAMPLE, type AppointmentRow,
} from '../../shared/appointments/schemas.ts';
import { DomainError } from '../../shared/errors.ts';
import { PageQuery } from '../../shared/pagination.ts';
import { FixedWindowLimiter } from '../../shared/ratelimit/fixed-window-limiter.ts';
import type { Db } from '../../shared/db.ts';
import type { Principal } from '../../shared/accounts/principal.ts';
import { assertWholeOrganization } from '../../shared/sub-entities/limit.ts';
import type { GatewayDeps, Plugin } from '../http/types.ts';
import { ListMeta, UuidIdParams } from './schemas.ts';
import { WEEKDAYS } from '../../shared/appointments/zoned.ts';

const TAG = 'Appointments';
const READ = 'bookings:read';
const WRITE = 'agents:write';
/** Feed requests per client address per minute (the feed is public: the secret in its URL is the credential). */
export const FEED_REQUESTS_PER_MINUTE = 60;

const One = Type.Object({ data: AppointmentResponse });
const IdParams = UuidIdParams('appointment');
const reply = (status: number) => (a: AppointmentRow) => ({ status, body: { data: appointmentView(a) } });

const AVAILABILITY_EXAMPLE = {
  time_zone: 'America/New_York', weekly_hours: WEEKLY_EXAMPLE, slot_minutes: 30, buffer_minutes: 10, max_days_ahead: 60,
  calendar_feed: { enabled: true, rotated_at: '2026-03-01T12:00:00.000Z' }, updated_at: '2026-03-01T12:00:00.000Z',
};
const FEED_TOKEN_EXAMPLE = 'olcal_0193a1b2c3d47e5f8a9b0c1d2e3f4a5b3kQ9vX2mZr7TbN4pLs8dWq1eYh6uJ0oR';

async function availabilityBody(db: Db, row: AvailabilityRow) {
  const feed = await feedState(db, row.organization_id);
  return {
    // jsonb keeps keys in its own order: the days are answered mon ... sun.
    time_zone: row.time_zone, weekly_hours: Object.fromEntries(WEEKDAYS.filter((d) => row.weekly_hours[d]).map((d) => [d, row.weekly_hours[d]])),
    slot_minutes: row.slot_minutes, buffer_minutes: row.buffer_minutes,
    max_days_ahead: row.max_days_ahead, calendar_feed: { enabled: feed !== null, rotated_at: feed?.rotated_at.toISOString() ?? null },
    updated_at: row.updated_at.toISOString(),
  };
}

const weeklyHoursBody = Type.Object(Object.fromEntries(WEEKDAYS.map((d) => [d, Type.Optional(Type.Array(Interval, { maxItems: 6,
  description: `Opening intervals on ${d} (omitted or []: closed).` }))])), { additionalProperties: false,
  description: 'Bookable hours per weekday (mon ... sun): up to 6 intervals a day, HH:MM local time in time_zone, in order and apart.' });

/** Appointments belong to the whole organization (they have no sub-entity): a credential limited to a sub-entity
 *  answers forbidden here (shared/sub-entities/limit.ts). */
const orgOnly = (p: Principal) => assertWholeOrganization(p, 'appointments (they belong to the whole organization)');

export const appointmentRoutes: Plugin = (routes) => {
  // The feed's limiter: one per gateway (this plugin runs once per gateway), counted in Redis across gateways.
  let feedLimiter: FixedWindowLimiter | null = null;
  const limiter = (deps: GatewayDeps) => (feedLimiter ??= new FixedWindowLimiter(deps.redis, { windowMs: 60_000 }));
  const feeds = new FeedCache();

  routes.add({
    method: 'GET', path: '/v1/appointments', scope: READ, tag: TAG, summary: 'List appointments',
    description: 'The organization\'s appointments, newest booking first (order=asc: oldest first), paginated with limit '
      + 'and cursor. from and to bound start_at (from inclusive, to exclusive); status and call_id filter. Read-only.',
    examples: { response: { data: [APPOINTMENT_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object({
      ...PageQuery,
      from: Type.Optional(Type.String({ format: 'date-time', description: 'Only appointments starting at or after this time.' })),
      to: Type.Optional(Type.String({ format: 'date-time', description: 'Only appointments starting before this time.' })),
      status: Type.Optional(Type.Union(APPOINTMENT_STATUSES.map((s) => Type.Literal(s)), { description: 'Only booked or only cancelled ones.' })),
      call_id: Type.Optional(Type.String({ description: 'Only the appointments booked during this call.' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(AppointmentResponse, { description: 'The appointments.' }), meta: ListMeta }) },
    errors: ['forbidden'],
    handler: async ({ deps, principal, query }) => {
      orgOnly(principal);
      const list = `appointments:${query.from ?? ''}:${query.to ?? ''}:${query.status ?? ''}:${query.call_id ?? ''}`;
      const page = deps.cursors.params(list, query);
      const rows = await listAppointments(deps.db, principal.organizationId, page,
        { from: query.from, to: query.to, status: query.status, call_id: query.call_id });
      const out = deps.cursors.page(list, page, rows, (a) => a.id);
      return { status: 200, body: { data: out.data.map(appointmentView), meta: out.meta } };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/appointments', scope: WRITE, tag: TAG, summary: 'Book an appointment',
    description: 'Books one free slot of the availability for a person (phone_number, or contact_id whose number and name are '
      + 'used), for workflows and integrations; the voice agent books by itself during calls. start_at must be the start of '
      + 'a slot (GET /v1/appointments/availability lists the free ones), in the future and within max_days_ahead, otherwise '
      + 'validation_error naming start_at. A time that overlaps a booked appointment or the buffer after one answers 409 '
      + 'slot_unavailable: two requests for the same slot never both succeed (PostgreSQL decides, whatever the number of '
      + 'gateways). source is api (default) or workflow; call_id links a call of the organization. new_appointment fires. '
      + 'Honours Idempotency-Key. Needs agents:write.',
    examples: {
      request: { start_at: '2026-03-10T13:30:00Z', phone_number: '+14155550109', name: 'Dana Reyes', notes: 'First visit.' },
      response: { data: { ...APPOINTMENT_EXAMPLE, source: 'api', call_id: null, name: 'Dana Reyes', notes: 'First visit.' } },
    },
    body: Type.Object({
      start_at: Type.String({ format: 'date-time', description: 'The slot\'s start (any offset; stored in UTC).' }),
      phone_number: Type.Optional(Type.String({ maxLength: 16, description: 'The person\'s number (E.164); required without contact_id.' })),
      contact_id: Type.Optional(Type.String({ description: 'A contact of the organization (its number and name fill in the rest).' })),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The person\'s name.' })),
      notes: Type.Optional(Type.String({ maxLength: NOTES_MAX, description: `Free text, at most ${NOTES_MAX} characters.` })),
      call_id: Type.Optional(Type.String({ description: 'A call of the organization this booking came from.' })),
      source: Type.Optional(Type.Union([Type.Literal('api'), Type.Literal('workflow')], { description: 'api (default) or workflow.' })),
    }, { additionalProperties: false }),
    response: { status: 201, schema: One },
    errors: ['slot_unavailable', 'forbidden'],
    handler: async (ctx) => {
      orgOnly(ctx.principal);
      const r = reply(201);
      return r(await createAppointment(ctx.deps.db, ctx.principal.organizationId, ctx.body, ctx.deps.clock.now(), ctx.idempotent(r)));
    },
  });

  routes.add({
    method: 'GET', path: '/v1/appointments/availability', scope: READ, tag: TAG, summary: 'Read the availability and its free slots',
    description: 'The organization\'s bookable availability and the free slots starting in [from, to) (default: now and the '
      + `next ${DEFAULT_RANGE_DAYS} days; at most ${MAX_RANGE_DAYS} days). Slots are laid over the calendar in time_zone, so `
      + '09:00 stays 09:00 local across daylight-saving changes (a local time the change skips has no slot); booked '
      + 'appointments and the buffer after each are left out, and so is anything in the past or past max_days_ahead. '
      + 'not_found until the availability is set. Read-only.',
    examples: { response: { data: { ...AVAILABILITY_EXAMPLE, from: '2026-03-06T15:00:00.000Z', to: '2026-03-13T15:00:00.000Z',
      slots: [{ start_at: '2026-03-09T13:00:00.000Z', end_at: '2026-03-09T13:30:00.000Z', local_start: '2026-03-09T09:00:00-04:00' },
        { start_at: '2026-03-09T13:30:00.000Z', end_at: '2026-03-09T14:00:00.000Z', local_start: '2026-03-09T09:30:00-04:00' }] } } },
    query: Type.Object({
      from: Type.Optional(Type.String({ format: 'date-time', description: 'Start of the range (default now).' })),
      to: Type.Optional(Type.String({ format: 'date-time', description: `End of the range (default from + ${DEFAULT_RANGE_DAYS} days; at most ${MAX_RANGE_DAYS} days after from).` })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: AvailabilityResponse }) },
    errors: ['not_found', 'forbidden'],
    handler: async ({ deps, principal, query }) => {
      orgOnly(principal);
      const { rules, fromMs, toMs, slots } = await availabilityWithSlots(deps.db, principal.organizationId, query, deps.clock.now());
      return { status: 200, body: { data: { ...await availabilityBody(deps.db, rules), from: new Date(fromMs).toISOString(),
        to: new Date(toMs).toISOString(), slots: slots.map((s) => ({ start_at: new Date(s.startMs).toISOString(),
          end_at: new Date(s.endMs).toISOString(), local_start: localIso(rules.time_zone, s.startMs) })) } } };
    },
  });

  routes.add({
    method: 'PUT', path: '/v1/appointments/availability', scope: WRITE, tag: TAG, summary: 'Set the availability',
    description: 'Sets (replaces) the organization\'s bookable availability: weekly hours per weekday as local HH:MM '
      + 'intervals in time_zone (an IANA name), the slot length, the buffer kept free after each appointment, and how many '
      + 'days ahead slots are offered. Existing appointments stay as they are. A bad zone, time, or an interval that ends '
      + 'before it starts, overlaps the previous one or is shorter than one slot is validation_error naming it '
      + '(weekly_hours.mon[0].end). Needs agents:write.',
    examples: { request: { time_zone: 'America/New_York', weekly_hours: WEEKLY_EXAMPLE, slot_minutes: 30, buffer_minutes: 10, max_days_ahead: 60 },
      response: { data: AVAILABILITY_EXAMPLE } },
    body: Type.Object({
      time_zone: Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone of the weekly hours, e.g. America/New_York.' }),
      weekly_hours: weeklyHoursBody,
      slot_minutes: Type.Integer({ minimum: 5, maximum: 480, description: 'Length of one appointment, 5 to 480 minutes.' }),
      buffer_minutes: Type.Optional(Type.Integer({ minimum: 0, maximum: 240, description: 'Minutes kept free after each appointment, 0 (default) to 240.' })),
      max_days_ahead: Type.Optional(Type.Integer({ minimum: 1, maximum: 365, description: 'Days ahead slots are offered, 1 to 365 (default 60).' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: AvailabilitySettings }) },
    errors: ['forbidden'],
    handler: async (ctx) => {
      orgOnly(ctx.principal);
      const row = await setAvailability(ctx.deps.db, ctx.principal.organizationId, ctx.body);
      return { status: 200, body: { data: await availabilityBody(ctx.deps.db, row) } };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/appointments/calendar-feed', scope: WRITE, tag: TAG, summary: 'Make or rotate the iCalendar feed URL',
    description: 'Makes the organization\'s secret iCalendar feed URL, or replaces it: the previous URL stops working at once '
      + '(404). The URL is shown only in this answer; only a hash of its secret is kept. Calendar apps subscribe to it '
      + 'without credentials (GET /v1/appointments/calendar.ics). Needs agents:write.',
    examples: { response: { data: { url: `https://api.example.com/v1/appointments/calendar.ics?token=${FEED_TOKEN_EXAMPLE}`, rotated_at: '2026-03-01T12:00:00.000Z' } } },
    response: { status: 201, schema: Type.Object({ data: FeedResponse }) },
    idempotency: false,
    errors: ['forbidden'],
    handler: async ({ deps, principal, baseUrl }) => {
      orgOnly(principal);
      const f = await rotateFeed(deps.db, principal.organizationId);
      return { status: 201, body: { data: { url: feedUrl(baseUrl, f.token), rotated_at: f.rotated_at.toISOString() } } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/appointments/calendar.ics', scope: null, tag: TAG, summary: 'The iCalendar feed',
    description: 'The organization\'s appointments as an RFC 5545 calendar (text/calendar), for calendar apps to subscribe '
      + 'to: those that started up to 90 days ago and every later one (the latest 1000), booked (STATUS:CONFIRMED) and cancelled '
      + '(STATUS:CANCELLED, SEQUENCE raised), times in UTC. No credential: the secret token from POST '
      + '/v1/appointments/calendar-feed is the credential; a wrong, malformed or replaced token is not_found. At most '
      + `${FEED_REQUESTS_PER_MINUTE} requests per client address a minute (rate_limited with Retry-After).`,
    query: Type.Object({ token: Type.String({ maxLength: 100, description: 'The feed\'s secret token (part of the URL).' }) }, { additionalProperties: false }),
    response: { status: 200, contentType: 'text/calendar', description: 'An RFC 5545 VCALENDAR' },
    errors: ['not_found', 'rate_limited'],
    handler: async ({ deps, query, clientAddress, baseUrl }) => {
      const d = await limiter(deps).take(deps.key('rl', 'ics', clientAddress), FEED_REQUESTS_PER_MINUTE);
      if (!d.allowed) {
        throw new DomainError('rate_limited', `Too many calendar feed requests; retry in ${d.resetSeconds} s.`, { retryAfterSeconds: d.resetSeconds });
      }
      const organizationId = await feedOrganization(deps.db, query.token);
      const text = await feeds.feed(deps.db, organizationId, new URL(baseUrl).hostname);
      return { status: 200, raw: Buffer.from(text, 'utf8'), headers: { 'content-type': 'text/calendar; charset=utf-8',
        'cache-control': 'private, max-age=300', 'content-disposition': 'inline; filename="appointments.ics"' } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/appointments/{id}', scope: READ, tag: TAG, summary: 'Read an appointment',
    description: 'One appointment. Another organization\'s appointment is not_found. Read-only.',
    examples: { response: { data: APPOINTMENT_EXAMPLE } },
    params: IdParams,
    response: { status: 200, schema: One },
    errors: ['forbidden'],
    handler: async ({ deps, principal, params }) => {
      orgOnly(principal);
      return reply(200)(await getAppointment(deps.db, principal.organizationId, params.id));
    },
  });

  routes.add({
    method: 'POST', path: '/v1/appointments/{id}/cancel', scope: WRITE, tag: TAG, summary: 'Cancel an appointment',
    description: 'Cancels a booked appointment: its time is free again at once, and the calendar feed shows it cancelled '
      + '(STATUS:CANCELLED with a higher SEQUENCE). The body is a JSON object, {} or with a reason. Cancelling a cancelled appointment is state_conflict (fields.entity '
      + 'appointment). Honours Idempotency-Key. Needs agents:write.',
    examples: { request: { reason: 'Patient rescheduled by phone.' },
      response: { data: { ...APPOINTMENT_EXAMPLE, status: 'cancelled', cancelled_at: '2026-03-07T09:00:00.000Z', cancel_reason: 'Patient rescheduled by phone.', updated_at: '2026-03-07T09:00:00.000Z' } } },
    params: IdParams,
    body: Type.Object({ reason: Type.Optional(Type.String({ maxLength: 500, description: 'Why, for the record and the feed.' })) },
      { additionalProperties: false, description: 'A JSON object: {} or {"reason": ...}.' }),
    response: { status: 200, schema: One },
    errors: ['state_conflict', 'forbidden'],
    handler: async (ctx) => {
      orgOnly(ctx.principal);
      const r = reply(200);
      return r(await cancelAppointment(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.body.reason, ctx.idempotent(r)));
    },
  });
};
