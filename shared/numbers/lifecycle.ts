import type { Static } from '@sinclair/typebox';
import type { PhoneNumberDetailResponse } from './schemas.ts';
import type { Db, Tx, WithinTx } from '../db.ts';
import { DomainError, notFound, validationError } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import { withdrawRegistration } from '../number-registration/registration.ts';
import { parseE164 } from '../phone/e164.ts';
import type { QueueRegistry } from '../queues/registry.ts';
import { availableSandboxNumbers, isSandboxInventoryNumber, SANDBOX_AREA_CODES } from './inventory.ts';
import { cnamFrom, insertPhoneNumber, phoneNumberView, type PhoneNumberRow } from './records.ts';

// The phone-number lifecycle: purchase (PROVISIONING) -> activation by the carrier (ACTIVE, number_purchased)
// -> release (RELEASED, number_released). Released rows stay as history; the partial unique index
// phone_numbers_held keeps a number with at most one organization at a time.

export interface LifecycleRow extends PhoneNumberRow {
  activated_at: Date | null;
  released_at: Date | null;
}

/** The webhook payload of number_purchased and number_released (the reference's Number lifecycle record). */
export function lifecycleRecord(r: PhoneNumberRow) {
  return { id: r.id, phone_number: r.phone_number, area_code: r.area_code, status: r.status, organization_id: r.organization_id };
}

/** A phone number with its lifecycle state: the list item plus status, area code and lifecycle times. */
export function numberDetailView(r: LifecycleRow): Static<typeof PhoneNumberDetailResponse> {
  return {
    ...phoneNumberView(r),
    area_code: r.area_code,
    activated_at: r.activated_at ? r.activated_at.toISOString() : null,
    released_at: r.released_at ? r.released_at.toISOString() : null,
  };
}

export interface PurchaseInput { phone_number?: string; area_code?: string; name?: string }

const AREA_CODES_TEXT = SANDBOX_AREA_CODES.join(', ');

export function assertSandboxAreaCode(areaCode: string, field = 'area_code'): void {
  if (!SANDBOX_AREA_CODES.includes(areaCode)) {
    throw validationError({ [field]: `must be a sandbox area code: ${AREA_CODES_TEXT}` });
  }
}

function validatePurchase(input: PurchaseInput): void {
  if (input.phone_number === undefined && input.area_code === undefined) {
    throw validationError({ phone_number: 'is required unless area_code is given' });
  }
  if (input.phone_number !== undefined && input.area_code !== undefined) {
    throw validationError({ area_code: 'give either phone_number or area_code, not both' });
  }
  if (input.phone_number !== undefined) {
    if (!parseE164(input.phone_number)) throw validationError({ phone_number: 'must be an E.164 number such as +14155550123' });
    if (!isSandboxInventoryNumber(input.phone_number)) {
      throw validationError({ phone_number: `is not in the sandbox inventory (+1 <area code> 555 <4 digits>; area codes ${AREA_CODES_TEXT})` });
    }
  }
  if (input.area_code !== undefined) assertSandboxAreaCode(input.area_code);
}

const isHeldViolation = (err: unknown) =>
  (err as { code?: string; constraint?: string }).code === '23505' && (err as { constraint?: string }).constraint === 'phone_numbers_held';

/** Numbers are sold here only by carriers that have an inventory: a SIP trunk's numbers (DIDs) come from its provider. */
export function assertNumbersPurchasable(carrier: string): void {
  if (carrier === 'sip') {
    throw new DomainError('numbers_from_trunk', 'Numbers cannot be bought here: with the SIP trunk carrier they come from the trunk provider.',
      { resolutionHint: 'Buy the number (DID) from your SIP trunk provider and ask your operator to bring it onto the organization.' });
  }
}

/** Buys a number for the organization: the row is inserted as PROVISIONING (the caller then enqueues the
 *  carrier's provisioning). 409 number_unavailable when the number, or every number of the area code, is held. */
export async function purchaseNumber(db: Db, who: { organizationId: string; userId: string | null }, input: PurchaseInput,
  within?: WithinTx<LifecycleRow>): Promise<LifecycleRow> {
  validatePurchase(input);
  return db.tx('purchase-number', async (tx) => {
    const row = await holdNumber(tx, who, input);
    await within?.(tx, row);
    return row;
  });
}

