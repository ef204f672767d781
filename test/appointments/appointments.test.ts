// Appointments through the API: availability and its free slots (DST weeks in America/New_York), booking, listing,
// reading, cancelling, bad input with fields, another organization's key, keys lacking the scope, double booking
// under parallel requests, and the secret iCalendar feed (RFC 5545 text: folding, escaping, events, cancellation).
import t from 'tap';
import { renderFeed } from '../../shared/appointments/feed.ts';
import type { AppointmentRow } from '../../shared/appointments/schemas.ts';
import { eventually, testEnv, type TestEnv } from '../helpers/env.ts';

const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '0.01' } });
type Org = Awaited<ReturnType<TestEnv['bootstrap']>>;

const DAY = 86_400_000;
const req = (o: Org, method: string, path: string, body?: unknown, key = o.api_key) => env.request(method, path, { key, body });
const put = (o: Org, body: unknown) => req(o, 'PUT', '/v1/appointments/availability', body);
const book = (o: Org, body: unknown) => req(o, 'POST', '/v1/appointments', body);
const slots = async (o: Org, from: string, to: string) => {
  const r = await req(o, 'GET', `/v1/appointments/availability?from=${from}&to=${to}`);
  if (r.status !== 200) throw new Error(`availability: ${r.status} ${r.text}`);
  return r.body.data.slots as { start_at: string; end_at: string; local_start: string }[];
};
const WEEKDAYS_9_TO_10 = { mon: [{ start: '09:00', end: '10:00' }], tue: [{ start: '09:00', end: '10:00' }],
  wed: [{ start: '09:00', end: '10:00' }], thu: [{ start: '09:00', end: '10:00' }], fri: [{ start: '09:00', end: '10:00' }] };

/** The first weekday at least `days` ahead, as YYYY-MM-DD (UTC date; New York's 09:00 is the same date). */
function weekdayAhead(days: number): string {
  let d = new Date(Date.now() + days * DAY);
  while ([0, 6].includes(d.getUTCDay())) d = new Date(d.getTime() + DAY);
  return d.toISOString().slice(0, 10);
}

const acme = await env.bootstrap({ org: 'Acme Dental', numbers: 1 });
const other = await env.bootstrap({ org: 'Other Co', numbers: 1 });

