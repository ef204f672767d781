// Monthly partitioning (migrations 040/041) against real PostgreSQL: a database as release 039 left it, holding calls,
// tickets, appointments, SMS (with an auto-reply), events and delivery attempts over several months — plus a call and
// an event whose ids are not UUIDv7, as older fixtures and workflow cancellations wrote — is migrated; every row is
// still there and readable through the API, the tables are partitioned with the old table as the legacy partition
// (its indexes attached, not rebuilt), new rows land in their month, the foreign keys hold, the partition job creates
// months ahead idempotently and rescues rows from DEFAULT, retention drops only partitions wholly past it, and the
// list query of /v1/calls is an index scan with partition pruning.
import t from 'tap';
import { migrate } from '../../infra/migrate.ts';
import { bootstrapOrganization } from '../../shared/accounts/bootstrap.ts';
import { createDb, ensureDatabase } from '../../shared/db.ts';
import { uuidv7, randomToken } from '../../shared/ids.ts';
import { dropPartitionsBefore, ensureMonthPartitions, listPartitions } from '../../shared/partitions/partitions.ts';
import { pruneOldEvents } from '../../shared/events/retention.ts';
import { DEFAULT_ALL_SCOPES } from '../../shared/scopes.ts';
import { SERVICES } from '../../workers/registry.ts';
import { testEnv } from '../helpers/env.ts';

const DAY = 86_400_000;
const url = `postgres://127.0.0.1:5432/ol_test_part_${randomToken(8).toLowerCase()}`;
await ensureDatabase(url);
const old = createDb(url, 2);
t.same((await migrate(old, { until: '039_sub_entity_agents_documents.sql' })).at(-1), '039_sub_entity_agents_documents.sql',
  'the database is at release 039');

const now = Date.now();
const utcMonth = (offset: number, day = 1) => {
  const d = new Date(now);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + offset, day));
};
// Four months of history: days 3 of the three previous months and a minute ago.
const times = [utcMonth(-3, 3), utcMonth(-2, 3), utcMonth(-1, 3), new Date(now - 60_000)];
const NOT_V7_CALL = 'f47ac10b-58cc-4372-a567-0e02b2c3d479'; // a v4 id far above every month bound
const NOT_V7_EVENT = 'e1d2c3b4-a596-4878-9a6b-5c4d3e2f1a00';

const org = await bootstrapOrganization(old, { org: 'Partition Co', scopes: [...DEFAULT_ALL_SCOPES], numbers: 1 });
const phone = await old.one<{ id: number }>('SELECT id FROM phone_numbers WHERE organization_id = $1', [org.organization_id]);

async function oldCall(id: string, at: Date) {
  const leg = { role: 'destination', number: '+14155550123', status: 'ENDED', reason: 'completed', originated_at: at.toISOString(),
    answered_at: at.toISOString(), ended_at: new Date(at.getTime() + 90_000).toISOString() };
  await old.none(
    `INSERT INTO calls (id, organization_id, api_key_id, type, direction, from_number, to_number, phone_number_id, status, call_outcome,
       picked_up, legs, channels, carrier, max_duration_seconds, ring_timeout_seconds, price_cents_per_minute, cost_cents,
       duration_seconds, originated_at, answered_at, ended_at, created_at, updated_at)
     VALUES ($1, $2, $3, 'ai', 'outbound', $4, '+14155550123', $5, 'COMPLETED', 'answered', true, $6, 1, 'sandbox', 3600, 30, 2, 4,
       90, $7, $7, $8, $7, $8)`,
    [id, org.organization_id, org.api_key_id, org.phone_numbers[0], phone.id, JSON.stringify({ destination: leg }), at,
      new Date(at.getTime() + 90_000)]);
}

const callIds = times.map((at) => uuidv7(at.getTime()));
for (const [i, at] of times.entries()) await oldCall(callIds[i], at);
await oldCall(NOT_V7_CALL, times[3]);
// Rows that reference calls: a browser ticket and an appointment booked during a call.
await old.none(`INSERT INTO call_tickets (call_id, organization_id, kind, token_hash, expires_at) VALUES ($1, $2, 'webrtc', $3, now())`,
  [callIds[1], org.organization_id, Buffer.from(randomToken(32))]);
const appointmentId = uuidv7();
await old.none(
  `INSERT INTO appointments (id, organization_id, call_id, phone_number, start_at, end_at, blocked_until, time_zone, source)
   VALUES ($1, $2, $3, '+14155550123', now() + interval '2 days', now() + interval '2 days 30 minutes', now() + interval '2 days 40 minutes',
     'UTC', 'agent')`, [appointmentId, org.organization_id, callIds[2]]);

