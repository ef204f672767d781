// The organization's internal Do-Not-Call list: a listed number is never called (dnc_suppressed), whatever the
// policy. Removing keeps the row (removed_at) as history.
import type { Static } from '@sinclair/typebox';
import { writeWithin, type Db, type WithinTx } from '../db.ts';
import { notFound } from '../errors.ts';
import { uuidv7 } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import type { DncResponse } from './schemas.ts';

export interface DncRow { id: string; phone_number: string; reason: string; created_at: Date }

export const dncView = (d: DncRow): Static<typeof DncResponse> => ({ id: d.id, phone_number: d.phone_number, reason: d.reason, created_at: d.created_at.toISOString() });

const COLS = 'id, phone_number, reason, created_at';

/** Adds the number; a number already listed is answered as is (created false). */
export async function addDnc(db: Db, organizationId: string, phone: string, reason: string,
  within?: WithinTx<{ row: DncRow; created: boolean }>): Promise<{ row: DncRow; created: boolean }> {
  return writeWithin(db, within, async (q) => {
    const row = await q.oneOrNone<DncRow>(
      `INSERT INTO dnc_numbers (id, organization_id, phone_number, reason) VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, phone_number) WHERE removed_at IS NULL DO NOTHING RETURNING ${COLS}`,
      [uuidv7(), organizationId, phone, reason]);
    if (row) return { row, created: true };
    return { row: await q.one<DncRow>(
      `SELECT ${COLS} FROM dnc_numbers WHERE organization_id = $1 AND phone_number = $2 AND removed_at IS NULL`,
      [organizationId, phone]), created: false };
  });
}

export async function removeDnc(db: Db, organizationId: string, phone: string, within?: WithinTx<void>): Promise<void> {
  await writeWithin(db, within, async (q) => {
    const r = await q.result('UPDATE dnc_numbers SET removed_at = now() WHERE organization_id = $1 AND phone_number = $2 AND removed_at IS NULL',
      [organizationId, phone]);
    if (r.rowCount === 0) throw notFound(`${phone} on the Do-Not-Call list`);
  });
}

export async function listDnc(db: Db, organizationId: string, p: PageParams): Promise<DncRow[]> {
  const k = keysetClause('id', p, 2);
  return db.any(`SELECT ${COLS} FROM dnc_numbers WHERE organization_id = $1 AND removed_at IS NULL${k.where}${k.tail}`,
    [organizationId, ...k.values]);
}

export async function isOnDnc(db: Db, organizationId: string, phone: string): Promise<boolean> {
  return (await db.oneOrNone('SELECT 1 FROM dnc_numbers WHERE organization_id = $1 AND phone_number = $2 AND removed_at IS NULL',
    [organizationId, phone])) !== null;
}