t.test('feed text (ical-generator): escaping, folding at 75 octets, CRLF, UTC, cancelled events', async (t) => {
  const row = (over: Partial<AppointmentRow>): AppointmentRow => ({
    id: '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', organization_id: '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a00', call_id: null,
    contact_id: null, phone_number: '+14155550109', name: null, start_at: new Date('2026-03-10T13:30:00Z'),
    end_at: new Date('2026-03-10T14:00:00Z'), blocked_until: new Date('2026-03-10T14:00:00Z'), time_zone: 'America/New_York',
    status: 'booked', source: 'api', notes: null, sequence: 0, cancelled_at: null, cancel_reason: null,
    created_at: new Date('2026-03-06T15:04:05Z'), updated_at: new Date('2026-03-06T15:04:05Z'), ...over });
  const text = renderFeed('Acme, Dental; "East"\nBEGIN:VEVENT', [
    row({ name: 'Lee, Ann', notes: `a,b;c\\d\nline2\r\nline3 ${'é'.repeat(60)}${'x'.repeat(50)} 😀😀😀` }),
    row({ id: '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c', status: 'cancelled', sequence: 1, cancel_reason: 'Sick',
      updated_at: new Date('2026-03-07T08:00:00Z') }),
  ], 'api.example.com');
  t.ok(text.endsWith('END:VCALENDAR\r\n') && !/[^\r]\n|\r[^\n]/.test(text), 'every line ends CRLF, the last one too');
  const physical = text.split('\r\n').slice(0, -1);
  for (const l of physical) t.ok(Buffer.byteLength(l) <= 75, `line of ${Buffer.byteLength(l)} octets`);
  t.ok(physical.some((l) => l.startsWith(' ')), 'some lines folded');
  t.equal(Buffer.from(text, 'utf8').toString('utf8'), text, 'no character split (a lone surrogate would not survive UTF-8)');
  const lines = text.replace(/\r\n /g, '').split('\r\n');
  t.same(lines.slice(0, 3), ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Openline//Appointments 1.0//EN']);
  t.ok(lines.includes('METHOD:PUBLISH') && lines.includes('REFRESH-INTERVAL;VALUE=DURATION:PT15M'));
  t.ok(lines.includes('X-WR-CALNAME:Acme\\, Dental\\; "East"\\nBEGIN:VEVENT appointments'), 'the calendar\'s name escaped');
  t.equal(lines.filter((l) => l === 'BEGIN:VEVENT').length, 2, 'one VEVENT per appointment, none injected');
  const event = (uid: string) => { const at = lines.indexOf(`UID:${uid}@api.example.com`); return lines.slice(at, lines.indexOf('END:VEVENT', at)); };
  const booked = event('0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b');
  for (const l of ['DTSTART:20260310T133000Z', 'DTEND:20260310T140000Z', 'DTSTAMP:20260306T150405Z', 'CREATED:20260306T150405Z',
    'LAST-MODIFIED:20260306T150405Z', 'SEQUENCE:0', 'STATUS:CONFIRMED', 'SUMMARY:Appointment with Lee\\, Ann']) t.ok(booked.includes(l), l);
  t.notOk(booked.includes('TRANSP:TRANSPARENT'));
  const desc = booked.find((l) => l.startsWith('DESCRIPTION:'))!;
  t.ok(desc.startsWith(`DESCRIPTION:Phone: +14155550109\\nNotes: a\\,b\\;c\\\\d\\nline2\\nline3 ${'é'.repeat(60)}${'x'.repeat(50)} 😀😀😀\\n`), desc);
  const cancelled = event('0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c');
  for (const l of ['STATUS:CANCELLED', 'SEQUENCE:1', 'TRANSP:TRANSPARENT', 'DTSTAMP:20260307T080000Z']) t.ok(cancelled.includes(l), l);
  t.ok(cancelled.find((l) => l.startsWith('DESCRIPTION:'))!.endsWith('\\nCancelled: Sick'));
});

t.test('availability: not set yet, bad input with fields, set, read back', async (t) => {
  const none = await req(acme, 'GET', '/v1/appointments/availability');
  t.equal(none.status, 404);
  t.equal(none.body.error.code, 'not_found');
  const cases: [string, unknown, string[]][] = [
    ['unknown zone', { time_zone: 'Mars/Olympus', weekly_hours: {}, slot_minutes: 30 }, ['time_zone']],
    ['end before start', { time_zone: 'UTC', weekly_hours: { mon: [{ start: '10:00', end: '09:00' }] }, slot_minutes: 30 }, ['weekly_hours.mon[0].end']],
    ['bad time', { time_zone: 'UTC', weekly_hours: { tue: [{ start: '9am', end: '10:00' }] }, slot_minutes: 30 }, ['weekly_hours.tue[0].start']],
    ['overlapping intervals', { time_zone: 'UTC', weekly_hours: { wed: [{ start: '09:00', end: '12:00' }, { start: '11:00', end: '13:00' }] }, slot_minutes: 30 },
      ['weekly_hours.wed[1].start']],
    ['shorter than a slot', { time_zone: 'UTC', weekly_hours: { thu: [{ start: '09:00', end: '09:20' }] }, slot_minutes: 30 }, ['weekly_hours.thu[0].end']],
    ['unknown day', { time_zone: 'UTC', weekly_hours: { funday: [] }, slot_minutes: 30 }, ['weekly_hours']],
    ['slot too short', { time_zone: 'UTC', weekly_hours: {}, slot_minutes: 1 }, ['slot_minutes']],
    ['missing zone', { weekly_hours: {}, slot_minutes: 30 }, ['time_zone']],
  ];
  for (const [name, body, fields] of cases) {
    const r = await put(acme, body);
    t.equal(r.status, 400, `${name}: 400`);
    t.equal(r.body.error?.code, 'validation_error', name);
    for (const f of fields) t.ok(Object.keys(r.body.error?.fields ?? {}).some((k) => k.startsWith(f)), `${name}: fields name ${f} (${JSON.stringify(r.body.error?.fields)})`);
  }
  const r = await put(acme, { time_zone: 'America/New_York', weekly_hours: { ...WEEKDAYS_9_TO_10, sun: [] }, slot_minutes: 30, buffer_minutes: 10, max_days_ahead: 365 });
  t.equal(r.status, 200, r.text);
  t.match(r.body.data, { time_zone: 'America/New_York', slot_minutes: 30, buffer_minutes: 10, max_days_ahead: 365, calendar_feed: { enabled: false, rotated_at: null } });
  t.same(Object.keys(r.body.data.weekly_hours), ['mon', 'tue', 'wed', 'thu', 'fri'], 'closed days left out');
  const read = await req(acme, 'GET', '/v1/appointments/availability');
  t.equal(read.status, 200);
  t.ok(read.body.data.slots.length > 0, 'slots in the next 7 days');
  t.ok(read.body.data.slots.every((s: any) => Date.parse(s.start_at) > Date.now()), 'none in the past');
  const bad = await req(acme, 'GET', '/v1/appointments/availability?from=2027-01-01T00:00:00Z&to=2027-03-01T00:00:00Z');
  t.equal(bad.status, 400);
  t.ok(bad.body.error.fields.to, 'a range over 31 days names to');
});

t.test('DST: 09:00 stays 09:00 local across spring-forward and fall-back; skipped local times have no slot', async (t) => {
  // US spring-forward 2027-03-14 (Sunday 02:00 → 03:00), fall-back 2027-11-07 (Sunday 02:00 → 01:00).
  await put(acme, { time_zone: 'America/New_York', weekly_hours: { ...WEEKDAYS_9_TO_10, sun: [{ start: '01:00', end: '04:00' }] },
    slot_minutes: 30, buffer_minutes: 10, max_days_ahead: 365 });
  const march = await slots(acme, '2027-03-12T00:00:00Z', '2027-03-16T00:00:00Z');
  t.same(march.map((s) => s.start_at), [
    '2027-03-12T14:00:00.000Z', '2027-03-12T14:30:00.000Z', // Friday, EST (UTC-5)
    '2027-03-14T06:00:00.000Z', '2027-03-14T06:30:00.000Z', // Sunday 01:00, 01:30 EST
    '2027-03-14T07:00:00.000Z', '2027-03-14T07:30:00.000Z', // 03:00, 03:30 EDT: 02:00 and 02:30 do not exist
    '2027-03-15T13:00:00.000Z', '2027-03-15T13:30:00.000Z', // Monday, EDT (UTC-4)
  ]);
  t.same(march.map((s) => s.local_start), ['2027-03-12T09:00:00-05:00', '2027-03-12T09:30:00-05:00', '2027-03-14T01:00:00-05:00',
    '2027-03-14T01:30:00-05:00', '2027-03-14T03:00:00-04:00', '2027-03-14T03:30:00-04:00', '2027-03-15T09:00:00-04:00', '2027-03-15T09:30:00-04:00']);
  t.ok(march.every((s) => Date.parse(s.end_at) - Date.parse(s.start_at) === 30 * 60_000), '30 real minutes each');
  const nov = await slots(acme, '2027-11-05T00:00:00Z', '2027-11-09T00:00:00Z');
  t.same(nov.map((s) => s.local_start), ['2027-11-05T09:00:00-04:00', '2027-11-05T09:30:00-04:00',
    // Sunday: 01:00 and 01:30 happen twice; each slot is offered once (the first, EDT); 02:00 onwards is EST.
    '2027-11-07T01:00:00-04:00', '2027-11-07T01:30:00-04:00', '2027-11-07T02:00:00-05:00', '2027-11-07T02:30:00-05:00',
    '2027-11-07T03:00:00-05:00', '2027-11-07T03:30:00-05:00',
    '2027-11-08T09:00:00-05:00', '2027-11-08T09:30:00-05:00']);
  t.equal(nov[nov.length - 2].start_at, '2027-11-08T14:00:00.000Z', 'Monday 09:00 EST is 14:00 UTC');

  // A booking in the DST week takes its slot and the buffer; the slot after stays free only past the buffer.
  const b = await book(acme, { start_at: '2027-03-15T13:00:00Z', phone_number: '+14155550123' });
  t.equal(b.status, 201, b.text);
  t.match(b.body.data, { status: 'booked', source: 'api', start_at: '2027-03-15T13:00:00.000Z', end_at: '2027-03-15T13:30:00.000Z',
    time_zone: 'America/New_York', local_start: '2027-03-15T09:00:00-04:00' });
  const after = await slots(acme, '2027-03-15T00:00:00Z', '2027-03-16T00:00:00Z');
  t.same(after.map((s) => s.start_at), [], '09:00 booked, 09:30 inside its 10-minute buffer');
  const inBuffer = await book(acme, { start_at: '2027-03-15T13:30:00Z', phone_number: '+14155550124' });
  t.equal(inBuffer.status, 409);
  t.equal(inBuffer.body.error.code, 'slot_unavailable');
  t.ok(inBuffer.body.error.fields.start_at);
});

t.test('booking: bad input with fields, nothing written; contact fills the person; new_appointment in the outbox', async (t) => {
  const day = weekdayAhead(3);
  const before = (await env.db.one('SELECT count(*)::int AS n FROM appointments')).n;
  const cases: [string, unknown, string[]][] = [
    ['not a slot start', { start_at: `${day}T14:10:00Z`, phone_number: '+14155550123' }, ['start_at']],
    ['outside the hours', { start_at: `${day}T20:00:00Z`, phone_number: '+14155550123' }, ['start_at']],
    ['in the past', { start_at: '2025-03-10T13:00:00Z', phone_number: '+14155550123' }, ['start_at']],
    ['not a date', { start_at: 'tomorrow', phone_number: '+14155550123' }, ['start_at']],
    ['no person', { start_at: `${day}T14:00:00Z` }, ['phone_number']],
    ['bad number', { start_at: `${day}T14:00:00Z`, phone_number: '555-0123' }, ['phone_number']],
    ['foreign contact', { start_at: `${day}T14:00:00Z`, contact_id: '01900000-0000-7000-8000-000000000000' }, ['contact_id']],
    ['unknown call', { start_at: `${day}T14:00:00Z`, phone_number: '+14155550123', call_id: '01900000-0000-7000-8000-000000000000' }, ['call_id']],
    ['unknown field', { start_at: `${day}T14:00:00Z`, phone_number: '+14155550123', when: 'now' }, ['when']],
    ['bad source', { start_at: `${day}T14:00:00Z`, phone_number: '+14155550123', source: 'agent' }, ['source']],
  ];
  for (const [name, body, fields] of cases) {
    const r = await book(acme, body);
    t.equal(r.status, 400, `${name}: 400 (${r.text})`);
    t.equal(r.body.error?.code, 'validation_error', name);
    for (const f of fields) t.ok(Object.keys(r.body.error?.fields ?? {}).some((k) => k.startsWith(f)), `${name}: fields name ${f} (${JSON.stringify(r.body.error?.fields)})`);
  }
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM appointments')).n, before, 'nothing written');

  const contact = await req(acme, 'POST', '/v1/contacts', { phone_number: '+14155550177', name: 'Dana Reyes' });
  t.equal(contact.status, 201, contact.text);
  // New York is UTC-5 in winter, UTC-4 in summer: ask the availability for the day's first slot.
  const [first] = await slots(acme, `${day}T00:00:00Z`, `${day}T23:59:00Z`);
  const r = await book(acme, { start_at: first.start_at, contact_id: contact.body.data.id, notes: 'First visit, bring X-rays.' });
  t.equal(r.status, 201, r.text);
  t.match(r.body.data, { contact_id: contact.body.data.id, phone_number: '+14155550177', name: 'Dana Reyes', source: 'api', call_id: null });
  const ev = await env.db.one(`SELECT data FROM events WHERE event_type = 'new_appointment' AND data->>'id' = $1`, [r.body.data.id]);
  t.match(ev.data, { ...r.body.data, organization_id: acme.organization_id }, 'new_appointment carries the appointment');
  const got = await req(acme, 'GET', `/v1/appointments/${r.body.data.id}`);
  t.same(got.body.data, r.body.data);
});

t.test('double booking is impossible: parallel requests for one slot, one wins', async (t) => {
  const day = weekdayAhead(10);
  const [slot] = await slots(acme, `${day}T00:00:00Z`, `${day}T23:59:00Z`);
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) =>
    book(acme, { start_at: slot.start_at, phone_number: `+1415555${String(1000 + i)}` })));
  const statuses = answers.map((a) => a.status).sort();
  t.same(statuses, [201, ...Array(11).fill(409)], `one 201, the rest 409 (${statuses})`);
  t.ok(answers.filter((a) => a.status === 409).every((a) => a.body.error.code === 'slot_unavailable'));
  const n = await env.db.one(`SELECT count(*)::int AS n FROM appointments WHERE organization_id = $1 AND status = 'booked' AND start_at = $2`,
    [acme.organization_id, slot.start_at]);
  t.equal(n.n, 1, 'one row booked');
  t.equal((await env.db.one(`SELECT count(*)::int AS n FROM events WHERE event_type = 'new_appointment' AND data->>'start_at' = $1`,
    [new Date(slot.start_at).toISOString()])).n, 1, 'one new_appointment');
  // Even a direct insert past the API is refused by the constraint.
  await t.rejects(env.db.none(`INSERT INTO appointments (id, organization_id, start_at, end_at, blocked_until, time_zone, source)
    VALUES (gen_random_uuid(), $1, $2::timestamptz + interval '5 minutes', $2::timestamptz + interval '35 minutes', $2::timestamptz + interval '45 minutes', 'UTC', 'api')`,
  [acme.organization_id, slot.start_at]), /appointments_organization_id_tstzrange_excl|conflicting key/);
  // Another organization books the same time freely.
  await put(other, { time_zone: 'America/New_York', weekly_hours: WEEKDAYS_9_TO_10, slot_minutes: 30 });
  t.equal((await book(other, { start_at: slot.start_at, phone_number: '+14155550999' })).status, 201);
});