const smsIds = times.map((at) => uuidv7(at.getTime()));
for (const [i, at] of times.entries()) {
  await old.none(
    `INSERT INTO sms_messages (id, organization_id, direction, local_number, remote_number, body, encoding, segments, status, provider,
       auto_reply_to, keyword, created_at, updated_at)
     VALUES ($1, $2, $3, $4, '+14155550123', $5, 'GSM-7', 1, $6, 'sandbox', $7, $8, $9, $9)`,
    [smsIds[i], org.organization_id, i === 1 ? 'outbound' : i === 0 ? 'inbound' : 'outbound', org.phone_numbers[0],
      i === 0 ? 'STOP' : `Message ${i}`, i === 0 ? 'received' : 'delivered', i === 1 ? smsIds[0] : null, i === 0 ? 'stop' : null, at]);
}

const eventIds = times.map((at) => uuidv7(at.getTime()));
for (const [i, at] of times.entries()) {
  // The newest event is not relayed yet; the others are.
  await old.none(`INSERT INTO events (id, organization_id, event_type, data, occurred_at, relayed_at) VALUES ($1, $2, 'call_completed', $3, $4, $5)`,
    [eventIds[i], org.organization_id, { id: callIds[i] }, at, i === 3 ? null : at]);
}
await old.none(`INSERT INTO events (id, organization_id, event_type, data, occurred_at, relayed_at)
                VALUES ($1, $2, 'workflow_contact_completed', '{}', $3, $3)`, [NOT_V7_EVENT, org.organization_id, times[2]]);

const sub = 'whsub_' + randomToken(20);
await old.none(`INSERT INTO webhook_subscriptions (id, organization_id, webhook_url, event_type, secret) VALUES ($1, $2, 'https://example.com/hook', 'call_completed', 'whsec_x')`,
  [sub, org.organization_id]);
for (const [i, at] of times.entries()) {
  await old.none(
    `INSERT INTO webhook_delivery_attempts (subscription_id, organization_id, webhook_id, event_id, event_type, attempt, outcome,
       response_status, latency_ms, attempted_at) VALUES ($1, $2, $3, $4, 'call_completed', 1, 'succeeded', 200, 12, $5)`,
    [sub, org.organization_id, `msg_${eventIds[i]}`, eventIds[i], at]);
}
const seqBefore = (await old.one<{ last: string }>('SELECT last_value::text AS last FROM events_seq_seq')).last;
const oldIndexes = await old.any<{ oid: number; relname: string }>(
  `SELECT c.oid::int AS oid, c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE x.indrelid = 'calls'::regclass ORDER BY 2`);

// ---- the migration -----------------------------------------------------------------------------------------------
t.same(await migrate(old), ['040_monthly_partitions.sql', '041_monthly_partitions_validate.sql'], '040 and 041 applied to the old database');
await old.$pool.end();
const env = await testEnv(t, { env: { DATABASE_URL: url } });
const db = env.db;
const key = org.api_key;
const nextMonth = utcMonth(1);
// A month's lower id bound, as the partitions use it: the ms timestamp, every other bit zero.
const monthBound = (d: Date) => {
  const h = d.getTime().toString(16).padStart(12, '0') + '0'.repeat(20);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};
const monthName = (table: string, d: Date) => `${table}_p${d.getUTCFullYear()}_${String(d.getUTCMonth() + 1).padStart(2, '0')}`;

