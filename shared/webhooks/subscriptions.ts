import { writeWithin, type Db, type Tx, type WithinTx } from '../db.ts';
import { DomainError, notFound, validationError } from '../errors.ts';
import { randomToken, SUBSCRIPTION_PREFIX } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import type { NewAttempt } from './attempt-log.ts';
import { isSubscribable, SUBSCRIBABLE_EVENT_TYPES } from './event-types.ts';
import { newSigningSecret } from './signing.ts';
import { subscriptionView } from './views.ts';
import { checkWebhookUrl, LOCAL_RECEIVER_HINT } from './url-guard.ts';

export interface SubscriptionRow {
  id: string;
  seq: number;
  organization_id: string;
  webhook_url: string;
  event_type: string;
  workflow_id: string | null;
  campaign_id: string | null;
  secret: string;
  status: 'active' | 'disabled';
  disabled_reason: string | null;
  disabled_at: Date | null;
  created_at: Date;
  deleted_at: Date | null;
}

export interface NewSubscription {
  webhook_url: string;
  event_type: string;
  workflow_id?: string;
  campaign_id?: string;
}

export const newSubscriptionId = () => SUBSCRIPTION_PREFIX + randomToken(24);

/** Live (not deleted) subscriptions an organization may have, active and disabled together. Each one is a
 *  delivery per matching event, so the cap bounds what one event can fan out to. */
export const MAX_SUBSCRIPTIONS_PER_ORGANIZATION = 100;

const duplicateOf = (existing: { id: string }, eventType: string) => new DomainError('subscription_exists',
  `This URL is already subscribed to ${eventType} (${existing.id}); one subscription delivers each event once.`,
  { fields: { webhook_url: `is already subscribed to ${eventType}`, conflicts_with: existing.id },
    resolutionHint: 'Use the existing subscription (POST .../enable turns a disabled one back on), or delete it first.' });

/** Validates (event type, URL scheme and SSRF rule) and stores a subscription with a fresh signing secret.
 *  Refuses a second live subscription of the same URL to the same event type (409 subscription_exists, with
 *  fields.conflicts_with = the existing id) and more than MAX_SUBSCRIPTIONS_PER_ORGANIZATION (409
 *  subscription_limit_exceeded). Both checks run under a per-organization lock, and a unique index backs the first. */
export async function createSubscription(db: Db, organizationId: string, input: NewSubscription, allowInsecure: boolean,
  within?: WithinTx<CreatedSubscription>): Promise<CreatedSubscription> {
  const fields: Record<string, string> = {};
  if (!isSubscribable(input.event_type)) {
    fields.event_type = `must be one of: ${SUBSCRIBABLE_EVENT_TYPES.join(', ')}`;
  }
  const url = await checkWebhookUrl(input.webhook_url, allowInsecure);
  if (!url.ok) fields.webhook_url = url.reason;
  if (Object.keys(fields).length || !url.ok) {
    throw new DomainError('validation_error', 'The request is invalid; see fields.',
      { fields, resolutionHint: !url.ok && url.insecureWouldAllow ? LOCAL_RECEIVER_HINT : undefined });
  }
  const webhookUrl = url.url.toString();
  const live = 'organization_id = $1 AND deleted_at IS NULL';
  const sameTarget = `${live} AND event_type = $2 AND md5(webhook_url) = md5($3) AND webhook_url = $3`;
  try {
    return await db.tx(async (tx) => {
      await tx.one("SELECT pg_advisory_xact_lock(hashtextextended('webhook_subscriptions:' || $1, 0))", [organizationId]);
      const existing = await tx.oneOrNone<{ id: string }>(`SELECT id FROM webhook_subscriptions WHERE ${sameTarget}`,
        [organizationId, input.event_type, webhookUrl]);
      if (existing) throw duplicateOf(existing, input.event_type);
      const { n } = await tx.one<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_subscriptions WHERE ${live}`, [organizationId]);
      if (n >= MAX_SUBSCRIPTIONS_PER_ORGANIZATION) {
        throw new DomainError('subscription_limit_exceeded',
          `Your organization has ${n} webhook subscriptions; the limit is ${MAX_SUBSCRIPTIONS_PER_ORGANIZATION}.`,
          { resolutionHint: 'Delete subscriptions you no longer use; one subscription per URL and event type is enough.' });
      }
      const row = await tx.one<SubscriptionRow>(
        `INSERT INTO webhook_subscriptions (id, organization_id, webhook_url, event_type, workflow_id, campaign_id, secret)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
        [newSubscriptionId(), organizationId, webhookUrl, input.event_type, input.workflow_id ?? null,
          input.campaign_id ?? null, newSigningSecret()],
      );
      const created: CreatedSubscription = { ...subscriptionView(row), secret: row.secret };
      if (within) await within(tx, created);
      return created;
    });
  } catch (err) {
    // The unique index: only reachable if a writer bypassed the lock (e.g. SQL by hand); answer the same 409.
    if ((err as { code?: string }).code === '23505') {
      const existing = await db.oneOrNone<{ id: string }>(`SELECT id FROM webhook_subscriptions WHERE ${sameTarget}`,
        [organizationId, input.event_type, webhookUrl]);
      if (existing) throw duplicateOf(existing, input.event_type);
    }
    throw err;
  }
}
export type CreatedSubscription = ReturnType<typeof subscriptionView> & { secret: string };

/** The organization's live subscriptions (active and disabled; deleted ones are gone), one keyset page. */
export async function listSubscriptions(db: Db, organizationId: string, p: PageParams, eventType?: string) {
  const k = keysetClause('seq', p, 3);
  const filter = `organization_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR event_type = $2)`;
  return db.task(async (t) => {
    const rows = await t.any<SubscriptionRow>(`SELECT * FROM webhook_subscriptions WHERE ${filter}${k.where}${k.tail}`,
      [organizationId, eventType ?? null, ...k.values]);
    const { n } = await t.one(`SELECT count(*)::int AS n FROM webhook_subscriptions WHERE ${filter}`, [organizationId, eventType ?? null]);
    return { rows, total: n as number };
  });
}

