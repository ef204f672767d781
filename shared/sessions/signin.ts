// Sign-in with email and password. Unknown emails and wrong passwords answer the same refusal after the same work
// (scrypt always runs: against a dummy hash when there is no such user or it has no password yet). Failures are
// counted per email and per client address in a sliding window; over either limit every attempt (known email or
// not, right password or not) answers rate_limited with Retry-After until the window has room again.
import type { ConsoleSettings } from '../config.ts';
import type { Db } from '../db.ts';
import { DomainError } from '../errors.ts';
import { findActiveUserByEmail, normalizeEmail, type UserRow } from '../users/members.ts';
import { verifyPassword } from '../users/passwords.ts';
import { createSession, type NewSession } from './sessions.ts';

const refused = () => new DomainError('unauthorized', 'The email or password is incorrect.');

export interface SignInInput { email: string; password: string; address: string; userAgent: string | null }

/** Seconds until the lockout lets this email and address try again; 0 when it does now. */
async function lockedFor(db: Db, email: string, address: string, s: ConsoleSettings): Promise<number> {
  const row = await db.one(
    `WITH e AS (SELECT at FROM signin_failures WHERE email = $1 AND at > now() - $3 * interval '1 millisecond' ORDER BY at DESC LIMIT $4),
          a AS (SELECT at FROM signin_failures WHERE address = $2 AND at > now() - $3 * interval '1 millisecond' ORDER BY at DESC LIMIT $5)
     SELECT (SELECT count(*) FROM e)::int AS e_n, (SELECT min(at) FROM e) AS e_oldest,
            (SELECT count(*) FROM a)::int AS a_n, (SELECT min(at) FROM a) AS a_oldest, now() AS now`,
    [email, address, s.failureWindowMs, s.maxFailuresPerEmail, s.maxFailuresPerAddress]);
  let wait = 0;
  // The window has room again once the oldest of the last `max` failures leaves it.
  if (row.e_n >= s.maxFailuresPerEmail) wait = Math.max(wait, row.e_oldest.getTime() + s.failureWindowMs - row.now.getTime());
  if (row.a_n >= s.maxFailuresPerAddress) wait = Math.max(wait, row.a_oldest.getTime() + s.failureWindowMs - row.now.getTime());
  return wait > 0 ? Math.max(1, Math.ceil(wait / 1000)) : 0;
}

export async function signIn(db: Db, s: ConsoleSettings, input: SignInInput): Promise<{ user: UserRow; session: NewSession }> {
  const email = normalizeEmail(input.email).slice(0, 254);
  const wait = await lockedFor(db, email, input.address, s);
  if (wait > 0) {
    throw new DomainError('rate_limited', `Too many failed sign-ins for this email or from this address; retry in ${wait} s.`,
      { retryAfterSeconds: wait, resolutionHint: 'Wait, or reset the password (POST /v1/password-reset).' });
  }
  const user = await findActiveUserByEmail(db, email);
  const ok = await verifyPassword(input.password, user?.password_hash ?? null);
  if (!ok || !user) {
    await db.none(`WITH gone AS (DELETE FROM signin_failures WHERE at < now() - $3 * interval '1 millisecond')
                   INSERT INTO signin_failures (email, address) VALUES ($1, $2)`, [email, input.address, s.failureWindowMs]);
    throw refused();
  }
  await db.none('DELETE FROM signin_failures WHERE email = $1', [email]);
  const session = await createSession(db, { userId: user.id, organizationId: user.organization_id, maxMs: s.sessionMaxMs,
    ip: input.address, userAgent: input.userAgent });
  return { user, session };
}
