// The organization's iCalendar feed: a secret URL that calendar apps subscribe to without credentials. The token
// names its organization (olcal_<organization id, 32 hex><secret, 32 base62>); only its SHA-256 is stored, and the
// presented token is checked by one row read and a constant-time comparison of the hashes. A wrong, malformed or
// rotated-away token is not_found, the same answer as an organization without a feed.
import { timingSafeEqual } from 'node:crypto';
import type { Db } from '../db.ts';
import { notFound } from '../errors.ts';
import { randomToken, sha256 } from '../ids.ts';
import type { AppointmentRow } from './schemas.ts';
import { serializeCalendar, type IcsEvent } from './ical.ts';

export const FEED_PREFIX = 'olcal_';
const TOKEN = /^olcal_([0-9a-f]{32})([0-9A-Za-z]{32})$/;
/** What the feed carries: appointments that started at most this long ago, and everything after. */
export const FEED_PAST_DAYS = 90;
export const FEED_MAX_EVENTS = 5000;

export const feedUrl = (baseUrl: string, token: string) => `${baseUrl}/v1/appointments/calendar.ics?token=${token}`;

/** Makes (or replaces) the organization's feed token; the old URL stops working at once. */
export async function rotateFeed(db: Db, organizationId: string): Promise<{ token: string; rotated_at: Date }> {
  const token = `${FEED_PREFIX}${organizationId.replace(/-/g, '').toLowerCase()}${randomToken(32)}`;
  const row = await db.one<{ rotated_at: Date }>(
    `INSERT INTO appointment_feeds (organization_id, token_hash) VALUES ($1, $2)
     ON CONFLICT (organization_id) DO UPDATE SET token_hash = EXCLUDED.token_hash, rotated_at = now() RETURNING rotated_at`,
    [organizationId, sha256(token)]);
  return { token, rotated_at: row.rotated_at };
}

export const feedState = (db: Db, organizationId: string) =>
  db.oneOrNone<{ rotated_at: Date }>('SELECT rotated_at FROM appointment_feeds WHERE organization_id = $1', [organizationId]);

/** The organization a feed token belongs to; not_found for anything else. */
export async function feedOrganization(db: Db, token: string): Promise<string> {
  const m = TOKEN.exec(token);
  const h = m ? m[1] : '';
  const organizationId = m ? `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}` : null;
  const row = organizationId
    ? await db.oneOrNone<{ token_hash: Buffer }>('SELECT token_hash FROM appointment_feeds WHERE organization_id = $1', [organizationId])
    : null;
  // Compared even when there is no row (against a hash of nothing), so the work does not depend on what exists.
  const presented = sha256(token);
  const stored = row?.token_hash ?? sha256('');
  if (!timingSafeEqual(presented, stored) || !row) throw notFound('Calendar feed');
  return organizationId!;
}

/** The feed's text for the organization's appointments: booked and cancelled, from FEED_PAST_DAYS ago on. */
export async function feedCalendar(db: Db, organizationId: string, host: string): Promise<string> {
  const org = await db.one<{ name: string }>('SELECT name FROM organizations WHERE id = $1', [organizationId]);
  const rows = await db.any<AppointmentRow>(
    `SELECT * FROM appointments WHERE organization_id = $1 AND start_at >= now() - make_interval(days => $2)
      ORDER BY start_at, id LIMIT $3`, [organizationId, FEED_PAST_DAYS, FEED_MAX_EVENTS]);
  return serializeCalendar({
    prodId: '-//Openline//Appointments 1.0//EN',
    name: `${org.name} appointments`,
    events: rows.map((a) => icsEvent(a, host)),
  });
}

export function icsEvent(a: AppointmentRow, host: string): IcsEvent {
  const who = a.name ?? a.phone_number ?? 'a contact';
  const description = [
    a.phone_number ? `Phone: ${a.phone_number}` : null,
    a.notes ? `Notes: ${a.notes}` : null,
    a.call_id ? `Booked during call ${a.call_id}` : null,
    `Booked by: ${a.source}`,
    a.cancel_reason ? `Cancelled: ${a.cancel_reason}` : null,
  ].filter(Boolean).join('\n');
  return {
    uid: `${a.id}@${host}`, stamp: a.updated_at, created: a.created_at, start: a.start_at, end: a.end_at,
    summary: `Appointment with ${who}`, description, sequence: a.sequence, status: a.status === 'cancelled' ? 'CANCELLED' : 'CONFIRMED',
  };
}
