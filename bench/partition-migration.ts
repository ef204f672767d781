// What migration 040 (monthly partitions) costs on a database holding data: `npm run bench:partition-migration`.
// Prints figures; asserts nothing.
//
// A database of its own at release 039 is filled over the last 12 months (BENCH_CALLS calls, default 200,000, with
// as many SMS; four events and one delivery attempt per call), analyzed, then migrated to the end. Printed: the
// tables' sizes, how long 040 held its lock (its whole transaction: the ACCESS EXCLUSIVE locks on the four tables
// last until it commits) and how long 041 (validating the foreign keys to calls, without blocking writes) took.
import { loadavg } from 'node:os';
import { migrate } from '../infra/migrate.ts';
import { bootstrapOrganization } from '../shared/accounts/bootstrap.ts';
import { createDb, dropDatabase, ensureDatabase } from '../shared/db.ts';
import { randomToken } from '../shared/ids.ts';
import { DEFAULT_ALL_SCOPES } from '../shared/scopes.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 200_000);
const base = process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/postgres';
const u = new URL(base);
u.pathname = `/ol_bench_partitions_${randomToken(6).toLowerCase()}`;
const url = u.toString();
await ensureDatabase(url);
const db = createDb(url, 2);
try {
  await migrate(db, { until: '039_sub_entity_agents_documents.sql' });
  const org = await bootstrapOrganization(db, { org: 'Bench Co', scopes: [...DEFAULT_ALL_SCOPES], numbers: 1 });
  const t0 = Date.now();
  // Spread over the last 12 months; UUIDv7 ids of their creation time (ol_uuidv7 comes with 040, so inline here).
  const v7 = (at: string) => `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send(floor(extract(epoch FROM ${at}) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid`;
  const at = `now() - (g * (365 * 86400 / ${CALLS}::float8)) * interval '1 second'`;
  await db.none(
    `INSERT INTO calls (id, organization_id, type, direction, from_number, to_number, status, call_outcome, picked_up, legs, channels, carrier,
       max_duration_seconds, ring_timeout_seconds, price_cents_per_minute, cost_cents, duration_seconds, created_at, updated_at, ended_at, transcript)
     SELECT ${v7('c.at')}, $1, 'ai', 'outbound', $2, '+1415555' || lpad((g % 10000)::text, 4, '0'), 'COMPLETED', 'answered', true,
       '{"destination": {"role": "destination", "status": "ENDED", "reason": "completed"}}', 1, 'sandbox', 3600, 30, 2, 4, 90, c.at, c.at, c.at,
       '[{"role": "agent", "text": "Hello, this is the clinic calling about your appointment."}, {"role": "user", "text": "Yes, thanks."}]'
       FROM generate_series(1, $3) g, LATERAL (SELECT ${at} AS at) c`, [org.organization_id, org.phone_numbers[0], CALLS]);
  await db.none(
    `INSERT INTO sms_messages (id, organization_id, direction, local_number, remote_number, body, encoding, segments, status, provider, created_at, updated_at)
     SELECT ${v7('c.at')}, $1, 'outbound', $2, '+1415555' || lpad((g % 10000)::text, 4, '0'), 'Your appointment is tomorrow at 10:00.', 'GSM-7', 1,
       'delivered', 'sandbox', c.at, c.at FROM generate_series(1, $3) g, LATERAL (SELECT ${at} AS at) c`, [org.organization_id, org.phone_numbers[0], CALLS]);
  await db.none(
    `INSERT INTO events (id, organization_id, event_type, data, occurred_at, relayed_at)
     SELECT ${v7('c.at')}, $1, 'call_completed', jsonb_build_object('id', gen_random_uuid(), 'status', 'COMPLETED'), c.at, c.at
       FROM generate_series(1, $2 * 4) g, LATERAL (SELECT now() - (g * (365 * 86400 / ($2 * 4)::float8)) * interval '1 second' AS at) c`,
    [org.organization_id, CALLS]);
  await db.none(`INSERT INTO webhook_subscriptions (id, organization_id, webhook_url, event_type, secret)
                 VALUES ('whsub_bench', $1, 'https://example.com/h', 'call_completed', 'whsec_x')`, [org.organization_id]);
  await db.none(
    `INSERT INTO webhook_delivery_attempts (subscription_id, organization_id, webhook_id, event_id, event_type, attempt, outcome, response_status,
       latency_ms, attempted_at)
     SELECT 'whsub_bench', $1, 'msg_' || g, gen_random_uuid(), 'call_completed', 1, 'succeeded', 200, 12, c.at
       FROM generate_series(1, $2) g, LATERAL (SELECT ${at} AS at) c`, [org.organization_id, CALLS]);
  await db.none(`INSERT INTO call_tickets (call_id, organization_id, kind, token_hash, expires_at)
                 SELECT id, organization_id, 'webrtc', gen_random_bytes(32), now() FROM calls LIMIT $1`, [Math.ceil(CALLS / 10)]);
  for (const table of ['calls', 'sms_messages', 'events', 'webhook_delivery_attempts', 'call_tickets']) await db.none('VACUUM ANALYZE $1:name', [table]);
  const seeded = (Date.now() - t0) / 1000;
  const sizes = await db.any<{ name: string; rows: string; size: string }>(
    `SELECT relname AS name, reltuples::bigint::text AS rows, pg_size_pretty(pg_total_relation_size(oid)) AS size FROM pg_class
      WHERE relname IN ('calls', 'sms_messages', 'events', 'webhook_delivery_attempts', 'call_tickets') ORDER BY relname`);
  const m0 = Date.now();
  await migrate(db, { until: '040_monthly_partitions.sql' });
  const m1 = Date.now();
  await migrate(db, { until: '041_monthly_partitions_validate.sql' });
  const m2 = Date.now();
  console.log(JSON.stringify({ calls: CALLS, seeded_s: seeded, sizes, migration_040_lock_s: (m1 - m0) / 1000,
    migration_041_validate_s: (m2 - m1) / 1000, loadavg: loadavg().map((x) => Math.round(x * 10) / 10) }, null, 1));
} finally {
  await db.$pool.end();
  await dropDatabase(url);
}
