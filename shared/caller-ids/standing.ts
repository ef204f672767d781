// Where a caller ID is accepted as from_number: the one rule shared by every path that checks a caller ID
// (placeCall for POST /v1/calls/dial, POST /v1/calls, /v1/webrtc-token and /v1/room-token; mintClientToken for
// client tokens). A number the organization holds is checked by those paths themselves; this answers for the
// others: a verified caller ID is usable, a pending one is refused with 422 call_id_not_verified, one that another
// organization holds on the platform (it may have bought the number after the verification) with 409
// caller_id_held_elsewhere; anything else is left to the path's own answer.
import type { Db, Tx } from '../db.ts';
import { DomainError } from '../errors.ts';

/** SQL: whether an organization other than `org` holds `number` now (not released; phone_numbers_held allows one
 *  holder). `org` and `number` are SQL expressions (columns or parameters). */
export const heldElsewhereSql = (org: string, number: string) =>
  `EXISTS (SELECT 1 FROM phone_numbers h WHERE h.phone_number = ${number} AND h.status <> 'RELEASED' AND h.organization_id <> ${org})`;

export async function heldElsewhere(q: Db | Tx, organizationId: string, number: string): Promise<boolean> {
  const r = await q.one<{ held: boolean }>(`SELECT ${heldElsewhereSql('$1', '$2')} AS held`, [organizationId, number]);
  return r.held;
}

/** The refusal of a number another organization holds; says so without naming that organization. */
export function callerIdHeldElsewhere(fields: string[], numbers: string[]): DomainError {
  return new DomainError('caller_id_held_elsewhere',
    `${numbers.join(', ')} ${numbers.length > 1 ? 'are' : 'is'} held on this platform by another account and cannot be your caller ID.`, {
      fields: Object.fromEntries(fields.map((f) => [f, 'is held on this platform by another account'])),
      resolutionHint: 'Use a number of your organization (GET /v1/phone-numbers) or an external number no account here holds.',
    });
}

/** What the rule needs to know of one caller ID of the organization (a live caller_ids row). */
export interface CallerIdFacts { phone_number: string; status: 'pending' | 'verified'; held_elsewhere: boolean }

/** The facts as columns and a join of a query over `organizations o`, so the dial path reads them in its placement
 *  query; `number` names the parameter holding the caller ID, `own` a column that is null when the organization
 *  does not hold the number (only then is the caller ID looked at). Null columns: not a caller ID. */
export function callerIdSql(p: { number: string; own: string }): { columns: string; joins: string } {
  return {
    columns: `ci.status AS caller_id_status,
          CASE WHEN ci.id IS NOT NULL THEN ${heldElsewhereSql('o.id', p.number)} END AS caller_id_held_elsewhere`,
    joins: `LEFT JOIN caller_ids ci ON ${p.own} IS NULL AND ci.organization_id = o.id AND ci.phone_number = ${p.number} AND ci.removed_at IS NULL`,
  };
}

/** The usable (verified, held by no other organization) caller IDs among `numbers` ([field, number] pairs of the
 *  request), given the organization's caller IDs among them; throws caller_id_held_elsewhere, then
 *  call_id_not_verified, naming every field concerned. */
export function usableCallerIds(numbers: [field: string, number: string][], facts: CallerIdFacts[]): Set<string> {
  const byNumber = new Map(facts.map((f) => [f.phone_number, f]));
  const held: [string, string][] = [];
  const pending: Record<string, string> = {};
  for (const [field, n] of numbers) {
    const f = byNumber.get(n);
    if (f?.held_elsewhere) held.push([field, n]);
    else if (f?.status === 'pending') pending[field] = 'is a caller ID pending verification';
  }
  if (held.length) throw callerIdHeldElsewhere(held.map(([f]) => f), [...new Set(held.map(([, n]) => n))]);
  if (Object.keys(pending).length) {
    throw new DomainError('call_id_not_verified', 'The caller ID has not been verified yet.', {
      fields: pending,
      resolutionHint: 'Verify it first: POST /v1/caller-ids/{id}/verify places the call that speaks the code, then POST /v1/caller-ids/{id}/confirm.',
    });
  }
  return new Set(facts.filter((f) => f.status === 'verified' && !f.held_elsewhere).map((f) => f.phone_number));
}

/** usableCallerIds over the organization's caller IDs among `numbers`, read in one query. */
export async function verifiedCallerIds(db: Db | Tx, organizationId: string, numbers: [field: string, number: string][]): Promise<Set<string>> {
  if (!numbers.length) return new Set();
  const rows = await db.any<CallerIdFacts>(
    `SELECT c.phone_number, c.status, ${heldElsewhereSql('c.organization_id', 'c.phone_number')} AS held_elsewhere
       FROM caller_ids c WHERE c.organization_id = $1 AND c.phone_number = ANY($2::text[]) AND c.removed_at IS NULL`,
    [organizationId, numbers.map(([, n]) => n)]);
  return usableCallerIds(numbers, rows);
}

/** At origination, under the call's lock: whether a call without a held number may still go out from `number`: a
 *  caller ID still verified, not removed (FOR SHARE holds off its removal until the call's transaction ends) and
 *  held by no other organization, or else an ACTIVE number of the organization. */
export async function callerIdStillUsable(t: { oneOrNone: Db['oneOrNone'] }, organizationId: string, number: string): Promise<boolean> {
  const verified = await t.oneOrNone(
    `SELECT 1 FROM caller_ids WHERE organization_id = $1 AND phone_number = $2 AND status = 'verified' AND removed_at IS NULL
        AND NOT ${heldElsewhereSql('$1', '$2')} FOR SHARE`,
    [organizationId, number]);
  if (verified) return true;
  return (await t.oneOrNone(
    `SELECT 1 FROM phone_numbers WHERE organization_id = $1 AND phone_number = $2 AND status = 'ACTIVE' FOR SHARE`,
    [organizationId, number])) !== null;
}
