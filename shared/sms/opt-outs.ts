// SMS opt-outs (opt_outs rows of channel 'sms'). Every change of a recipient's opt-out and every hand-over of a
// message to that recipient take the same transaction-scoped advisory lock, so a message racing a STOP is either
// handed to the carrier before the opt-out commits, or sees the opt-out and is not sent. Whoever writes channel
// 'sms' opt-outs must go through optOut()/optIn() here.
import type { Db, Tx } from '../db.ts';

export async function lockRecipient(tx: Tx, organizationId: string, number: string): Promise<void> {
  await tx.any('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`sms-recipient:${organizationId}:${number}`]);
}

export async function isOptedOut(q: Db | Tx, organizationId: string, number: string): Promise<boolean> {
  const r = await q.oneOrNone(`SELECT 1 FROM opt_outs WHERE organization_id = $1 AND phone_number = $2 AND channel = 'sms'
                                  AND revoked_at IS NULL`, [organizationId, number]);
  return r !== null;
}

/** Opts the number out (a live row); false when it already was. created_at is the moment after the lock. */
export async function optOut(tx: Tx, organizationId: string, number: string, source: string): Promise<boolean> {
  await lockRecipient(tx, organizationId, number);
  const r = await tx.oneOrNone(
    `INSERT INTO opt_outs (organization_id, phone_number, channel, source, created_at)
     VALUES ($1, $2, 'sms', $3, clock_timestamp())
     ON CONFLICT (organization_id, phone_number, channel) WHERE revoked_at IS NULL DO NOTHING RETURNING id`,
    [organizationId, number, source]);
  return r !== null;
}

/** Revokes the live opt-out; false when there was none. */
export async function optIn(tx: Tx, organizationId: string, number: string): Promise<boolean> {
  await lockRecipient(tx, organizationId, number);
  const r = await tx.result(
    `UPDATE opt_outs SET revoked_at = clock_timestamp()
      WHERE organization_id = $1 AND phone_number = $2 AND channel = 'sms' AND revoked_at IS NULL`, [organizationId, number]);
  return r.rowCount > 0;
}
