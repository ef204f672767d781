import type { Static } from '@sinclair/typebox';
import type { CallerIdResponse } from './schemas.ts';
// Caller IDs: external numbers an organization proves it controls, by answering a call that speaks a code, so it
// may use them as from_number. The rules of adding, verifying and removing live here; where a verified caller ID
// is accepted as a caller ID is shared/caller-ids/standing.ts.
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config.ts';
import { BLOCK_MESSAGES, classifyDestination } from '../calls/destinations.ts';
import type { Db, Tx, WithinTx } from '../db.ts';
import { DomainError, notFound, validationError } from '../errors.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import { parseE164 } from '../phone/e164.ts';
import { callerIdHeldElsewhere, heldElsewhere } from './standing.ts';
import { verificationCaller } from './verification-call.ts';

/** Live (not removed) caller IDs an organization may hold. */
export const CALLER_ID_LIMIT = 20;
/** A spoken code is valid this long. Not scaled by SANDBOX_TIME_SCALE: it is a security bound, not a delay. */
export const CODE_TTL_SECONDS = 600;
export const CODE_DIGITS = 6;
/** Wrong codes accepted per verification call; the last one locks the code (a new call is needed). */
export const MAX_CODE_ATTEMPTS = 5;
/** Verification calls per caller ID per rolling hour: with MAX_CODE_ATTEMPTS, at most 25 guesses an hour. */
export const MAX_CALLS_PER_HOUR = 5;

