// A small RFC 5545 (iCalendar) serializer for the appointments feed. No iCalendar library is installed in this
// project (the issue asks for a maintained one: ical-generator would need adding to package.json); this writes only
// what the feed needs: VCALENDAR with VEVENTs in UTC, TEXT escaping (3.3.11), line folding at 75 octets without
// splitting a UTF-8 character (3.1), CRLF line ends, UID/DTSTAMP/SEQUENCE/STATUS.

export interface IcsEvent {
  uid: string;
  /** When this version of the event was made (DTSTAMP; also LAST-MODIFIED). */
  stamp: Date;
  created: Date;
  start: Date;
  end: Date;
  summary: string;
  description?: string | null;
  sequence: number;
  status: 'CONFIRMED' | 'CANCELLED';
}

export interface IcsCalendar { prodId: string; name: string; events: IcsEvent[] }

/** TEXT value escaping: backslash, semicolon, comma; newlines as \n (CR dropped). */
export const escapeText = (s: string) =>
  s.replace(/\\/g, '\\\\').replace(/;/g, '\\;').replace(/,/g, '\\,').replace(/\r\n|\r|\n/g, '\\n');

/** UTC DATE-TIME form: 20260310T133000Z. */
export const utcStamp = (d: Date) => d.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');

/** Folds a content line to at most 75 octets per physical line (continuations start with one space, which counts). */
export function foldLine(line: string): string {
  const bytes = Buffer.from(line, 'utf8');
  if (bytes.length <= 75) return line;
  const out: string[] = [];
  let start = 0;
  let limit = 75;
  while (start < bytes.length) {
    let end = Math.min(start + limit, bytes.length);
    // Never cut inside a UTF-8 sequence: back up over continuation bytes (10xxxxxx).
    while (end < bytes.length && (bytes[end] & 0xc0) === 0x80) end--;
    out.push(bytes.subarray(start, end).toString('utf8'));
    start = end;
    limit = 74;
  }
  return out.join('\r\n ');
}

export function serializeCalendar(cal: IcsCalendar): string {
  const lines: string[] = ['BEGIN:VCALENDAR', 'VERSION:2.0', `PRODID:${cal.prodId}`, 'CALSCALE:GREGORIAN', 'METHOD:PUBLISH',
    `X-WR-CALNAME:${escapeText(cal.name)}`, `NAME:${escapeText(cal.name)}`, 'REFRESH-INTERVAL;VALUE=DURATION:PT15M'];
  for (const e of cal.events) {
    lines.push('BEGIN:VEVENT', `UID:${e.uid}`, `DTSTAMP:${utcStamp(e.stamp)}`, `CREATED:${utcStamp(e.created)}`,
      `LAST-MODIFIED:${utcStamp(e.stamp)}`, `DTSTART:${utcStamp(e.start)}`, `DTEND:${utcStamp(e.end)}`, `SEQUENCE:${e.sequence}`,
      `STATUS:${e.status}`, `SUMMARY:${escapeText(e.summary)}`);
    if (e.description) lines.push(`DESCRIPTION:${escapeText(e.description)}`);
    if (e.status === 'CANCELLED') lines.push('TRANSP:TRANSPARENT');
    lines.push('END:VEVENT');
  }
  lines.push('END:VCALENDAR');
  return lines.map(foldLine).join('\r\n') + '\r\n';
}
