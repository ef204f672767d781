// Opt-outs (table opt_outs, shared with SMS: STOP writes channel 'sms'): a live row means the number must not be
// contacted on that channel by the organization. Calls read channel 'call' (shared/compliance). Opting back in
// revokes the live row; history stays.
import { writeWithin, type Db, type WithinTx } from '../db.ts';
import { ApiError } from '../errors.ts';
import type { Channel } from './consents.ts';
import { lockRecipient } from '../sms/opt-outs.ts';

export interface OptOutRow { id: string; phone_number: string; channel: Channel; source: string; created_at: Date; revoked_at: Date | null }

export const optOutView = (o: OptOutRow) => ({
  id: o.id, phone_number: o.phone_number, channel: o.channel, source: o.source,
  status: o.revoked_at ? 'revoked' as const : 'active' as const,
  created_at: o.created_at.toISOString(), revoked_at: o.revoked_at ? o.revoked_at.toISOString() : null,
});

const COLS = 'id, phone_number, channel, source, created_at, revoked_at';

/** Every opt-out of the number (live and revoked), newest first. */
export async function listOptOuts(db: Db, organizationId: string, phone: string): Promise<OptOutRow[]> {
  return db.any(`SELECT ${COLS} FROM opt_outs WHERE organization_id = $1 AND phone_number = $2 ORDER BY created_at DESC, id`,
    [organizationId, phone]);
}

/** Opts the number out of the channel; an existing live opt-out is answered as is (created false). */
export async function optOut(db: Db, organizationId: string, phone: string, channel: Channel, source: string,
  within?: WithinTx<{ row: OptOutRow; created: boolean }>): Promise<{ row: OptOutRow; created: boolean }> {
  // SMS opt-outs serialize with sends to the number (shared/sms/opt-outs.ts): a send racing this never goes out after it.
  return writeWithin(db, within, (db0) => (db0 as Db).tx('opt-out', async (q) => { // a savepoint when db0 is a transaction already
    if (channel === 'sms') await lockRecipient(q, organizationId, phone);
    const row = await q.oneOrNone<OptOutRow>(
      `INSERT INTO opt_outs (organization_id, phone_number, channel, source) VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, phone_number, channel) WHERE revoked_at IS NULL DO NOTHING RETURNING ${COLS}`,
      [organizationId, phone, channel, source]);
    if (row) return { row, created: true };
    return { row: await q.one<OptOutRow>(
      `SELECT ${COLS} FROM opt_outs WHERE organization_id = $1 AND phone_number = $2 AND channel = $3 AND revoked_at IS NULL`,
      [organizationId, phone, channel]), created: false };
  }));
}

/** Opts the number back in on the channel; 409 when it is not opted out. */
export async function optIn(db: Db, organizationId: string, phone: string, channel: Channel, within?: WithinTx<OptOutRow>): Promise<OptOutRow> {
  return writeWithin(db, within, (db0) => (db0 as Db).tx('opt-in', async (q) => {
    if (channel === 'sms') await lockRecipient(q, organizationId, phone);
    const row = await q.oneOrNone<OptOutRow>(
      `UPDATE opt_outs SET revoked_at = now() WHERE organization_id = $1 AND phone_number = $2 AND channel = $3 AND revoked_at IS NULL
       RETURNING ${COLS}`, [organizationId, phone, channel]);
    if (!row) {
      throw new ApiError('invalid_state', `${phone} is not opted out of ${channel === 'call' ? 'calls' : 'SMS'}.`,
        { fields: { status: 'not_opted_out' } });
    }
    return row;
  }));
}
