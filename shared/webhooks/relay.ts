import type { JobsOptions } from 'bullmq';
import type { Db } from '../db.ts';
import { webhookBody } from './body.ts';
import { deliveryJobOptions, type DeliveryJob } from './delivery-jobs.ts';
import { deliveryId } from './signing.ts';
import { matchingSubscriptions } from './subscriptions.ts';

export interface BulkJob { name: string; data: DeliveryJob; opts: JobsOptions }

/** Relays one batch of committed, not yet relayed events, all or nothing:
 *   1. claim up to `limit` rows (FOR UPDATE SKIP LOCKED: concurrent relays never take the same row);
 *   2. enqueue one delivery job per matching live subscription, with deterministic job ids;
 *   3. mark the rows relayed and commit.
 *  A crash before 3 leaves the rows unrelayed (the lock dies with the connection): the next run enqueues the same
 *  job ids, which BullMQ ignores (job id + deduplication key), so an event is never lost nor enqueued twice. */
export async function relayBatch(db: Db, enqueue: (jobs: BulkJob[]) => Promise<unknown>, limit: number, retryScale: number) {
  return db.tx('relay', async (tx) => {
    // A relay whose host vanished must not hold its rows for hours (TCP keepalive): the server ends the session.
    await tx.none(`SET LOCAL idle_in_transaction_session_timeout = '60s'`);
    const events = await tx.any<{ id: string; seq: number; organization_id: string; event_type: string; data: Record<string, unknown>; occurred_at: Date }>(
      `SELECT id, seq, organization_id, event_type, data, occurred_at FROM events
        WHERE relayed_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`, [limit]);
    if (!events.length) return { events: 0, jobs: 0 };
    const pairs = new Map<string, { organizationId: string; eventType: string }>();
    for (const e of events) pairs.set(`${e.organization_id} ${e.event_type}`, { organizationId: e.organization_id, eventType: e.event_type });
    const subs = await matchingSubscriptions(tx, [...pairs.values()]);
    const byPair = new Map<string, string[]>();
    for (const s of subs) {
      const k = `${s.organization_id} ${s.event_type}`;
      byPair.set(k, [...(byPair.get(k) ?? []), s.id]);
    }
    const jobs: BulkJob[] = [];
    for (const e of events) {
      const targets = byPair.get(`${e.organization_id} ${e.event_type}`);
      if (!targets) continue;
      const body = webhookBody(e);
      for (const subscriptionId of targets) {
        const webhookId = deliveryId(e.id, subscriptionId);
        jobs.push({
          name: e.event_type,
          data: { webhookId, subscriptionId, organizationId: e.organization_id, eventId: e.id, eventType: e.event_type, body },
          opts: deliveryJobOptions(webhookId, retryScale),
        });
      }
    }
    if (jobs.length) await enqueue(jobs);
    await tx.none('UPDATE events SET relayed_at = now() WHERE seq = ANY($1::bigint[])', [events.map((e) => e.seq)]);
    return { events: events.length, jobs: jobs.length };
  });
}
