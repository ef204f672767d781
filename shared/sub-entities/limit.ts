// The one rule of a credential limited to a sub-entity (an API key made with sub_entity_id, and every client token it
// mints: Principal.subEntityId). Such a credential sees and touches only that sub-entity's numbers, calls, contacts and
// SMS messages:
//   - lists: the sub_entity_id filter is forced to its own (listFilter; naming another sub-entity matches nothing);
//   - ids: a resource of another sub-entity, or of none (the organization's), answers not_found exactly as another
//     organization's would (assertWithin), so nothing leaks;
//   - creating: what it creates lands in its sub-entity (createIn: sub_entity_id omitted means its own; naming another,
//     or null, is a validation_error);
//   - placing a call or sending an SMS: from a number outside its sub-entity is refused with forbidden and
//     fields.from_number (assertNumberWithin), as the caller-ID ceiling is (shared/tokens/bounds.ts);
//   - what belongs to the whole organization (making keys, HIPAA mode, creating or deleting sub-entities) answers
//     forbidden (assertWholeOrganization).
// Routes and domain functions ask this module; none reads Principal.subEntityId itself.
import type { Principal } from '../accounts/principal.ts';
import type { Db, Tx } from '../db.ts';
import { DomainError, notFound, validationError } from '../errors.ts';

/** The id that matches no row (a list filter naming another sub-entity than the credential's). */
const NOTHING = '00000000-0000-0000-0000-000000000000';

/** The sub-entity the credential is limited to, or null (the whole organization). */
export const limitOf = (p: Principal): string | null => p.subEntityId ?? null;

/** The sub_entity_id filter a list applies: the request's for a credential of the whole organization; the credential's
 *  own sub-entity for a limited one (a request naming another sub-entity gets an empty list). Call it after the
 *  request's filter was validated (assertSubEntityFilter). */
export function listFilter(p: Principal, requested: string | undefined): string | undefined {
  const limit = limitOf(p);
  if (limit === null) return requested;
  return requested === undefined || requested === limit ? limit : NOTHING;
}

/** Whether the credential may see a resource of that sub-entity (or of none). */
export const within = (p: Principal, subEntityId: string | null | undefined): boolean => {
  const limit = limitOf(p);
  return limit === null || subEntityId === limit;
};

/** A resource read by id: null, or one outside the credential's sub-entity, is not_found ("<what> was not found"),
 *  the same answer as another organization's id. Answers the row for chaining. */
export function assertWithin<T extends { sub_entity_id: string | null }>(p: Principal, row: T | null | undefined, what: string): T {
  if (!row || !within(p, row.sub_entity_id)) throw notFound(what);
  return row;
}

/** The sub_entity_id a new or changed resource gets from a limited credential: omitted means its own; its own is
 *  accepted; another (or null, none) is a validation_error on the field. A credential of the whole organization
 *  passes the request's value through (undefined stays undefined). */
export function createIn(p: Principal, given: string | null | undefined, field = 'sub_entity_id'): string | null | undefined {
  const limit = limitOf(p);
  if (limit === null) return given;
  if (given === undefined || given === limit) return limit;
  throw validationError({ [field]: `this credential is limited to sub-entity ${limit}: omit ${field} or give that id` });
}

/** Placing a call or sending an SMS from a number: for a limited credential the number must belong to its sub-entity
 *  (numberSubEntityId: the number's, null for a number of none or not the organization's). */
export function assertNumberWithin(p: Principal, numberSubEntityId: string | null, field: string, phoneNumber: string): void {
  const limit = limitOf(p);
  if (limit === null || numberSubEntityId === limit) return;
  throw new DomainError('forbidden', `${field} ${phoneNumber} is not a number of sub-entity ${limit}, the only one this credential may use.`,
    { fields: { [field]: `is not a number of sub-entity ${limit} (this credential is limited to it)` },
      resolutionHint: 'Use a number of the credential\'s sub-entity (GET /v1/phone-numbers lists them), or a key of the whole organization.' });
}

/** The same, reading the number's sub-entity (one round trip, only for a limited credential). */
export async function assertNumberWithinDb(db: Db | Tx, p: Principal, phoneNumber: string, field: string): Promise<void> {
  if (limitOf(p) === null) return;
  const r = await db.oneOrNone<{ sub_entity_id: string | null }>(
    `SELECT sub_entity_id FROM phone_numbers WHERE organization_id = $1 AND phone_number = $2 AND status <> 'RELEASED'`,
    [p.organizationId, phoneNumber]);
  assertNumberWithin(p, r?.sub_entity_id ?? null, field, phoneNumber);
}

/** What only a credential of the whole organization may do (make keys, change HIPAA mode, create or delete
 *  sub-entities): forbidden for a limited one. */
export function assertWholeOrganization(p: Principal, action: string, field?: string): void {
  const limit = limitOf(p);
  if (limit === null) return;
  throw new DomainError('forbidden', `This credential is limited to sub-entity ${limit}; ${action} needs a credential of the whole organization.`,
    { fields: field ? { [field]: 'needs a credential of the whole organization' } : undefined,
      resolutionHint: 'Use a key (or console session) that is not limited to a sub-entity.' });
}
