// Helpers of the reputation test files: numbers with chosen endings (the sandbox provider's evidence depends on the
// last digit: 7 TMOBILE HIGH, 8 ATT MEDIUM + VERIZON HIGH, 9 VERIZON unavailable, 0 all unavailable, else LOW).
import { insertPhoneNumber } from '../../shared/numbers/records.ts';
import type { TestEnv } from '../helpers/env.ts';

export interface RepOrg { organization_id: string; user_id: string; api_key: string }

/** Gives the organization an ACTIVE, enrolled number; answers its id. */
export async function addNumber(env: TestEnv, org: RepOrg, phoneNumber: string): Promise<number> {
  const row = await env.db.tx((tx) => insertPhoneNumber(tx, {
    organizationId: org.organization_id, userId: org.user_id, phoneNumber, status: 'ACTIVE', cnamDisplayName: 'Test',
  }));
  return Number(row.id);
}

/** A fictional +1 628 exchange number whose last four digits are `line` (keeps clear of the sandbox inventory). */
export const num = (exchange: number, line: number) => `+1628${exchange}${String(line).padStart(4, '0')}`;

export async function counts(env: TestEnv, orgId: string) {
  return env.db.one<{ charges: number; cents: number; lookups: number; attempts: number }>(
    `SELECT (SELECT count(*)::int FROM spend_charges WHERE organization_id = $1 AND kind = 'reputation_check') AS charges,
            (SELECT COALESCE(sum(cents), 0)::int FROM spend_charges WHERE organization_id = $1) AS cents,
            (SELECT count(*)::int FROM reputation_lookups WHERE organization_id = $1) AS lookups,
            (SELECT COALESCE(sum(attempts), 0)::int FROM reputation_lookups WHERE organization_id = $1) AS attempts`, [orgId]);
}
