// Where a caller ID is accepted as from_number: the one rule shared by every path that checks a caller ID
// (placeCall for POST /v1/calls/dial, POST /v1/calls, /v1/webrtc-token and /v1/room-token; mintClientToken for
// client tokens). A number the organization holds is checked by those paths themselves; this answers for the
// others: a verified caller ID is usable, a pending one is refused with 422 call_id_not_verified, anything else is
// left to the path's own answer.
import type { Db, Tx } from '../db.ts';
import { ApiError } from '../errors.ts';

/** The verified caller IDs among `numbers` ([field, number] pairs of the request); throws call_id_not_verified
 *  naming every field whose number is a caller ID still pending verification. */
export async function verifiedCallerIds(db: Db | Tx, organizationId: string, numbers: [field: string, number: string][]): Promise<Set<string>> {
  if (!numbers.length) return new Set();
  const rows = await db.any<{ phone_number: string; status: string }>(
    `SELECT phone_number, status FROM caller_ids WHERE organization_id = $1 AND phone_number = ANY($2::text[]) AND removed_at IS NULL`,
    [organizationId, numbers.map(([, n]) => n)]);
  const status = new Map(rows.map((r) => [r.phone_number, r.status]));
  const pending: Record<string, string> = {};
  for (const [field, n] of numbers) if (status.get(n) === 'pending') pending[field] = 'is a caller ID pending verification';
  if (Object.keys(pending).length) {
    throw new ApiError('call_id_not_verified', 'The caller ID has not been verified yet.', {
      fields: pending,
      resolutionHint: 'Verify it first: POST /v1/caller-ids/{id}/verify places the call that speaks the code, then POST /v1/caller-ids/{id}/confirm.',
    });
  }
  return new Set(rows.filter((r) => r.status === 'verified').map((r) => r.phone_number));
}

/** At origination, under the call's lock: whether a call without a held number may still go out from `number`: a
 *  caller ID still verified and not removed (FOR SHARE holds off its removal until the call's transaction ends), or
 *  else an ACTIVE number of the organization. */
export async function callerIdStillUsable(t: { oneOrNone: Db['oneOrNone'] }, organizationId: string, number: string): Promise<boolean> {
  const verified = await t.oneOrNone(
    `SELECT 1 FROM caller_ids WHERE organization_id = $1 AND phone_number = $2 AND status = 'verified' AND removed_at IS NULL FOR SHARE`,
    [organizationId, number]);
  if (verified) return true;
  return (await t.oneOrNone(
    `SELECT 1 FROM phone_numbers WHERE organization_id = $1 AND phone_number = $2 AND status = 'ACTIVE' FOR SHARE`,
    [organizationId, number])) !== null;
}