t.test('list: filters, cursor paging; cancel frees the slot; state_conflict on a second cancel', async (t) => {
  const all = await req(acme, 'GET', '/v1/appointments?limit=2');
  t.equal(all.status, 200);
  t.equal(all.body.data.length, 2);
  t.ok(all.body.meta.cursor);
  const next = await req(acme, 'GET', `/v1/appointments?limit=2&cursor=${encodeURIComponent(all.body.meta.cursor)}`);
  t.equal(next.body.data.length, 1, 'three bookings in all');
  const ids = [...all.body.data, ...next.body.data].map((a: any) => a.id);
  t.same(ids, [...ids].sort().reverse(), 'newest first');
  const march = await req(acme, 'GET', '/v1/appointments?from=2027-03-01T00:00:00Z&to=2027-04-01T00:00:00Z');
  t.same(march.body.data.map((a: any) => a.start_at), ['2027-03-15T13:00:00.000Z'], 'from/to bound start_at');
  const target = march.body.data[0];

  const c = await req(acme, 'POST', `/v1/appointments/${target.id}/cancel`, { reason: 'Rescheduled; will call back.' });
  t.equal(c.status, 200, c.text);
  t.match(c.body.data, { status: 'cancelled', cancel_reason: 'Rescheduled; will call back.' });
  t.ok(c.body.data.cancelled_at);
  const again = await req(acme, 'POST', `/v1/appointments/${target.id}/cancel`, {});
  t.equal(again.status, 409);
  t.same(again.body.error.fields, { entity: 'appointment', status: 'cancelled' });
  t.same((await slots(acme, '2027-03-15T00:00:00Z', '2027-03-16T00:00:00Z')).map((s) => s.start_at),
    ['2027-03-15T13:00:00.000Z', '2027-03-15T13:30:00.000Z'], 'the slot and the one in its buffer are free again');
  t.same((await req(acme, 'GET', '/v1/appointments?status=cancelled')).body.data.map((a: any) => a.id), [target.id]);
  t.equal((await req(acme, 'GET', '/v1/appointments?status=booked')).body.data.length, 2);
  const bad = await req(acme, 'GET', '/v1/appointments?from=yesterday&status=maybe');
  t.equal(bad.status, 400);
  t.ok(bad.body.error.fields.from && bad.body.error.fields.status, JSON.stringify(bad.body.error.fields));
  t.equal((await req(acme, 'GET', '/v1/appointments?call_id=nope')).status, 400);
});