t.test('every row is still there and readable through the API', async (t) => {
  for (const id of [...callIds, NOT_V7_CALL]) {
    const r = await env.request('GET', `/v1/calls/${id}`, { key });
    t.equal(r.status, 200, `call ${id}`);
    t.equal(r.body.data.id, id);
  }
  const list = await env.request('GET', '/v1/calls?limit=50', { key });
  t.equal(list.status, 200);
  t.same(new Set(list.body.data.map((c: { id: string }) => c.id)), new Set([...callIds, NOT_V7_CALL]), 'the call list has all five');
  for (const id of smsIds) {
    const r = await env.request('GET', `/v1/sms/messages/${id}`, { key });
    t.equal(r.status, 200, `sms ${id}`);
  }
  const deliveries = await env.request('GET', `/api/v1/webhook_subscriptions/${sub}/deliveries?limit=50`, { key });
  t.equal(deliveries.status, 200);
  t.same(deliveries.body.data.map((d: { event_id: string }) => d.event_id), [...eventIds].reverse(), 'the attempt log, newest first');
  const byCall = await env.request('GET', `/api/v1/webhook_subscriptions/${sub}/deliveries?call_id=${callIds[1]}`, { key });
  t.same(byCall.body.data.map((d: { event_id: string }) => d.event_id), [eventIds[1]], 'the call_id filter reads the partitioned events');
  t.same((await db.any('SELECT id FROM events ORDER BY seq')).map((r) => r.id), [...eventIds, NOT_V7_EVENT]);
  t.equal((await db.one('SELECT count(*)::int AS n FROM call_tickets')).n, 1);
  t.equal((await db.one('SELECT call_id FROM appointments WHERE id = $1', [appointmentId])).call_id, callIds[2]);
  t.equal((await db.one('SELECT auto_reply_to FROM sms_messages WHERE id = $1', [smsIds[1]])).auto_reply_to, smsIds[0]);
  // The sequence kept counting where it was, and belongs to the parent now.
  const seq = await db.one(`SELECT last_value::text AS last, (SELECT d.refobjid::regclass::text FROM pg_depend d
    WHERE d.objid = 'events_seq_seq'::regclass AND d.deptype = 'a') AS owner FROM events_seq_seq`);
  t.same(seq, { last: seqBefore, owner: 'events' });
});

t.test('the four tables are partitioned: the old table is the legacy partition, with DEFAULT and months ahead', async (t) => {
  const parts = await db.any(`SELECT p.partrelid::regclass::text AS name, p.partstrat FROM pg_partitioned_table p ORDER BY 1`);
  t.same(parts, [{ name: 'calls', partstrat: 'r' }, { name: 'events', partstrat: 'r' }, { name: 'sms_messages', partstrat: 'r' },
    { name: 'webhook_delivery_attempts', partstrat: 'r' }]);
  for (const table of ['calls', 'events', 'sms_messages', 'webhook_delivery_attempts']) {
    const names = (await listPartitions(db, table)).map((p) => p.partition);
    t.same(names, [`${table}_legacy`, ...[1, 2, 3, 4].map((m) => monthName(table, utcMonth(m))), `${table}_default`], table);
  }
  const where = await db.any(`SELECT id, tableoid::regclass::text AS part FROM calls ORDER BY id`);
  t.same(where.map((r) => r.part), ['calls_legacy', 'calls_legacy', 'calls_legacy', 'calls_legacy', 'calls_default'],
    'the history stays in the legacy partition; the non-UUIDv7 id moved to DEFAULT');
  // The old table's indexes became the partition's: the same index objects, attached to the parent's indexes.
  const now = await db.any<{ oid: number; relname: string; parent: string }>(
    `SELECT c.oid::int AS oid, c.relname, (SELECT i.inhparent::regclass::text FROM pg_inherits i WHERE i.inhrelid = c.oid) AS parent
       FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE x.indrelid = 'calls_legacy'::regclass ORDER BY 2`);
  t.same(now.map((r) => r.oid).sort(), oldIndexes.map((r) => r.oid).sort(), 'no index of the old table was rebuilt');
  t.same(now.map((r) => [r.relname, r.parent]).sort(), oldIndexes.map((r) => [`${r.relname}_legacy`, r.relname]).sort(),
    'renamed <name>_legacy, each attached to the parent index of its old name');
  // events keeps PRIMARY KEY (id) and UNIQUE (seq) on each partition.
  const eventKeys = await db.any(`SELECT conrelid::regclass::text AS rel, pg_get_constraintdef(oid) AS def FROM pg_constraint
    WHERE conrelid = $1::regclass AND contype IN ('p', 'u') ORDER BY 2`, [monthName('events', utcMonth(2))]);
  t.same(eventKeys.map((k) => k.def), ['PRIMARY KEY (id)', 'UNIQUE (seq)']);
});

t.test('ol_uuidv7() (the SQL generator workflow cancellations use) makes UUIDv7 ids of the given time', async (t) => {
  const at = new Date(Date.UTC(2026, 0, 1, 12, 30));
  const ids = await db.any<{ id: string }>('SELECT ol_uuidv7($1) AS id FROM generate_series(1, 50)', [at]);
  const hex = at.getTime().toString(16).padStart(12, '0');
  for (const { id } of ids) {
    t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    t.equal(id.replace(/-/g, '').slice(0, 12), hex);
  }
  t.equal(new Set(ids.map((r) => r.id)).size, 50, 'random beyond the timestamp');
});

