// Retention against real PostgreSQL: relayed events and delivery attempts older than the retention are deleted in
// batches; newer rows and events not yet relayed (whatever their age) stay; EVENTS_RETENTION_DAYS is read and
// checked; idempotency records past their 24 hours go too; the workers run the sweep as a service.
import t from 'tap';
import { loadConfig } from '../../shared/config.ts';
import { pruneOldEvents } from '../../shared/events/retention.ts';
import { uuidv7 } from '../../shared/ids.ts';
import { IDEMPOTENCY_RETENTION_MS } from '../../shared/idempotency/idempotency-store.ts';
import { pruneIdempotencyRecords } from '../../shared/idempotency/records.ts';
import { SERVICES } from '../../workers/registry.ts';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t, { gateway: false });
const org = await env.bootstrap({ numbers: 0 });

async function event(ageDays: number, relayed: boolean): Promise<string> {
  const id = uuidv7();
  await env.db.none(
    `INSERT INTO events (id, organization_id, event_type, data, occurred_at, relayed_at)
     VALUES ($1, $2, 'sms_sent', '{}', now() - make_interval(days => $3), CASE WHEN $4 THEN now() END)`,
    [id, org.organization_id, ageDays, relayed]);
  return id;
}

async function attempt(ageDays: number): Promise<number> {
  const sub = await env.db.one(
    `INSERT INTO webhook_subscriptions (id, organization_id, webhook_url, event_type, secret)
     VALUES ('whsub_' || md5(random()::text), $1, 'https://example.com/h/' || md5(random()::text), 'sms_sent', 'whsec_x')
     RETURNING id`, [org.organization_id]); // one URL per subscription: a URL is subscribed to an event type once (010)
  const r = await env.db.one(
    `INSERT INTO webhook_delivery_attempts (subscription_id, organization_id, webhook_id, event_id, event_type, attempt,
       outcome, latency_ms, attempted_at)
     VALUES ($1, $2, 'msg_x', $3, 'sms_sent', 1, 'succeeded', 5, now() - make_interval(days => $4)) RETURNING id`,
    [sub.id, org.organization_id, uuidv7(), ageDays]);
  return r.id;
}

t.test('old relayed events and old attempts go; the rest stays', async (t) => {
  const oldRelayed = await Promise.all(Array.from({ length: 12 }, () => event(40, true)));
  const oldPending = await event(40, false);
  const recent = await event(5, true);
  const oldAttempts = await Promise.all(Array.from({ length: 7 }, () => attempt(45)));
  const recentAttempt = await attempt(1);

  const pruned = await pruneOldEvents(env.db, 30, 5);
  t.same(pruned, { events: 12, attempts: 7 }, 'everything old, over several batches of 5');
  const left = (await env.db.any('SELECT id FROM events')).map((r) => r.id);
  t.notOk(oldRelayed.some((id) => left.includes(id)), 'old relayed events are gone');
  t.ok(left.includes(oldPending), 'an event not yet relayed stays, however old');
  t.ok(left.includes(recent), 'a recent event stays');
  const attempts = (await env.db.any('SELECT id FROM webhook_delivery_attempts')).map((r) => Number(r.id));
  t.notOk(oldAttempts.some((id) => attempts.includes(id)), 'old attempts are gone');
  t.ok(attempts.includes(Number(recentAttempt)), 'a recent attempt stays');
  t.same(await pruneOldEvents(env.db, 30, 5), { events: 0, attempts: 0 }, 'a second sweep finds nothing');
});

t.test('idempotency records older than 24 hours go, in batches; younger ones stay', async (t) => {
  const record = (key: string, ageHours: number) => env.db.none(
    `INSERT INTO idempotency_records (credential_id, key_hash, fingerprint, request_id, status, body, headers, created_at)
     VALUES ('cred', $1, 'fp', 'req', 202, '{}', '{}', now() - make_interval(hours => $2))`, [key, ageHours]);
  for (let i = 0; i < 7; i++) await record(`old-${i}`, 25);
  await record('young', 23);
  t.equal(await pruneIdempotencyRecords(env.db, IDEMPOTENCY_RETENTION_MS, 3), 7, 'the 7 expired ones, over batches of 3');
  t.same((await env.db.any('SELECT key_hash FROM idempotency_records')).map((r) => r.key_hash), ['young']);
  t.equal(await pruneIdempotencyRecords(env.db, IDEMPOTENCY_RETENTION_MS, 3), 0, 'a second sweep finds nothing');
});

t.test('EVENTS_RETENTION_DAYS: default 30, 0 keeps everything, nonsense refused', async (t) => {
  t.equal(loadConfig({}).eventsRetentionDays, 30);
  t.equal(loadConfig({ EVENTS_RETENTION_DAYS: '0' }).eventsRetentionDays, 0);
  t.equal(loadConfig({ EVENTS_RETENTION_DAYS: '7' }).eventsRetentionDays, 7);
  t.throws(() => loadConfig({ EVENTS_RETENTION_DAYS: 'a week' }), /EVENTS_RETENTION_DAYS must be a non-negative integer/);
  t.throws(() => loadConfig({ EVENTS_RETENTION_DAYS: '-1' }), /EVENTS_RETENTION_DAYS/);
});

t.test('the workers run it as a service', async (t) => {
  t.ok(SERVICES.some((s) => s.name === 'events-retention'));
});