t.test('another organization\'s key: 404 and nothing leaks; keys lacking the scope: 403 scope_missing', async (t) => {
  const mine = (await req(acme, 'GET', '/v1/appointments?status=booked')).body.data[0];
  for (const [method, path, body] of [['GET', `/v1/appointments/${mine.id}`], ['POST', `/v1/appointments/${mine.id}/cancel`, {}]] as const) {
    const r = await req(other, method, path, body);
    t.equal(r.status, 404, `${method} ${path}: 404`);
    t.equal(r.body.error.code, 'not_found');
    t.notOk(r.text.includes(mine.phone_number), 'nothing of it in the answer');
  }
  t.equal((await req(acme, 'GET', `/v1/appointments/${mine.id}`)).body.data.status, 'booked', 'still booked');
  const theirs = (await req(other, 'GET', '/v1/appointments')).body.data;
  t.ok(theirs.length === 1 && theirs.every((a: any) => a.id !== mine.id), 'their list holds only theirs');
  t.same((await req(other, 'GET', `/v1/appointments?call_id=${'01900000-0000-7000-8000-000000000000'}`)).body.data, []);

  const readOnly = await env.createKey({ organizationId: acme.organization_id, userId: null, scopes: ['bookings:read'] });
  const noScope = await env.createKey({ organizationId: acme.organization_id, userId: null, scopes: ['calls:read', 'agents:read'] });
  const writes: [string, string, unknown][] = [
    ['PUT', '/v1/appointments/availability', { time_zone: 'UTC', weekly_hours: {}, slot_minutes: 30 }],
    ['POST', '/v1/appointments', { start_at: '2027-03-15T13:00:00Z', phone_number: '+14155550123' }],
    ['POST', `/v1/appointments/${mine.id}/cancel`, {}],
    ['POST', '/v1/appointments/calendar-feed', undefined],
  ];
  for (const [method, path, body] of writes) {
    const r = await req(acme, method, path, body, readOnly.apiKey);
    t.equal(r.status, 403, `bookings:read only: ${method} ${path} 403`);
    t.equal(r.body.error.code, 'scope_missing');
  }
  for (const path of ['/v1/appointments', `/v1/appointments/${mine.id}`, '/v1/appointments/availability']) {
    t.equal((await req(acme, 'GET', path, undefined, readOnly.apiKey)).status, 200, `bookings:read reads ${path}`);
    const r = await req(acme, 'GET', path, undefined, noScope.apiKey);
    t.equal(r.status, 403, `no bookings:read: ${path} 403`);
    t.equal(r.body.error.code, 'scope_missing');
  }
});

