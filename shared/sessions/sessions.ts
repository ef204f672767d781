// Console sessions: the second kind of principal (beside API keys). The cookie ol_session holds 32 random bytes; the
// database keeps only their SHA-256. The CSRF token is derived from the same secret (so GET /v1/session can answer it
// again) and only its hash is stored. Every sign-in makes a new session (no fixation); sign-out, a password reset
// and a member's removal revoke sessions and announce it, so every gateway drops them from its cache before the
// request returns (as key revocation does, shared/accounts/revocation.ts).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Redis } from 'ioredis';
import { DEFAULT_RATE_LIMIT, type Principal } from '../accounts/principal.ts';
import { broadcastAndAwait } from '../broadcast.ts';
import type { Db, Tx } from '../db.ts';
import { sha256 } from '../ids.ts';
import type { Keyer } from '../redis.ts';
import { isRole, OWN_CALLS_ONLY, ROLE_SCOPES, type Role } from '../users/roles.ts';

export const SESSION_COOKIE = 'ol_session';
/** Redis channel on which revoked sessions are announced: a session id, or `user:<id>` for every session of a user
 *  (whose role changed: the cached principals carry the old scopes). */
export const SESSION_REVOKED_CHANNEL = 'events:session-revoked';

export interface SessionPrincipal extends Principal {
  kind: 'session';
  userId: string;
  role: Role;
  /** Epoch ms of the absolute expiry. */
  expiresAtMs: number;
  csrfHash: Buffer;
}

const csrfOf = (secret: string) => sha256(`csrf:${secret}`).toString('base64url');

/** The session secret in a Cookie header, if any (well-formed: 43 base64url characters). */
export function sessionSecretOf(cookieHeader: string | undefined): string | null {
  if (!cookieHeader) return null;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const v = part.slice(eq + 1).trim();
    return /^[A-Za-z0-9_-]{43}$/.test(v) ? v : null;
  }
  return null;
}

/** The CSRF token of a session secret (what the console sends as X-CSRF-Token). */
export const csrfToken = (secret: string) => csrfOf(secret);

/** Whether a request's X-CSRF-Token matches the session's. */
export function csrfMatches(p: SessionPrincipal, header: string | undefined): boolean {
  if (!header || header.length > 200) return false;
  return timingSafeEqual(sha256(header), p.csrfHash);
}

export interface NewSession { id: string; secret: string; csrfToken: string; expiresAt: Date }

export async function createSession(q: Db | Tx, s: { userId: string; organizationId: string; maxMs: number; ip: string | null; userAgent: string | null }): Promise<NewSession> {
  const secret = randomBytes(32).toString('base64url');
  const csrf = csrfOf(secret);
  const row = await q.one(
    `INSERT INTO sessions (token_hash, csrf_hash, user_id, organization_id, expires_at, ip, user_agent)
     VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond', $6, $7) RETURNING id, expires_at`,
    [sha256(secret), sha256(csrf), s.userId, s.organizationId, s.maxMs, s.ip, s.userAgent?.slice(0, 300) ?? null]);
  return { id: row.id, secret, csrfToken: csrf, expiresAt: row.expires_at };
}

/** The principal of a live session (not revoked, within both expiries, its user active), marking it seen now; null
 *  otherwise. Called once per cache period per gateway, so last_seen_at costs one write a minute at most. */
export async function findSession(db: Db, secret: string, idleMs: number): Promise<SessionPrincipal | null> {
  const row = await db.oneOrNone(
    `UPDATE sessions s SET last_seen_at = now()
       FROM users u
      WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > now()
        AND s.last_seen_at > now() - $2 * interval '1 millisecond'
        AND u.id = s.user_id AND u.disabled_at IS NULL
     RETURNING s.id, s.user_id, s.organization_id, s.expires_at, s.csrf_hash, u.role`,
    [sha256(secret), idleMs]);
  if (!row || !isRole(row.role)) return null;
  const role = row.role as Role;
  return {
    kind: 'session', keyId: row.id, credentialId: `ses_${row.id}`, organizationId: row.organization_id, userId: row.user_id,
    role, ownCallsOnly: OWN_CALLS_ONLY.has(role), scopes: ROLE_SCOPES[role], isDemo: false, allowedFrom: [], allowedTo: [],
    rateLimit: DEFAULT_RATE_LIMIT, expiresAtMs: row.expires_at.getTime(), csrfHash: row.csrf_hash,
  };
}

/** Revokes one session; false when it was not live. */
export async function revokeSession(db: Db | Tx, id: string): Promise<boolean> {
  const r = await db.result('UPDATE sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [id]);
  return r.rowCount === 1;
}

/** Revokes every live session of a user (a password reset, a removal). */
export async function revokeUserSessions(q: Db | Tx, userId: string): Promise<void> {
  await q.none('UPDATE sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [userId]);
}

/** Returns once every gateway dropped the session (or every session of the user) from its cache. */
export async function announceSessionsGone(redis: Redis, key: Keyer, what: { sessionId: string } | { userId: string }): Promise<void> {
  await broadcastAndAwait(redis, key, SESSION_REVOKED_CHANNEL, 'sessionId' in what ? what.sessionId : `user:${what.userId}`);
}

/** The Set-Cookie value of a new session, or of its removal (secret null). Secure when the public URL is https. */
export function sessionCookie(secret: string | null, o: { secure: boolean; maxMs: number }): string {
  const attrs = ['Path=/', 'HttpOnly', 'SameSite=Lax', ...(o.secure ? ['Secure'] : [])];
  return secret === null
    ? [`${SESSION_COOKIE}=`, 'Max-Age=0', ...attrs].join('; ')
    : [`${SESSION_COOKIE}=${secret}`, `Max-Age=${Math.floor(o.maxMs / 1000)}`, ...attrs].join('; ');
}