t.test('new rows land in their month partition', async (t) => {
  const at = new Date(nextMonth.getTime() + 5 * DAY);
  const callId = uuidv7(at.getTime());
  await db.none(`INSERT INTO calls (id, organization_id, type, from_number, to_number, legs, channels, carrier, max_duration_seconds,
    ring_timeout_seconds, price_cents_per_minute, created_at) VALUES ($1, $2, 'ai', '+14155550100', '+14155550123', '{}', 1, 'sandbox', 60, 30, 1, $3)`,
  [callId, org.organization_id, at]);
  t.equal((await db.one('SELECT tableoid::regclass::text AS p FROM calls WHERE id = $1', [callId])).p, monthName('calls', nextMonth));
  const ev = await db.one(`INSERT INTO events (id, organization_id, event_type, data, occurred_at) VALUES ($1, $2, 'sms_sent', '{}', $3)
    RETURNING tableoid::regclass::text AS p`, [uuidv7(at.getTime()), org.organization_id, at]);
  t.equal(ev.p, monthName('events', nextMonth));
  // A new event now (the current month belongs to the legacy partition until next month).
  const cur = await db.one(`INSERT INTO events (id, organization_id, event_type, data) VALUES ($1, $2, 'sms_sent', '{}') RETURNING tableoid::regclass::text AS p`,
    [uuidv7(), org.organization_id]);
  t.equal(cur.p, 'events_legacy');
  await db.none('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE event_type = $1)', ['sms_sent']);
  await db.none('DELETE FROM calls WHERE id = $1', [callId]);
});

t.test('the foreign keys to calls hold and are validated', async (t) => {
  const fks = await db.any(`SELECT conrelid::regclass::text AS rel, convalidated FROM pg_constraint
    WHERE contype = 'f' AND confrelid = 'calls'::regclass ORDER BY 1`);
  t.same(fks, [{ rel: 'appointments', convalidated: true }, { rel: 'call_tickets', convalidated: true },
    { rel: 'spam_test_attempts', convalidated: true }], 're-pointed to the parent and validated by 041');
  await t.rejects(db.none(`INSERT INTO call_tickets (call_id, organization_id, kind, token_hash, expires_at) VALUES ($1, $2, 'room', $3, now())`,
    [uuidv7(), org.organization_id, Buffer.from(randomToken(32))]), { code: '23503' }, 'a ticket for a missing call is refused');
  await t.rejects(db.none('DELETE FROM calls WHERE id = $1', [callIds[1]]), { code: '23503' }, 'a call with a ticket cannot go');
  await t.rejects(db.none(`UPDATE sms_messages SET auto_reply_to = $1 WHERE id = $2`, [uuidv7(), smsIds[2]]), { code: '23503' },
    'the SMS self-reference holds');
});

t.test('the partition job creates months ahead idempotently and rescues rows that landed in DEFAULT', async (t) => {
  t.ok(SERVICES.some((s) => s.name === 'partition-maintenance'), 'the workers run it');
  const created = await ensureMonthPartitions(db, new Date(now), 6);
  t.same(created.sort(), ['calls', 'events', 'sms_messages', 'webhook_delivery_attempts']
    .flatMap((table) => [monthName(table, utcMonth(5)), monthName(table, utcMonth(6))]).sort(), 'months 5 and 6 ahead, once');
  t.same(await ensureMonthPartitions(db, new Date(now), 6), [], 'a second run creates nothing');

  // Workers stopped for months: a call of month 9 (with its ticket) and an event land in DEFAULT, then the job catches up.
  const far = utcMonth(9, 12);
  const callId = uuidv7(far.getTime());
  await db.none(`INSERT INTO calls (id, organization_id, type, from_number, to_number, legs, channels, carrier, max_duration_seconds,
    ring_timeout_seconds, price_cents_per_minute, created_at) VALUES ($1, $2, 'webrtc', '+14155550100', '+14155550123', '{}', 1, 'sandbox', 60, 30, 1, $3)`,
  [callId, org.organization_id, far]);
  await db.none(`INSERT INTO call_tickets (call_id, organization_id, kind, token_hash, expires_at) VALUES ($1, $2, 'webrtc', $3, now())`,
    [callId, org.organization_id, Buffer.from(randomToken(32))]);
  const eventId = uuidv7(far.getTime());
  await db.none(`INSERT INTO events (id, organization_id, event_type, data, occurred_at, relayed_at) VALUES ($1, $2, 'sms_sent', '{}', $3, $3)`,
    [eventId, org.organization_id, far]);
  t.equal((await db.one('SELECT tableoid::regclass::text AS p FROM calls WHERE id = $1', [callId])).p, 'calls_default', 'no partition yet: DEFAULT');
  const caught = await ensureMonthPartitions(db, far, 0);
  t.same(caught.sort(), ['calls', 'events', 'sms_messages', 'webhook_delivery_attempts'].map((x) => monthName(x, far)).sort());
  t.equal((await db.one('SELECT tableoid::regclass::text AS p FROM calls WHERE id = $1', [callId])).p, monthName('calls', far), 'the call moved');
  t.equal((await db.one('SELECT tableoid::regclass::text AS p FROM events WHERE id = $1', [eventId])).p, monthName('events', far), 'the event moved');
  t.equal((await db.one('SELECT count(*)::int AS n FROM call_tickets WHERE call_id = $1', [callId])).n, 1, 'its ticket still references it');
  t.same((await db.any('SELECT id FROM calls_default')).map((r) => r.id), [NOT_V7_CALL], 'DEFAULT keeps only what no month covers');
  await db.none('DELETE FROM call_tickets WHERE call_id = $1', [callId]);
  await db.none('DELETE FROM calls WHERE id = $1', [callId]);
  await db.none('DELETE FROM events WHERE id = $1', [eventId]);
});

