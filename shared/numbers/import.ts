// Numbers from the trunk: the DIDs a SIP trunk provider sold are brought onto an organization as held numbers
// (source 'imported', provider 'sip'), ACTIVE at once: the provider already routes them to the trunk, so there is
// nothing to provision. They then behave like bought numbers (caller IDs, Number Health, release).
//
// One rule set for the operator CLI (infra/admin.ts `number import`) and the owners' route
// (POST /v1/phone-numbers/import): the whole request is checked first (E.164, no repeats, batch size) and refused
// with `fields` when anything is malformed, writing nothing; then each number gets its own result:
//   imported      the number is now the organization's (number_purchased fires, as for a bought number going ACTIVE);
//   already_held  the organization holds it already (a repeated import changes nothing: idempotent);
//   refused       another organization holds it (error number_unavailable, as when buying a held number).
import type { Db, Tx, WithinTx } from '../db.ts';
import { DomainError, validationError } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import { parseE164 } from '../phone/e164.ts';
import { lifecycleRecord, numberDetailView, type LifecycleRow } from './lifecycle.ts';
import { cnamFrom, insertPhoneNumber } from './records.ts';

/** Numbers per import request: one transaction each, so a request stays short. */
export const IMPORT_BATCH_MAX = 100;
/** The provider recorded on imported numbers: the SIP trunk carrier's name. */
export const IMPORTED_PROVIDER = 'sip';

export type ImportOutcome =
  | { phone_number: string; result: 'imported' | 'already_held'; number: ReturnType<typeof numberDetailView> }
  | { phone_number: string; result: 'refused'; error: { code: 'number_unavailable'; message: string } };

export interface ImportSummary {
  results: ImportOutcome[];
  imported: number;
  already_held: number;
  refused: number;
}

/** Importing through the API is for the trunk carrier: with the sandbox (or LiveKit) numbers are bought from the
 *  carrier's inventory, and an owner could otherwise claim any real number on a platform that never routes it. */
export function assertNumbersImportable(carrier: string): void {
  if (carrier !== 'sip') {
    throw new DomainError('numbers_not_importable', `Numbers are imported only with the SIP trunk carrier; this platform runs the ${carrier} carrier.`,
      { resolutionHint: 'Buy numbers with POST /v1/phone-numbers (GET /v1/phone-numbers/available lists them).' });
  }
}

/** Checks the request's numbers (field name `field[i]` in `fields`); throws validation_error and writes nothing when
 *  any is malformed, repeated, or when there are none or too many. Answers them as given. */
export function checkImportNumbers(numbers: readonly unknown[], field = 'numbers'): string[] {
  if (numbers.length === 0) throw validationError({ [field]: 'must list at least one number' });
  if (numbers.length > IMPORT_BATCH_MAX) throw validationError({ [field]: `must list at most ${IMPORT_BATCH_MAX} numbers (import more in several requests)` });
  const fields: Record<string, string> = {};
  const first = new Map<string, number>();
  numbers.forEach((n, i) => {
    if (typeof n !== 'string' || !parseE164(n)) fields[`${field}[${i}]`] = 'must be an E.164 number such as +14155550123';
    else if (first.has(n)) fields[`${field}[${i}]`] = `repeats ${field}[${first.get(n)}]`;
    else first.set(n, i);
  });
  if (Object.keys(fields).length) throw validationError(fields);
  return numbers as string[];
}

const isHeldViolation = (err: unknown) =>
  (err as { code?: string }).code === '23505' && (err as { constraint?: string }).constraint === 'phone_numbers_held';

/** Imports checked numbers (checkImportNumbers) onto the organization in one transaction; `within` joins it (an
 *  Idempotency-Key's record). The number's user is `userId`, else the organization's owner. */
export async function importNumbers(db: Db, who: { organizationId: string; userId: string | null }, numbers: string[],
  o: { name?: string } = {}, within?: WithinTx<ImportSummary>): Promise<ImportSummary> {
  const summary = await db.tx('import-numbers', async (tx) => {
    const org = await tx.oneOrNone<{ name: string; owner_user_id: string | null }>(
      'SELECT name, owner_user_id FROM organizations WHERE id = $1', [who.organizationId]);
    if (!org) throw validationError({ organization: 'does not exist' });
    const userId = who.userId ?? org.owner_user_id;
    if (!userId) throw validationError({ user: 'the organization has no user to own the numbers' });
    const out: ImportSummary = { results: [], imported: 0, already_held: 0, refused: 0 };
    for (const phoneNumber of numbers) {
      const r = await importOne(tx, who.organizationId, userId, cnamFrom(org.name), phoneNumber, o.name);
      out[r.result]++;
      out.results.push(r);
    }
    await within?.(tx, out);
    return out;
  });
  if (summary.imported) wakeRelay(db);
  return summary;
}

async function importOne(tx: Tx, organizationId: string, userId: string, cnam: string, phoneNumber: string, name?: string): Promise<ImportOutcome> {
  try {
    // A savepoint: a number held elsewhere fails only its own insert.
    const row = await tx.tx((sp) => insertPhoneNumber(sp, {
      organizationId, userId, phoneNumber, name, status: 'ACTIVE', cnamDisplayName: cnam, provider: IMPORTED_PROVIDER, source: 'imported',
    })) as LifecycleRow;
    await recordEvent(tx, { organizationId, eventType: 'number_purchased', data: lifecycleRecord(row) });
    return { phone_number: phoneNumber, result: 'imported', number: numberDetailView(row) };
  } catch (err) {
    if (!isHeldViolation(err)) throw err;
  }
  const held = await tx.oneOrNone<LifecycleRow>(`SELECT * FROM phone_numbers WHERE phone_number = $1 AND status <> 'RELEASED'`, [phoneNumber]);
  if (held?.organization_id === organizationId) return { phone_number: phoneNumber, result: 'already_held', number: numberDetailView(held) };
  return { phone_number: phoneNumber, result: 'refused', error: { code: 'number_unavailable', message: 'This number is held by another organization.' } };
}
