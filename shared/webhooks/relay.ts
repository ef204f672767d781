import type { JobsOptions } from 'bullmq';
import type { Db, Tx } from '../db.ts';
import { webhookBody } from './body.ts';
import { deliveryJobOptions, type DeliveryJob } from './delivery-jobs.ts';
import { deliveryId } from './signing.ts';
import { matchingSubscriptions } from './subscriptions.ts';

export interface BulkJob { name: string; data: DeliveryJob; opts: JobsOptions }

export interface RelayedEvent {
  id: string; seq: number; organization_id: string; event_type: string; data: Record<string, unknown>; occurred_at: Date;
}

/** A relay transaction holds this advisory lock shared; the re-arming after a Redis loss (rearm.ts) takes it
 *  exclusively, which waits for every relay transaction that may have enqueued into the Redis that was lost. */
const RELAY_FENCE = `hashtextextended('outbox-relay-fence', 0)`;
export const RELAY_FENCE_SHARED_SQL = `SELECT pg_advisory_xact_lock_shared(${RELAY_FENCE})`;
export const RELAY_FENCE_EXCLUSIVE_SQL = `SELECT pg_advisory_xact_lock(${RELAY_FENCE})`;

/** Thrown when Redis lost its state while a batch was being relayed: its jobs may be gone, so it must not commit. */
export class RedisStateChanged extends Error {
  override name = 'RedisStateChanged';
  constructor() { super('Redis lost its state while the batch was relayed; it is relayed again'); }
}

/** A subscription naming a workflow_id or campaign_id receives only the events of that workflow or campaign (the
 *  event's data carries the same id; events of no workflow carry none and are not delivered to it). */
export function ownScope(e: { data: Record<string, unknown> }, s: { workflow_id?: string | null; campaign_id?: string | null }): boolean {
  if (s.workflow_id != null && e.data?.workflow_id !== s.workflow_id) return false;
  if (s.campaign_id != null && e.data?.campaign_id !== s.campaign_id) return false;
  return true;
}

/** One delivery job per (event, subscription) among `subs` (subscriptions of the event's organization and type).
 *  `matches` narrows which subscriptions an event goes to. */
export async function deliveryJobsFor<E extends RelayedEvent>(tx: Tx, events: E[], retryScale: number,
  matches: (e: E, sub: { id: string; created_at: Date }) => boolean = () => true): Promise<BulkJob[]> {
  const pairs = new Map<string, { organizationId: string; eventType: string }>();
  for (const e of events) pairs.set(`${e.organization_id} ${e.event_type}`, { organizationId: e.organization_id, eventType: e.event_type });
  const subs = await matchingSubscriptions(tx, [...pairs.values()]);
  const byPair = new Map<string, typeof subs>();
  for (const s of subs) {
    const k = `${s.organization_id} ${s.event_type}`;
    byPair.set(k, [...(byPair.get(k) ?? []), s]);
  }
  const jobs: BulkJob[] = [];
  for (const e of events) {
    const targets = byPair.get(`${e.organization_id} ${e.event_type}`)?.filter((s) => ownScope(e, s) && matches(e, s));
    if (!targets?.length) continue;
    const body = webhookBody(e);
    for (const { id: subscriptionId } of targets) {
      const webhookId = deliveryId(e.id, subscriptionId);
      jobs.push({
        name: e.event_type,
        data: { webhookId, subscriptionId, organizationId: e.organization_id, eventId: e.id, eventType: e.event_type, body },
        opts: deliveryJobOptions(webhookId, retryScale),
      });
    }
  }
  return jobs;
}

/** Relays one batch of committed, not yet relayed events, all or nothing:
 *   1. claim up to `limit` rows (FOR UPDATE SKIP LOCKED: concurrent relays never take the same row);
 *   2. enqueue one delivery job per matching live subscription, with deterministic job ids;
 *   3. mark the rows relayed and commit.
 *  A crash before 3 leaves the rows unrelayed (the lock dies with the connection): the next run enqueues the same
 *  job ids, which BullMQ ignores (job id + deduplication key), so an event is never lost nor enqueued twice.
 *  `epoch` reads Redis's state epoch (shared/redis-state.ts): while it is missing (Redis lost its state and the
 *  workers have not re-armed yet) nothing is relayed, and a batch during which it changed is rolled back, so no
 *  event is marked relayed whose jobs went into a Redis that was lost. */
export async function relayBatch(db: Db, enqueue: (jobs: BulkJob[]) => Promise<unknown>, limit: number, retryScale: number,
  epoch: () => Promise<string | null>) {
  return db.tx('relay', async (tx) => {
    // A relay whose host vanished must not hold its rows for hours (TCP keepalive): the server ends the session.
    await tx.none(`SET LOCAL idle_in_transaction_session_timeout = '60s'`);
    await tx.any(RELAY_FENCE_SHARED_SQL);
    const before = await epoch();
    if (before === null) return { events: 0, jobs: 0, waiting: true };
    const events = await tx.any<RelayedEvent>(
      `SELECT id, seq, organization_id, event_type, data, occurred_at FROM events
        WHERE relayed_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`, [limit]);
    if (!events.length) return { events: 0, jobs: 0 };
    const jobs = await deliveryJobsFor(tx, events, retryScale);
    if (jobs.length) {
      await enqueue(jobs);
      if ((await epoch()) !== before) throw new RedisStateChanged();
    }
    await tx.none('UPDATE events SET relayed_at = now() WHERE seq = ANY($1::bigint[])', [events.map((e) => e.seq)]);
    return { events: events.length, jobs: jobs.length };
  });
}
