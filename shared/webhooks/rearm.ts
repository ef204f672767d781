// After Redis lost its state (workers/services/redis-recovery.ts): the webhook deliveries it still owed are enqueued
// again from PostgreSQL. A delivery is owed for each event relayed within the retry window (a delivery's last attempt
// comes attemptOffsetMs(MAX_ATTEMPTS) after its first) to each subscription that matched it then (live now, and
// created before the relay), unless its attempt log says it is over (succeeded, or failed for good). One still
// retrying goes on where it was: its next attempt at next_attempt_at, numbered after its last one. The jobs have the
// relay's ids, so a job that survived is not doubled. Events not relayed yet are the relay's own work.
import type { Db } from '../db.ts';
import { attemptOffsetMs, deliveryJobOptions, MAX_ATTEMPTS } from './delivery-jobs.ts';
import { deliveryJobsFor, RELAY_FENCE_EXCLUSIVE_SQL, type BulkJob, type RelayedEvent } from './relay.ts';

/** Beyond the retry window: a relay's commit and a delivery's first attempt are not the same instant. */
const WINDOW_SLACK_MS = 3600_000;

/** onPage runs after each page of events (a long re-arm keeps its lock with it). */
export async function rearmDeliveries(db: Db, enqueue: (jobs: BulkJob[]) => Promise<unknown>, retryScale: number,
  o: { page?: number; now?: number; onPage?: () => Promise<unknown> } = {}) {
  const page = o.page ?? 1000;
  const now = o.now ?? Date.now();
  // Wait out relay transactions that may have enqueued into the Redis that was lost: once they have committed,
  // their events show as relayed below (and later ones enqueue into this Redis).
  await db.tx('relay-fence', (tx) => tx.any(RELAY_FENCE_EXCLUSIVE_SQL));
  const out = { events: 0, jobs: 0 };
  // Pages in (relayed_at, seq) order; the cursor keeps relayed_at as text, with its microseconds (a Date would cut
  // them off, and every event of one relay batch has the same relayed_at).
  let cursor: [string, number] = [new Date(now - attemptOffsetMs(MAX_ATTEMPTS, retryScale) - WINDOW_SLACK_MS).toISOString(), 0];
  for (;;) {
    const events = await db.any<RelayedEvent & { relayed_at: Date; relayed_key: string }>(
      `SELECT id, seq, organization_id, event_type, data, occurred_at, relayed_at, relayed_at::text AS relayed_key FROM events
        WHERE relayed_at IS NOT NULL AND (relayed_at, seq) > ($1::timestamptz, $2) ORDER BY relayed_at, seq LIMIT $3`, [...cursor, page]);
    if (!events.length) return out;
    const last = events[events.length - 1];
    cursor = [last.relayed_key, last.seq];
    out.events += events.length;
    const jobs = await db.task('rearm-deliveries', (t) => deliveryJobsFor(t, events, retryScale, (e, sub) => sub.created_at <= e.relayed_at));
    if (!jobs.length) {
      await o.onPage?.();
      continue;
    }
    const attempts = await db.any<{ webhook_id: string; attempt: number; outcome: string; next_attempt_at: Date | null }>(
      `SELECT DISTINCT ON (webhook_id) webhook_id, attempt, outcome, next_attempt_at FROM webhook_delivery_attempts
        WHERE webhook_id = ANY($1::text[]) ORDER BY webhook_id, attempt DESC`, [jobs.map((j) => j.data.webhookId)]);
    const lastAttempt = new Map(attempts.map((a) => [a.webhook_id, a]));
    const owed: BulkJob[] = [];
    for (const job of jobs) {
      const a = lastAttempt.get(job.data.webhookId);
      if (!a) {
        owed.push(job);
      } else if (a.outcome === 'retrying') {
        owed.push({
          ...job, data: { ...job.data, attemptsBefore: a.attempt },
          opts: { ...deliveryJobOptions(job.data.webhookId, retryScale, a.attempt), delay: Math.max(0, (a.next_attempt_at?.getTime() ?? now) - now) },
        });
      }
    }
    if (owed.length) await enqueue(owed);
    out.jobs += owed.length;
    await o.onPage?.();
  }
}
