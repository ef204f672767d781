import type { Db } from '../db.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import type { PhoneNumberRow } from './records.ts';

/** The organization's held numbers (provisioning and active; released ones are history), one keyset page. */
export async function listPhoneNumbers(db: Db, organizationId: string, p: PageParams, f: { sub_entity_id?: string } = {}) {
  const values: unknown[] = [organizationId];
  let where = `organization_id = $1 AND status <> 'RELEASED'`;
  if (f.sub_entity_id !== undefined) { values.push(f.sub_entity_id); where += ` AND sub_entity_id = $${values.length}`; }
  const k = keysetClause('id', p, values.length + 1);
  return db.task(async (t) => {
    const rows = await t.any<PhoneNumberRow>(`SELECT * FROM phone_numbers WHERE ${where}${k.where}${k.tail}`, [...values, ...k.values]);
    const { n } = await t.one(`SELECT count(*)::int AS n FROM phone_numbers WHERE ${where}`, values);
    return { rows, total: n as number };
  });
}