t.test('the /v1/calls list query is an index scan, pruned to the partitions below the cursor', async (t) => {
  const plan = await db.task(async (q) => {
    await q.none('SET enable_seqscan = off'); // a handful of rows: otherwise the planner reads them sequentially
    const rows = await q.any(`EXPLAIN SELECT * FROM calls WHERE organization_id = $1 AND id < $2 ORDER BY id DESC LIMIT 21`,
      [org.organization_id, monthBound(utcMonth(2))]);
    await q.none('RESET enable_seqscan');
    return rows.map((r) => r['QUERY PLAN'] as string).join('\n');
  });
  t.match(plan, /Index Scan (Backward )?using \S+ on calls_legacy/, 'the legacy partition through an index');
  t.match(plan, new RegExp(`Index Scan (Backward )?using \\S+ on ${monthName('calls', utcMonth(1))}`), 'next month through an index');
  t.notMatch(plan, /Seq Scan/);
  for (const m of [2, 3, 4]) t.notMatch(plan, new RegExp(monthName('calls', utcMonth(m))), `month +${m} is pruned`);
});

t.test('retention drops whole partitions only when every row is past it', async (t) => {
  // As if the retention cutoff were the start of next month: the legacy partitions (everything before it) are past it.
  const attemptsDropped = await dropPartitionsBefore(db, 'webhook_delivery_attempts', nextMonth);
  t.same(attemptsDropped, ['webhook_delivery_attempts_legacy'], 'the attempts before the cutoff, as one partition');
  t.equal((await db.one('SELECT count(*)::int AS n FROM webhook_delivery_attempts')).n, 0);
  t.same(await dropPartitionsBefore(db, 'events', nextMonth), [], 'an events partition holding an event not yet relayed stays');
  t.same(await dropPartitionsBefore(db, 'events', new Date(nextMonth.getTime() - 1)), [], 'and nothing whose bound is after the cutoff');
  await db.none('UPDATE events SET relayed_at = now() WHERE relayed_at IS NULL');
  const laterEvent = uuidv7(nextMonth.getTime() + DAY);
  await db.none(`INSERT INTO events (id, organization_id, event_type, data, occurred_at, relayed_at) VALUES ($1, $2, 'sms_sent', '{}', $3, $3)`,
    [laterEvent, org.organization_id, new Date(nextMonth.getTime() + DAY)]);
  t.same(await dropPartitionsBefore(db, 'events', nextMonth), ['events_legacy'], 'once relayed, it goes');
  t.same((await db.any('SELECT id FROM events')).map((r) => r.id), [laterEvent], 'the later month stays');
  // The batch delete still works on what is left (through every partition), and the sequence survived the drop.
  t.same(await pruneOldEvents(db, 30), { events: 0, attempts: 0 });
  const seq = await db.one(`INSERT INTO events (id, organization_id, event_type, data) VALUES ($1, $2, 'sms_sent', '{}') RETURNING seq::text AS seq`,
    [uuidv7(), org.organization_id]);
  t.ok(BigInt(seq.seq) > BigInt(seqBefore), 'events.seq goes on counting after its legacy partition was dropped');
  // Calls have no retention: nothing drops them.
  t.equal((await db.one('SELECT count(*)::int AS n FROM calls')).n, 5, 'calls are kept');
});