t.test('iCalendar feed: secret URL, RFC 5545 text, cancelled events, rotation, wrong secrets 404, rate limit', async (t) => {
  const day = weekdayAhead(20);
  const [slot] = await slots(acme, `${day}T00:00:00Z`, `${day}T23:59:00Z`);
  const notes = 'Bring: X-rays, insurance card; ask about \\ the crown.\nSecond line — ünïcödé text that is long enough to need folding twice over.';
  const b = await book(acme, { start_at: slot.start_at, phone_number: '+14155550142', name: 'Lee, Ann', notes });
  t.equal(b.status, 201, b.text);

  const made = await req(acme, 'POST', '/v1/appointments/calendar-feed');
  t.equal(made.status, 201, made.text);
  const url: string = made.body.data.url;
  t.ok(url.startsWith(`${env.url}/v1/appointments/calendar.ics?token=olcal_`), url);
  t.equal((await req(acme, 'GET', '/v1/appointments/availability')).body.data.calendar_feed.enabled, true);
  const path = url.slice(env.url.length);
  const feed = await env.request('GET', path);
  t.equal(feed.status, 200, feed.text);
  t.match(feed.headers['content-type'], /^text\/calendar/);
  const text = feed.text;
  t.ok(text.endsWith('\r\n') && !/[^\r]\n/.test(text), 'every line ends CRLF');
  const physical = text.split('\r\n').slice(0, -1);
  t.ok(physical.every((l) => Buffer.byteLength(l) <= 75), 'no line over 75 octets');
  const lines = text.replace(/\r\n /g, '').split('\r\n');
  t.equal(lines[0], 'BEGIN:VCALENDAR');
  t.ok(lines.includes('VERSION:2.0') && lines.some((l) => l.startsWith('PRODID:')));
  t.equal(lines.filter((l) => l === 'BEGIN:VEVENT').length, 4, 'every appointment of the organization (booked and cancelled)');
  const stamp = (iso: string) => iso.replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const at = lines.indexOf(`UID:${b.body.data.id}@127.0.0.1`);
  t.ok(at > 0, 'the booking\'s UID');
  const event = lines.slice(at, lines.indexOf('END:VEVENT', at));
  t.ok(event.includes(`DTSTART:${stamp(b.body.data.start_at)}`), 'DTSTART in UTC');
  t.ok(event.includes(`DTEND:${stamp(b.body.data.end_at)}`), 'DTEND in UTC');
  t.ok(event.includes('STATUS:CONFIRMED') && event.includes('SEQUENCE:0') && event.some((l) => /^DTSTAMP:\d{8}T\d{6}Z$/.test(l)));
  t.ok(event.includes('SUMMARY:Appointment with Lee\\, Ann'), 'comma escaped');
  const desc = event.find((l) => l.startsWith('DESCRIPTION:'))!;
  t.ok(desc.includes('Bring: X-rays\\, insurance card\\; ask about \\\\ the crown.\\nSecond line — ünïcödé'), desc);
  const cancelled = lines.indexOf(`UID:${(await req(acme, 'GET', '/v1/appointments?status=cancelled')).body.data[0].id}@127.0.0.1`);
  const ce = lines.slice(cancelled, lines.indexOf('END:VEVENT', cancelled));
  t.ok(ce.includes('STATUS:CANCELLED') && ce.includes('SEQUENCE:1'), 'the cancelled one says so with a higher SEQUENCE');
  t.equal(lines.filter((l) => l === 'END:VCALENDAR').length, 1);

  // Each gateway caches the rendered feed until the appointments change: the same text while nothing changed, and a
  // cancellation shows at the next fetch.
  t.equal((await env.request('GET', path)).text, text, 'an unchanged feed is the same text');
  t.equal((await req(acme, 'POST', `/v1/appointments/${b.body.data.id}/cancel`, {})).status, 200);
  const after = (await env.request('GET', path)).text.replace(/\r\n /g, '').split('\r\n');
  const again = after.slice(after.indexOf(`UID:${b.body.data.id}@127.0.0.1`));
  t.ok(again.slice(0, again.indexOf('END:VEVENT')).includes('STATUS:CANCELLED'), 'the cancellation is in the next fetch');

  t.equal((await env.request('GET', `${path}x`)).status, 404, 'a longer token');
  t.equal((await env.request('GET', path.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a')))).status, 404, 'one character off');
  t.equal((await env.request('GET', '/v1/appointments/calendar.ics?token=olcal_nope')).status, 404, 'malformed');
  t.equal((await env.request('GET', '/v1/appointments/calendar.ics')).status, 400, 'no token');
  // The other organization's id with acme's secret: 404.
  const foreign = path.replace(acme.organization_id.replace(/-/g, ''), other.organization_id.replace(/-/g, ''));
  t.equal((await env.request('GET', foreign)).status, 404, 'another organization\'s id with this secret');
  const rotated = await req(acme, 'POST', '/v1/appointments/calendar-feed');
  t.not(rotated.body.data.url, url);
  t.equal((await env.request('GET', path)).status, 404, 'the old URL stops working');
  const fresh = rotated.body.data.url.slice(env.url.length);
  t.equal((await env.request('GET', fresh)).status, 200);

  // The public feed is rate-limited per client address.
  const limited = await eventually(async () => {
    const r = await env.request('GET', fresh);
    return r.status === 429 ? r : null;
  }, 30_000, 0);
  t.equal(limited.body.error.code, 'rate_limited');
  t.ok(Number(limited.headers['retry-after']) > 0, 'Retry-After');
});
