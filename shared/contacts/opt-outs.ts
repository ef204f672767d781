// Opt-outs (table opt_outs): a live row (revoked_at null) means the number must not be contacted on that channel by
// the organization; opting back in revokes the live row, history stays. This module is the only writer of the table:
// the contacts API (both channels), and inbound SMS STOP/START (channel sms). Calls read channel 'call'
// (shared/compliance), SMS sends channel 'sms'. What it guarantees:
// - one live row per organization, number and channel: opting out again answers the live row as is;
// - every change of an sms opt-out takes the recipient's transaction-scoped advisory lock (lockRecipient) first, as
//   every hand-over of a message to that recipient does (shared/sms/send.ts): a message racing a STOP is either
//   handed to the carrier before the opt-out commits, or sees it and is not sent;
// - created_at and revoked_at are the moment after that lock (clock_timestamp(), not the transaction's start): an
//   opt-out's created_at is later than the sent_at of every message handed over before it.
import type { Static } from '@sinclair/typebox';
import type { Db, Tx, WithinTx } from '../db.ts';
import { stateConflict } from '../errors.ts';
import type { Channel } from './consents.ts';
import type { OptOutResponse } from './schemas.ts';

export interface OptOutRow { id: string; phone_number: string; channel: Channel; source: string; created_at: Date; revoked_at: Date | null }

export const optOutView = (o: OptOutRow): Static<typeof OptOutResponse> => ({
  id: o.id, phone_number: o.phone_number, channel: o.channel, source: o.source,
  status: o.revoked_at ? 'revoked' as const : 'active' as const,
  created_at: o.created_at.toISOString(), revoked_at: o.revoked_at ? o.revoked_at.toISOString() : null,
});

const COLS = 'id, phone_number, channel, source, created_at, revoked_at';

/** Serializes sms opt-out changes and message hand-overs to one recipient of the organization, until tx ends. */
export async function lockRecipient(tx: Tx, organizationId: string, number: string): Promise<void> {
  await tx.any('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`sms-recipient:${organizationId}:${number}`]);
}

export async function isOptedOut(q: Db | Tx, organizationId: string, number: string, channel: Channel): Promise<boolean> {
  const r = await q.oneOrNone(`SELECT 1 FROM opt_outs WHERE organization_id = $1 AND phone_number = $2 AND channel = $3
                                  AND revoked_at IS NULL`, [organizationId, number, channel]);
  return r !== null;
}

/** Every opt-out of the number (live and revoked), newest first. */
export async function listOptOuts(db: Db, organizationId: string, phone: string): Promise<OptOutRow[]> {
  return db.any(`SELECT ${COLS} FROM opt_outs WHERE organization_id = $1 AND phone_number = $2 ORDER BY created_at DESC, id`,
    [organizationId, phone]);
}

/** Opts the number out of the channel in the caller's transaction; an existing live opt-out is answered as is
 *  (created false). Inbound SMS STOP runs it in the message's transaction. */
export async function recordOptOut(tx: Tx, organizationId: string, phone: string, channel: Channel, source: string)
  : Promise<{ row: OptOutRow; created: boolean }> {
  if (channel === 'sms') await lockRecipient(tx, organizationId, phone);
  const row = await tx.oneOrNone<OptOutRow>(
    `INSERT INTO opt_outs (organization_id, phone_number, channel, source, created_at) VALUES ($1, $2, $3, $4, clock_timestamp())
     ON CONFLICT (organization_id, phone_number, channel) WHERE revoked_at IS NULL DO NOTHING RETURNING ${COLS}`,
    [organizationId, phone, channel, source]);
  if (row) return { row, created: true };
  return { row: await tx.one<OptOutRow>(
    `SELECT ${COLS} FROM opt_outs WHERE organization_id = $1 AND phone_number = $2 AND channel = $3 AND revoked_at IS NULL`,
    [organizationId, phone, channel]), created: false };
}

/** Revokes the live opt-out of the channel in the caller's transaction; null when the number was not opted out
 *  (inbound SMS START then changes nothing and still gets its reply; the API answers 409). */
export async function revokeOptOut(tx: Tx, organizationId: string, phone: string, channel: Channel): Promise<OptOutRow | null> {
  if (channel === 'sms') await lockRecipient(tx, organizationId, phone);
  return tx.oneOrNone<OptOutRow>(
    `UPDATE opt_outs SET revoked_at = clock_timestamp()
      WHERE organization_id = $1 AND phone_number = $2 AND channel = $3 AND revoked_at IS NULL RETURNING ${COLS}`,
    [organizationId, phone, channel]);
}

/** The API's opt-out: recordOptOut in its own transaction, with `within` (the idempotency record) when given. */
export async function optOut(db: Db, organizationId: string, phone: string, channel: Channel, source: string,
  within?: WithinTx<{ row: OptOutRow; created: boolean }>): Promise<{ row: OptOutRow; created: boolean }> {
  return db.tx('opt-out', async (tx) => {
    const r = await recordOptOut(tx, organizationId, phone, channel, source);
    if (within) await within(tx, r);
    return r;
  });
}

/** The API's opt-in: revokeOptOut in its own transaction; state_conflict when the number is not opted out. */
export async function optIn(db: Db, organizationId: string, phone: string, channel: Channel,
  within?: WithinTx<OptOutRow>): Promise<OptOutRow> {
  return db.tx('opt-in', async (tx) => {
    const row = await revokeOptOut(tx, organizationId, phone, channel);
    if (!row) {
      throw stateConflict('contact_opt_out', 'not_opted_out', `${phone} is not opted out of ${channel === 'call' ? 'calls' : 'SMS'}.`);
    }
    if (within) await within(tx, row);
    return row;
  });
}