export interface CallerIdRow {
  id: string;
  organization_id: string;
  phone_number: string;
  name: string;
  status: 'pending' | 'verified';
  code_hash: Buffer | null;
  code_expires_at: Date | null;
  code_attempts: number;
  locked_at: Date | null;
  verified_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const callerIdView = (r: CallerIdRow): Static<typeof CallerIdResponse> => {
  const live = r.status === 'pending' && r.code_hash !== null;
  return {
    id: r.id,
    phone_number: r.phone_number,
    name: r.name,
    status: r.status,
    verification: r.status === 'verified' ? null : {
      state: r.locked_at ? 'locked' as const : !live ? 'not_started' as const
        : r.code_expires_at! <= new Date() ? 'expired' as const : 'code_sent' as const,
      expires_at: live ? r.code_expires_at!.toISOString() : null,
      attempts_remaining: live ? MAX_CODE_ATTEMPTS - r.code_attempts : null,
    },
    verified_at: r.verified_at?.toISOString() ?? null,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
};

const COLUMNS = `id, organization_id, phone_number, name, status, code_hash, code_expires_at, code_attempts, locked_at,
  verified_at, created_at, updated_at`;

let secretCache: { db: Db; secret: Buffer } | null = null;
async function codeSecret(db: Db | Tx): Promise<Buffer> {
  if (secretCache?.db === db) return secretCache.secret;
  const { secret } = await db.one<{ secret: Buffer }>(`SELECT secret FROM server_secrets WHERE name = 'caller_id_code'`);
  secretCache = { db: db as Db, secret };
  return secret;
}

/** Codes are short, so a bare hash would fall to a table of a million entries: keyed with a server secret and
 *  salted with the caller ID's id. */
const hashCode = (secret: Buffer, callerIdId: string, code: string) =>
  createHmac('sha256', secret).update(`${callerIdId}:${code}`).digest();

export async function findCallerId(db: Db | Tx, organizationId: string, id: string, lock = false): Promise<CallerIdRow | null> {
  if (!isUuid(id)) return null;
  return db.oneOrNone(`SELECT ${COLUMNS} FROM caller_ids WHERE id = $1 AND organization_id = $2 AND removed_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
    [id, organizationId]);
}

export async function getCallerId(db: Db | Tx, organizationId: string, id: string, lock = false): Promise<CallerIdRow> {
  const row = await findCallerId(db, organizationId, id, lock);
  if (!row) throw notFound(`Caller ID ${id}`);
  return row;
}

export async function listCallerIds(db: Db, organizationId: string, p: PageParams, status?: 'pending' | 'verified'): Promise<CallerIdRow[]> {
  const k = keysetClause('id', p, 3);
  return db.any(`SELECT ${COLUMNS} FROM caller_ids WHERE organization_id = $1 AND removed_at IS NULL
    AND ($2::text IS NULL OR status = $2)${k.where}${k.tail}`, [organizationId, status ?? null, ...k.values]);
}

export interface AddCallerId { phone_number: string; name?: string }

export async function addCallerId(db: Db, organizationId: string, input: AddCallerId, within?: WithinTx<CallerIdRow>): Promise<CallerIdRow> {
  const n = input.phone_number;
  if (!parseE164(n)) throw validationError({ phone_number: 'must be an E.164 number, e.g. +14155550123' });
  return db.tx(async (tx) => {
    // The organization row lock serializes adds, so the cap holds under concurrency.
    const org = await tx.one<{ allow_countries: string[] }>('SELECT allow_countries FROM organizations WHERE id = $1 FOR UPDATE', [organizationId]);
    // A caller ID must be a number the verification call can dial: the destination rules decide.
    const v = classifyDestination(n, org.allow_countries);
    if (!v.ok) {
      throw validationError({ phone_number: v.code === 'destination_invalid' ? 'is not a dialable number' : `${BLOCK_MESSAGES[v.reason]}; it cannot be a caller ID` });
    }
    const own = await tx.oneOrNone<{ id: string }>(
      `SELECT id FROM phone_numbers WHERE organization_id = $1 AND phone_number = $2 AND status <> 'RELEASED'`, [organizationId, n]);
    if (own) {
      throw new DomainError('caller_id_exists', `${n} is already a number of your organization; use it as from_number directly.`,
        { fields: { phone_number: `is your organization's number ${own.id}` } });
    }
    // The verification call would reach the platform itself, not the holder: never proof of control.
    if (await heldElsewhere(tx, organizationId, n)) throw callerIdHeldElsewhere(['phone_number'], [n]);
    const dup = await tx.oneOrNone<{ id: string }>(
      'SELECT id FROM caller_ids WHERE organization_id = $1 AND phone_number = $2 AND removed_at IS NULL', [organizationId, n]);
    if (dup) {
      throw new DomainError('caller_id_exists', `${n} is already a caller ID of your organization.`,
        { fields: { phone_number: 'is already a caller ID', conflicts_with: dup.id } });
    }
    const { count } = await tx.one<{ count: number }>(
      'SELECT count(*)::int AS count FROM caller_ids WHERE organization_id = $1 AND removed_at IS NULL', [organizationId]);
    if (count >= CALLER_ID_LIMIT) {
      throw new DomainError('caller_id_limit_exceeded', `Your organization holds ${count} caller IDs, the most it may hold (${CALLER_ID_LIMIT}).`,
        { resolutionHint: 'Remove a caller ID you no longer use (DELETE /v1/caller-ids/{id}).' });
    }
    const row = await tx.one<CallerIdRow>(`INSERT INTO caller_ids (id, organization_id, phone_number, name) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
      [uuidv7(), organizationId, n, input.name ?? '']);
    await within?.(tx, row);
    return row;
  });
}

const alreadyVerified = (r: CallerIdRow) =>
  new DomainError('caller_id_already_verified', `Caller ID ${r.id} is already verified (status verified).`);

/** Places a verification call speaking a new code (replacing any earlier code, and clearing a lockout). */
export async function placeVerificationCall(db: Db, config: Pick<Config, 'carrier'>, organizationId: string, id: string,
  within?: WithinTx<CallerIdRow>): Promise<CallerIdRow> {
  const secret = await codeSecret(db);
  return db.tx(async (tx) => {
    const row = await getCallerId(tx, organizationId, id, true);
    if (row.status === 'verified') throw alreadyVerified(row);
    // Another organization may have bought the number since it was added.
    if (await heldElsewhere(tx, organizationId, row.phone_number)) throw callerIdHeldElsewhere(['phone_number'], [row.phone_number]);
    const caller = verificationCaller(config);
    const recent = await tx.one<{ count: number; retry_after: number | null }>(
      `SELECT count(*)::int AS count,
              ceil(extract(epoch FROM min(placed_at) + interval '1 hour' - now()))::int AS retry_after
         FROM caller_id_verification_calls WHERE caller_id_id = $1 AND placed_at > now() - interval '1 hour'`, [id]);
    if (recent.count >= MAX_CALLS_PER_HOUR) {
      const retry = Math.max(1, recent.retry_after ?? 1);
      throw new DomainError('rate_limited', `At most ${MAX_CALLS_PER_HOUR} verification calls per caller ID per hour; retry after ${retry} s.`,
        { retryAfterSeconds: retry });
    }
    const code = String(randomInt(0, 10 ** CODE_DIGITS)).padStart(CODE_DIGITS, '0');
    const updated = await tx.one<CallerIdRow>(
      `UPDATE caller_ids SET code_hash = $2, code_expires_at = now() + make_interval(secs => $3), code_attempts = 0,
              locked_at = NULL, updated_at = now()
        WHERE id = $1 RETURNING ${COLUMNS}`, [id, hashCode(secret, id, code), CODE_TTL_SECONDS]);
    await tx.none('INSERT INTO caller_id_verification_calls (caller_id_id, organization_id, carrier) VALUES ($1, $2, $3)',
      [id, organizationId, caller.name]);
    await caller.place(tx, { organizationId, callerIdId: id, phoneNumber: row.phone_number, code });
    await within?.(tx, updated);
    return updated;
  });
}

type ConfirmOutcome =
  | { ok: true; row: CallerIdRow }
  | { ok: false; error: DomainError };

/** Checks a code against the live one (constant-time). A wrong code counts an attempt, committed before the
 *  error is answered; the last allowed wrong attempt locks the code. */
export async function confirmCallerId(db: Db, organizationId: string, id: string, code: string, within?: WithinTx<CallerIdRow>): Promise<CallerIdRow> {
  if (!new RegExp(`^[0-9]{${CODE_DIGITS}}$`).test(code)) {
    // Malformed input is refused without counting an attempt (it could not have matched).
    await getCallerId(db, organizationId, id);
    throw validationError({ code: `must be the ${CODE_DIGITS} digits the verification call spoke` });
  }
  const secret = await codeSecret(db);
  const outcome = await db.tx(async (tx): Promise<ConfirmOutcome> => {
    const row = await getCallerId(tx, organizationId, id, true);
    if (row.status === 'verified') return { ok: false, error: alreadyVerified(row) };
    const again = 'Place a new verification call (POST /v1/caller-ids/{id}/verify).';
    if (row.locked_at) {
      return { ok: false, error: new DomainError('verification_locked',
        `The code of caller ID ${id} is locked after ${MAX_CODE_ATTEMPTS} wrong attempts.`, { resolutionHint: again }) };
    }
    if (!row.code_hash) {
      return { ok: false, error: new DomainError('verification_not_started', `No verification call has been placed for caller ID ${id} (status pending).`,
        { resolutionHint: again }) };
    }
    if (row.code_expires_at! <= (await tx.one<{ now: Date }>('SELECT now()')).now) {
      return { ok: false, error: new DomainError('verification_code_expired',
        `The code of caller ID ${id} expired at ${row.code_expires_at!.toISOString()} (codes are valid ${CODE_TTL_SECONDS / 60} minutes).`,
        { resolutionHint: again }) };
    }
    if (timingSafeEqual(hashCode(secret, id, code), row.code_hash)) {
      const verified = await tx.one<CallerIdRow>(
        `UPDATE caller_ids SET status = 'verified', verified_at = now(), code_hash = NULL, code_expires_at = NULL,
                code_attempts = 0, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`, [id]);
      await within?.(tx, verified);
      return { ok: true, row: verified };
    }
    const attempts = row.code_attempts + 1;
    if (attempts >= MAX_CODE_ATTEMPTS) {
      await tx.none(`UPDATE caller_ids SET code_attempts = $2, code_hash = NULL, code_expires_at = NULL, locked_at = now(),
        updated_at = now() WHERE id = $1`, [id, attempts]);
      return { ok: false, error: new DomainError('verification_locked',
        `Wrong code; the code of caller ID ${id} is now locked after ${MAX_CODE_ATTEMPTS} wrong attempts.`, { resolutionHint: again }) };
    }
    await tx.none('UPDATE caller_ids SET code_attempts = $2, updated_at = now() WHERE id = $1', [id, attempts]);
    const left = MAX_CODE_ATTEMPTS - attempts;
    return { ok: false, error: new DomainError('verification_code_incorrect', `Wrong code; ${left} attempt${left === 1 ? '' : 's'} left.`,
      { fields: { code: `is not the code the verification call spoke (${left} attempt${left === 1 ? '' : 's'} left)` } }) };
  });
  if (!outcome.ok) throw outcome.error;
  return outcome.row;
}

/** Removes the caller ID: it can no longer be used as from_number. The row stays as history; the number may be
 *  added again later (and must then be verified again). */
export async function removeCallerId(db: Db, organizationId: string, id: string, within?: WithinTx<void>): Promise<CallerIdRow> {
  return db.tx(async (tx) => {
    const row = await tx.oneOrNone<CallerIdRow>(
      `UPDATE caller_ids SET removed_at = now(), code_hash = NULL, updated_at = now()
        WHERE id = $1 AND organization_id = $2 AND removed_at IS NULL RETURNING ${COLUMNS}`, [isUuid(id) ? id : null, organizationId]);
    if (!row) throw notFound(`Caller ID ${id}`);
    await within?.(tx, undefined);
    return row;
  });
}
