// The organization's iCalendar feed: a secret URL that calendar apps subscribe to without credentials. The token
// names its organization (olcal_<organization id, 32 hex><secret, 32 base62>); only its SHA-256 is stored, and the
// presented token is checked by one row read and a constant-time comparison of the hashes. A wrong, malformed or
// rotated-away token is not_found, the same answer as an organization without a feed. The RFC 5545 text is written by
// ical-generator (TEXT escaping, folding at 75 octets without splitting a character, CRLF, UTC date-times).
import { timingSafeEqual } from 'node:crypto';
import ical, { escape, ICalCalendarMethod, ICalEventStatus, ICalEventTransparency, type ICalEventData } from 'ical-generator';
import type { Db } from '../db.ts';
import { notFound } from '../errors.ts';
import { randomToken, sha256 } from '../ids.ts';
import type { AppointmentRow } from './schemas.ts';

export const FEED_PREFIX = 'olcal_';
const TOKEN = /^olcal_([0-9a-f]{32})([0-9A-Za-z]{32})$/;
/** What the feed carries: appointments that started at most this long ago, and everything after. */
export const FEED_PAST_DAYS = 90;
/** The latest this many of them (ical-generator folds lines slowly: ~0.2-0.45 ms of the gateway's thread per event). */
export const FEED_MAX_EVENTS = 1000;
/** Rendered feeds a gateway keeps (FeedCache). */
const FEED_CACHE_ENTRIES = 100;

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

/** Rendered feeds by organization, each valid while its version (the organization's name, and the count and latest
 *  change of the appointments in the window) is unchanged: a calendar app polling an unchanged feed costs one small
 *  query, not a render. One per gateway; the least recently rendered entry goes first. */
export class FeedCache {
  private readonly entries = new Map<string, { version: string; text: string }>();

  /** The feed's text for the organization's appointments: booked and cancelled, from FEED_PAST_DAYS ago on, the
   *  latest FEED_MAX_EVENTS of them. */
  async feed(db: Db, organizationId: string, host: string): Promise<string> {
    const v = await db.one<{ name: string; n: number; changed: Date | null }>(
      `SELECT o.name, count(a.id)::int AS n, max(a.updated_at) AS changed
         FROM organizations o LEFT JOIN appointments a
           ON a.organization_id = o.id AND a.start_at >= now() - make_interval(days => $2)
        WHERE o.id = $1 GROUP BY o.name`, [organizationId, FEED_PAST_DAYS]);
    const version = JSON.stringify([v.name, v.n, v.changed?.getTime() ?? 0, host]);
    const hit = this.entries.get(organizationId);
    if (hit?.version === version) return hit.text;
    const rows = await db.any<AppointmentRow>(
      `SELECT * FROM (SELECT * FROM appointments WHERE organization_id = $1 AND start_at >= now() - make_interval(days => $2)
        ORDER BY start_at DESC, id DESC LIMIT $3) latest ORDER BY start_at, id`, [organizationId, FEED_PAST_DAYS, FEED_MAX_EVENTS]);
    const text = renderFeed(v.name, rows, host);
    this.entries.delete(organizationId);
    this.entries.set(organizationId, { version, text });
    if (this.entries.size > FEED_CACHE_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    return text;
  }
}

/** PRODID:-//Openline//Appointments 1.0//EN (the library writes the leading '-'). */
export const FEED_PRODID = { company: 'Openline', product: 'Appointments 1.0', language: 'EN' };

/** The VCALENDAR text: the calendar's name and refresh interval, one VEVENT per row. */
export function renderFeed(organizationName: string, rows: AppointmentRow[], host: string): string {
  const calendar = ical({
    prodId: FEED_PRODID, method: ICalCalendarMethod.PUBLISH, scale: 'GREGORIAN',
    // ical-generator writes NAME and X-WR-CALNAME as given, unescaped (only event properties are escaped), and an
    // organization's name is its own input: escaped here as the TEXT it is, so a comma, semicolon or newline in it
    // stays inside the value.
    name: escape(`${organizationName} appointments`, false),
    ttl: 15 * 60, // REFRESH-INTERVAL and X-PUBLISHED-TTL: PT15M
  });
  for (const a of rows) calendar.createEvent(icsEvent(a, host));
  // The library ends its last line (END:VCALENDAR) without a line break; RFC 5545 3.1 ends every content line CRLF.
  return `${calendar.toString()}\r\n`;
}

export function icsEvent(a: AppointmentRow, host: string): ICalEventData {
  const who = a.name ?? a.phone_number ?? 'a contact';
  const description = [
    a.phone_number ? `Phone: ${a.phone_number}` : null,
    a.notes ? `Notes: ${a.notes}` : null,
    a.call_id ? `Booked during call ${a.call_id}` : null,
    `Booked by: ${a.source}`,
    a.cancel_reason ? `Cancelled: ${a.cancel_reason}` : null,
  ].filter(Boolean).join('\n');
  const cancelled = a.status === 'cancelled';
  // No time zone on the calendar or the event: ical-generator writes every date-time in UTC (20260310T133000Z).
  return {
    id: `${a.id}@${host}`, stamp: a.updated_at, created: a.created_at, lastModified: a.updated_at,
    start: a.start_at, end: a.end_at, summary: `Appointment with ${who}`, description, sequence: a.sequence,
    status: cancelled ? ICalEventStatus.CANCELLED : ICalEventStatus.CONFIRMED,
    transparency: cancelled ? ICalEventTransparency.TRANSPARENT : null,
  };
}
