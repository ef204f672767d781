import type { Db } from '../db.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import type { PhoneNumberRow } from './records.ts';

/** The organization's held numbers (provisioning and active; released ones are history), one keyset page. */
export async function listPhoneNumbers(db: Db, organizationId: string, p: PageParams) {
  const k = keysetClause('id', p, 2);
  return db.task(async (t) => {
    const rows = await t.any<PhoneNumberRow>(
      `SELECT * FROM phone_numbers WHERE organization_id = $1 AND status <> 'RELEASED'${k.where}${k.tail}`,
      [organizationId, ...k.values],
    );
    const { n } = await t.one(
      `SELECT count(*)::int AS n FROM phone_numbers WHERE organization_id = $1 AND status <> 'RELEASED'`, [organizationId]);
    return { rows, total: n as number };
  });
}