/** Inserts the PROVISIONING row of the purchase (the number asked for, or a free one of the area code). */
async function holdNumber(tx: Tx, who: { organizationId: string; userId: string | null }, input: PurchaseInput): Promise<LifecycleRow> {
  const org = await tx.one<{ name: string; owner_user_id: string | null }>(
    'SELECT name, owner_user_id FROM organizations WHERE id = $1', [who.organizationId]);
  const userId = who.userId ?? org.owner_user_id;
  if (!userId) throw validationError({ user: 'the organization has no user to own the number' });
  const insert = (phoneNumber: string) => tx.tx((sp) => insertPhoneNumber(sp, {
    organizationId: who.organizationId, userId, phoneNumber, name: input.name, status: 'PROVISIONING',
    cnamDisplayName: cnamFrom(org.name),
  })) as Promise<LifecycleRow>;

  if (input.phone_number !== undefined) {
    try {
      return await insert(input.phone_number);
    } catch (err) {
      if (!isHeldViolation(err)) throw err;
      const holder = await tx.oneOrNone(
        `SELECT organization_id FROM phone_numbers WHERE phone_number = $1 AND status <> 'RELEASED'`, [input.phone_number]);
      const mine = holder?.organization_id === who.organizationId;
      throw new DomainError('number_unavailable',
        mine ? 'This number already belongs to your organization.' : 'This number is held by another organization.',
        { fields: { phone_number: mine ? 'is already yours' : 'is not available' },
          resolutionHint: 'Pick another number from GET /v1/phone-numbers/available.' });
    }
  }
  // By area code: take a free number; when a concurrent buyer takes it first, try the next one.
  for (let round = 0; round < 5; round++) {
    const candidates = await availableSandboxNumbers(tx, input.area_code!, 3);
    if (!candidates.length) break;
    for (const n of candidates) {
      try {
        return await insert(n);
      } catch (err) {
        if (!isHeldViolation(err)) throw err;
      }
    }
  }
  throw new DomainError('number_unavailable', `No number is available in area code ${input.area_code}.`,
    { fields: { area_code: 'has no available numbers' }, resolutionHint: 'Try another sandbox area code.' });
}

/** The carrier finished provisioning: PROVISIONING -> ACTIVE and number_purchased, in one transaction. Returns null
 *  when there is nothing to do (already active, or released meanwhile), so a repeated job is harmless. */
export async function activateNumber(db: Db, id: number): Promise<LifecycleRow | null> {
  const row = await db.tx('activate-number', async (tx) => {
    const row = await tx.oneOrNone<LifecycleRow>(
      `UPDATE phone_numbers SET status = 'ACTIVE', activated_at = now(), reputation_enrolled_at = coalesce(reputation_enrolled_at, now())
        WHERE id = $1 AND status = 'PROVISIONING' RETURNING *`, [id]);
    if (!row) return null;
    await recordEvent(tx, { organizationId: row.organization_id, eventType: 'number_purchased', data: lifecycleRecord(row) });
    return row;
  });
  if (row) wakeRelay(db);
  return row;
}

/** Releases a held number (provisioning or active): RELEASED with released_at, number_released; the row is kept.
 *  Its registration with the call-analytics providers is withdrawn in the same transaction. */
export async function releaseNumber(db: Db, queues: QueueRegistry, organizationId: string, id: number, within?: WithinTx<LifecycleRow>): Promise<LifecycleRow> {
  const row = await db.tx('release-number', async (tx) => {
    const row = await tx.oneOrNone<LifecycleRow>(
      `UPDATE phone_numbers SET status = 'RELEASED', released_at = now()
        WHERE id = $1 AND organization_id = $2 AND status <> 'RELEASED' RETURNING *`, [id, organizationId]);
    if (!row) throw notFound('Phone number');
    await recordEvent(tx, { organizationId, eventType: 'number_released', data: lifecycleRecord(row) });
    await withdrawRegistration(tx, queues, row);
    await within?.(tx, row);
    return row;
  });
  wakeRelay(db);
  return row;
}

/** One of the organization's numbers, released ones included (history). */
export async function getNumber(db: Db | Tx, organizationId: string, id: number): Promise<LifecycleRow> {
  const row = await db.oneOrNone<LifecycleRow>('SELECT * FROM phone_numbers WHERE id = $1 AND organization_id = $2', [id, organizationId]);
  if (!row) throw notFound('Phone number');
  return row;
}

/** Purchasable sandbox numbers: of one area code, or spread over every sandbox area code. */
export async function availableNumbers(db: Db, areaCode: string | undefined, limit: number) {
  if (areaCode !== undefined) assertSandboxAreaCode(areaCode);
  return db.task(async (t) => {
    const out: string[] = [];
    const codes = areaCode !== undefined ? [areaCode] : SANDBOX_AREA_CODES;
    const per = Math.ceil(limit / codes.length);
    for (const code of codes) {
      if (out.length >= limit) break;
      out.push(...await availableSandboxNumbers(t, code, Math.min(per, limit - out.length)));
    }
    return out.map((n) => ({ phone_number: n, area_code: n.slice(2, 5), iso_country: 'US', provider: 'sandbox' }));
  });
}

/** Numbers still PROVISIONING after `olderThanMs` (their provisioning job may have been lost). */
export async function staleProvisioning(db: Db, olderThanMs: number): Promise<number[]> {
  const rows = await db.any(
    `SELECT id FROM phone_numbers WHERE status = 'PROVISIONING' AND created_at < now() - $1 * interval '1 millisecond' LIMIT 1000`,
    [olderThanMs]);
  return rows.map((r) => r.id as number);
}