export async function getSubscription(db: Db | Tx, organizationId: string, id: string): Promise<SubscriptionRow> {
  const row = await db.oneOrNone<SubscriptionRow>(
    'SELECT * FROM webhook_subscriptions WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL', [id, organizationId]);
  if (!row) throw notFound('Webhook subscription');
  return row;
}

/** Deletes a subscription: no further deliveries (pending retries are dropped); its attempt log is kept. */
export async function deleteSubscription(db: Db, organizationId: string, id: string, within?: WithinTx<void>): Promise<void> {
  await writeWithin(db, within, async (q) => {
    const r = await q.result(
      'UPDATE webhook_subscriptions SET deleted_at = now() WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL',
      [id, organizationId]);
    if (r.rowCount !== 1) throw notFound('Webhook subscription');
  });
}

/** A 410 Gone from the receiver: the subscription stops receiving (it stays listed with status disabled). */
export async function disableSubscription(db: Db, id: string, reason: string): Promise<void> {
  await db.none(
    `UPDATE webhook_subscriptions SET status = 'disabled', disabled_reason = $2, disabled_at = now()
      WHERE id = $1 AND status = 'active'`, [id, reason]);
}

/** Turns a disabled subscription back on (its receiver is back): events from now on are delivered to it; those
 *  that occurred while it was disabled are not. Enabling an active subscription changes nothing. The URL is
 *  checked again (as at creation), since what its host resolves to may have changed. */
export async function enableSubscription(db: Db, organizationId: string, id: string, allowInsecure: boolean,
  within?: WithinTx<ReturnType<typeof subscriptionView>>) {
  const current = await getSubscription(db, organizationId, id);
  const url = await checkWebhookUrl(current.webhook_url, allowInsecure);
  if (!url.ok) throw validationError({ webhook_url: url.reason }, 'The subscription\'s URL is no longer allowed; subscribe a new one.');
  return writeWithin(db, within, async (q) => {
    const row = await q.oneOrNone<SubscriptionRow>(
      `UPDATE webhook_subscriptions SET status = 'active', disabled_reason = NULL, disabled_at = NULL
        WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL RETURNING *`, [id, organizationId]);
    if (!row) throw notFound('Webhook subscription');
    return subscriptionView(row);
  });
}

/** What a delivery needs to know about its subscription (null when deleted). */
export async function subscriptionForDelivery(db: Db, id: string) {
  return db.oneOrNone<Pick<SubscriptionRow, 'id' | 'webhook_url' | 'secret' | 'status' | 'organization_id'>>(
    'SELECT id, webhook_url, secret, status, organization_id FROM webhook_subscriptions WHERE id = $1 AND deleted_at IS NULL', [id]);
}

/** Live subscriptions for a batch of (organization, event type) pairs: the relay's fan-out. */
export async function matchingSubscriptions(tx: Tx, pairs: { organizationId: string; eventType: string }[]) {
  if (!pairs.length) return [];
  return tx.any<{ id: string; organization_id: string; event_type: string; created_at: Date; workflow_id: string | null; campaign_id: string | null }>(
    `SELECT s.id, s.organization_id, s.event_type, s.created_at, s.workflow_id, s.campaign_id FROM webhook_subscriptions s
       JOIN unnest($1::uuid[], $2::text[]) AS p(org, et) ON s.organization_id = p.org AND s.event_type = p.et
      WHERE s.status = 'active' AND s.deleted_at IS NULL`,
    [pairs.map((p) => p.organizationId), pairs.map((p) => p.eventType)]);
}

/** A logged delivery attempt as read back (the row written from a NewAttempt). */
export type AttemptRow = Omit<NewAttempt, 'organization_id'> & { id: number };

/** The events a call writes, whose data.id is the call's id (the predicate of migration 035's index, verbatim). */
export const CALL_EVENT_TYPES = ['new_call', 'call_completed', 'call_no_answer', 'call_voicemail', 'call_busy', 'call_failed', 'phone_call.ended'];
const CALL_EVENT_TYPES_SQL = `event_type IN (${CALL_EVENT_TYPES.map((t) => `'${t}'`).join(', ')})`;

/** Every delivery attempt to one of the organization's subscriptions (deleted ones too), newest first; optionally
 *  of one delivery (webhookId) and/or of the events of one call (callId). */
export async function listAttempts(db: Db, organizationId: string, subscriptionId: string, p: PageParams, webhookId?: string,
  callId?: string) {
  return db.task(async (t) => {
    const sub = await t.oneOrNone('SELECT 1 FROM webhook_subscriptions WHERE id = $1 AND organization_id = $2',
      [subscriptionId, organizationId]);
    if (!sub) throw notFound('Webhook subscription');
    const k = keysetClause('id', p, 5);
    const filter = 'subscription_id = $1 AND ($2::text IS NULL OR webhook_id = $2) AND ($3::text IS NULL OR event_id IN ('
      + `SELECT id FROM events WHERE organization_id = $4 AND data->>'id' = $3 AND ${CALL_EVENT_TYPES_SQL}))`;
    const args = [subscriptionId, webhookId ?? null, callId ?? null, organizationId];
    const rows = await t.any<AttemptRow>(`SELECT * FROM webhook_delivery_attempts WHERE ${filter}${k.where}${k.tail}`, [...args, ...k.values]);
    const { n } = await t.one(`SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE ${filter}`, args);
    return { rows, total: n as number };
  });
}
