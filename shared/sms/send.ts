// Handing a queued message to the carrier (the workers' sms-send processor), and applying delivery receipts.
//
//   queued --carrier accepts--> sent --receipt--> delivered | undelivered
//   queued --carrier refuses, recipient opted out, the spend cap or no active subscription--> failed (error_message
//            says which)
//
// The opt-out is checked under the recipient's lock (shared/contacts/opt-outs.ts) in the transaction that hands the
// message over and marks it sent: a STOP that commits first stops it; a STOP that comes later waits for the
// hand-over to commit. Automatic replies to STOP/START/HELP skip the opt-out check (the STOP confirmation is owed).
// Money (SMS_PRICE_CENTS_PER_SEGMENT per segment) is charged just before the hand-over, once per message; a
// message that then loses a race with a STOP keeps its charge.
import { isOptedOut, lockRecipient } from '../contacts/opt-outs.ts';
import type { Db, Tx } from '../db.ts';
import { DomainError } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import type { SpendCharges } from '../spend/charges.ts';
import type { SmsCarrier, SmsReceipt } from './carrier.ts';
import { messageEventData, type MessageRow } from './messages.ts';
import { smsCostCents } from './pricing.ts';

export const OPTED_OUT_ERROR = 'recipient_opted_out: the recipient replied STOP before the message was handed to the carrier';
export const SPEND_CAP_ERROR = 'spend_cap_reached: sending would exceed the organization\'s daily spend cap';
export const NO_SUBSCRIPTION_ERROR = 'no_active_subscription: the organization had no active subscription when the message was to be sent';

export interface SendDeps { db: Db; charges: SpendCharges; carrier: SmsCarrier }

export type HandOverResult = 'sent' | 'failed' | 'skipped';

async function fail(tx: Tx, id: string, error: string, providerId: string | null = null): Promise<MessageRow> {
  const row = await tx.one<MessageRow>(
    `UPDATE sms_messages SET status = 'failed', error_message = $2, provider_id = COALESCE($3, provider_id), updated_at = now()
      WHERE id = $1 RETURNING *`, [id, error, providerId]);
  await recordEvent(tx, { organizationId: row.organization_id, eventType: 'sms_failed', data: messageEventData(row) });
  return row;
}

export async function handOver(d: SendDeps, messageId: string): Promise<HandOverResult> {
  const m = await d.db.oneOrNone<MessageRow & { cap: number }>(
    `SELECT m.*, o.daily_spend_cap_cents::float8 AS cap FROM sms_messages m JOIN organizations o ON o.id = m.organization_id
      WHERE m.id = $1`, [messageId]);
  if (!m || m.status !== 'queued') return 'skipped';
  const checkOptOut = m.auto_reply_to === null;

  // Without a lock first: an opted-out recipient costs nothing.
  let error: string | null = checkOptOut && await isOptedOut(d.db, m.organization_id, m.remote_number, 'sms') ? OPTED_OUT_ERROR : null;
  if (!error) {
    // The plan may have lapsed since the message was accepted: the charge refuses it then, and the message fails.
    const charge = await d.charges.charge({ organizationId: m.organization_id, kind: 'sms', ref: m.id,
      cents: smsCostCents(m.segments), quantity: m.segments, capCents: m.cap }).catch((err: unknown) => {
      if (err instanceof DomainError && err.code === 'no_active_subscription') return null;
      throw err;
    });
    if (!charge) error = NO_SUBSCRIPTION_ERROR;
    else if (!charge.charged && charge.reason === 'spend_cap') error = SPEND_CAP_ERROR;
  }

  const result = await d.db.tx('sms-hand-over', async (tx): Promise<HandOverResult> => {
    await lockRecipient(tx, m.organization_id, m.remote_number);
    const cur = await tx.oneOrNone<MessageRow>('SELECT * FROM sms_messages WHERE id = $1 FOR UPDATE', [m.id]);
    if (!cur || cur.status !== 'queued') return 'skipped';
    if (!error && checkOptOut && await isOptedOut(tx, m.organization_id, m.remote_number, 'sms')) error = OPTED_OUT_ERROR;
    if (error) { await fail(tx, m.id, error); return 'failed'; }
    const r = await d.carrier.submit({ messageId: m.id, from: m.local_number, to: m.remote_number, body: m.body, segments: m.segments });
    if (!r.accepted) { await fail(tx, m.id, r.error, r.providerId); return 'failed'; }
    const row = await tx.one<MessageRow>(
      `UPDATE sms_messages SET status = 'sent', provider = $2, provider_id = $3, sent_at = clock_timestamp(), updated_at = now()
        WHERE id = $1 RETURNING *`, [m.id, d.carrier.name, r.providerId]);
    await recordEvent(tx, { organizationId: row.organization_id, eventType: 'sms_sent', data: messageEventData(row) });
    return 'sent';
  });
  if (result !== 'skipped') wakeRelay(d.db);
  return result;
}

/** sent -> delivered | undelivered, once; a receipt for a message in any other state is ignored. delivered_at is
 *  the carrier's time, never before sent_at (our stamp of the hand-over, taken after the carrier accepted). */
export async function applyReceipt(db: Db, r: SmsReceipt): Promise<boolean> {
  const applied = await db.tx('sms-receipt', async (tx) => {
    // The receipt can come before the hand-over's transaction committed: FOR UPDATE waits for it, and a message
    // still queued (the hand-over rolled back and will be repeated) makes the job retry later.
    const cur = await tx.oneOrNone<{ status: string }>('SELECT status FROM sms_messages WHERE id = $1 FOR UPDATE', [r.messageId]);
    if (cur?.status === 'queued') throw new Error(`message ${r.messageId} is not handed over yet; the receipt is retried`);
    const row = await tx.oneOrNone<MessageRow>(
      `UPDATE sms_messages SET status = $2, error_message = $3, delivered_at = CASE WHEN $2 = 'delivered' THEN GREATEST($4::timestamptz, sent_at) END,
              updated_at = now()
        WHERE id = $1 AND status = 'sent' RETURNING *`, [r.messageId, r.status, r.error, r.at]);
    if (!row) return false;
    await recordEvent(tx, { organizationId: row.organization_id, eventType: r.status === 'delivered' ? 'sms_delivered' : 'sms_failed',
      data: messageEventData(row) });
    return true;
  });
  if (applied) wakeRelay(db);
  return applied;
}
