// Users of an organization as members: listing, inviting, changing roles, removing; invitations and password resets
// (one-time tokens, only their SHA-256 stored). Only owners make or remove owners, and an organization always keeps
// one owner (last_owner). A removed member is disabled, not deleted (calls and records name the user): their
// sessions and keys are revoked; the caller announces both (every gateway drops them).
import { randomBytes } from 'node:crypto';
import type { Principal } from '../accounts/principal.ts';
import type { Db, Tx } from '../db.ts';
import { DomainError, notFound, validationError } from '../errors.ts';
import { isUuid, sha256 } from '../ids.ts';
import { revokeUserSessions } from '../sessions/sessions.ts';
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN } from './passwords.ts';
import type { Role } from './roles.ts';

export const INVITATION_TTL_MS = 7 * 86_400_000;
export const RESET_TTL_MS = 3600_000;

export interface UserRow {
  id: string;
  organization_id: string;
  email: string;
  name: string | null;
  role: Role;
  password_hash: string | null;
  disabled_at: Date | null;
  created_at: Date;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const normalizeEmail = (e: string) => e.trim().toLowerCase();

export function checkEmail(email: string, field = 'email'): string {
  const e = normalizeEmail(email);
  if (e.length > 254 || !EMAIL.test(e)) throw validationError({ [field]: 'must be an email address, e.g. dana@example.com' });
  return e;
}

export function checkPassword(password: string, field = 'password'): void {
  if (password.length < PASSWORD_MIN) throw validationError({ [field]: `must be at least ${PASSWORD_MIN} characters` });
  if (password.length > PASSWORD_MAX) throw validationError({ [field]: `must be at most ${PASSWORD_MAX} characters` });
}

/** The active user signing in with this email (anywhere on the platform), with their organization. */
export async function findActiveUserByEmail(db: Db | Tx, email: string): Promise<UserRow | null> {
  return db.oneOrNone<UserRow>('SELECT * FROM users WHERE lower(email) = $1 AND disabled_at IS NULL', [normalizeEmail(email)]);
}

export async function getUser(db: Db | Tx, userId: string): Promise<UserRow | null> {
  return db.oneOrNone<UserRow>('SELECT * FROM users WHERE id = $1', [userId]);
}

export async function listMembers(db: Db, organizationId: string): Promise<UserRow[]> {
  return db.any<UserRow>('SELECT * FROM users WHERE organization_id = $1 AND disabled_at IS NULL ORDER BY created_at, id', [organizationId]);
}

export async function getMember(db: Db | Tx, organizationId: string, id: string, lock = false): Promise<UserRow> {
  const row = isUuid(id) ? await db.oneOrNone<UserRow>(
    `SELECT * FROM users WHERE id = $1 AND organization_id = $2 AND disabled_at IS NULL${lock ? ' FOR UPDATE' : ''}`, [id, organizationId]) : null;
  if (!row) throw notFound(`Member ${id}`);
  return row;
}

/** Owners are made, demoted and removed by owners only. A key without a user is not an owner. */
function requireOwnerFor(actor: Principal, what: string): void {
  if (actor.role !== 'owner') {
    throw new DomainError('forbidden', `Only an owner can ${what}.`, { resolutionHint: 'Ask an owner of the organization.' });
  }
}

const newToken = () => randomBytes(32).toString('base64url');

async function issueToken(q: Db | Tx, userId: string, kind: 'invitation' | 'password_reset', ttlMs: number): Promise<string> {
  const token = newToken();
  await q.none(`INSERT INTO user_tokens (user_id, kind, token_hash, expires_at) VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond')`,
    [userId, kind, sha256(token), ttlMs]);
  return token;
}

/** Makes a user of the organization (no password: an invitation token to set one), or with a password (the admin CLI). */
export async function createUser(db: Db, u: { organizationId: string; email: string; role: Role; name?: string | null; password?: string }):
  Promise<{ user: UserRow; invitationToken: string | null }> {
  const email = checkEmail(u.email);
  if (u.password !== undefined) checkPassword(u.password);
  const hash = u.password !== undefined ? await hashPassword(u.password) : null;
  return db.tx(async (tx) => {
    const org = await tx.oneOrNone('SELECT id FROM organizations WHERE id = $1', [u.organizationId]);
    if (!org) throw notFound(`Organization ${u.organizationId}`);
    if (await findActiveUserByEmail(tx, email)) {
      throw new DomainError('member_exists', `${email} already belongs to an active user.`, { fields: { email: 'already used by an active user' } });
    }
    const user = await tx.one<UserRow>(
      `INSERT INTO users (organization_id, email, name, role, password_hash) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT DO NOTHING RETURNING *`, [u.organizationId, email, u.name ?? null, u.role, hash]).catch((e) => {
      if (e?.message?.includes('No data returned')) {
        throw new DomainError('member_exists', `${email} already belongs to an active user.`, { fields: { email: 'already used by an active user' } });
      }
      throw e;
    });
    const invitationToken = hash === null ? await issueToken(tx, user.id, 'invitation', INVITATION_TTL_MS) : null;
    return { user, invitationToken };
  });
}

/** POST /v1/members: invites a person (an owner only invites owners). */
export async function inviteMember(db: Db, actor: Principal, email: string, role: Role) {
  if (role === 'owner') requireOwnerFor(actor, 'invite an owner');
  return createUser(db, { organizationId: actor.organizationId, email, role });
}

/** Locks the organization's active owners (concurrent demotions of two owners serialize here) and counts them. */
async function lockOwners(tx: Tx, organizationId: string): Promise<number> {
  const rows = await tx.any(`SELECT id FROM users WHERE organization_id = $1 AND role = 'owner' AND disabled_at IS NULL FOR UPDATE`, [organizationId]);
  return rows.length;
}

const lastOwner = (what: string) => new DomainError('last_owner',
  `This is the organization's last owner: it cannot be ${what}. Make another member an owner first.`);

/** PATCH /v1/members/{id}: changes a member's role. */
export async function changeRole(db: Db, actor: Principal, id: string, role: Role): Promise<UserRow> {
  return db.tx(async (tx) => {
    const owners = await lockOwners(tx, actor.organizationId);
    const m = await getMember(tx, actor.organizationId, id, true);
    if (m.role === role) return m;
    if (m.role === 'owner' || role === 'owner') requireOwnerFor(actor, 'make or demote an owner');
    if (m.role === 'owner' && owners <= 1) throw lastOwner('demoted');
    return tx.one<UserRow>('UPDATE users SET role = $2 WHERE id = $1 RETURNING *', [m.id, role]);
  });
}

/** DELETE /v1/members/{id}: disables the member, revokes their sessions and keys; answers the revoked key ids. */
export async function removeMember(db: Db, actor: Principal, id: string): Promise<{ user: UserRow; keyIds: string[] }> {
  return db.tx(async (tx) => {
    const owners = await lockOwners(tx, actor.organizationId);
    const m = await getMember(tx, actor.organizationId, id, true);
    if (m.role === 'owner') {
      requireOwnerFor(actor, 'remove an owner');
      if (owners <= 1) throw lastOwner('removed');
    }
    const user = await tx.one<UserRow>('UPDATE users SET disabled_at = now(), password_hash = NULL WHERE id = $1 RETURNING *', [m.id]);
    await revokeUserSessions(tx, m.id);
    await tx.none('UPDATE user_tokens SET used_at = now() WHERE user_id = $1 AND used_at IS NULL', [m.id]);
    const keys = await tx.any('UPDATE api_keys SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL RETURNING id', [m.id]);
    return { user, keyIds: keys.map((k) => k.id as string) };
  });
}

/** The key ids of a user (to drop them from every gateway's cache when the user's role changes). */
export async function userKeyIds(db: Db, userId: string): Promise<string[]> {
  return (await db.any('SELECT id FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL', [userId])).map((r) => r.id as string);
}

/** Takes a one-time token: the user it was issued to, once, before it expires; the same refusal otherwise. */
async function takeToken(tx: Tx, token: string, kind: 'invitation' | 'password_reset'): Promise<UserRow> {
  const refused = () => validationError({ token: `unknown, used or expired ${kind === 'invitation' ? 'invitation' : 'reset'} token` });
  if (token.length > 200) throw refused();
  const t = await tx.oneOrNone(
    `UPDATE user_tokens SET used_at = now() WHERE token_hash = $1 AND kind = $2 AND used_at IS NULL AND expires_at > now()
     RETURNING user_id`, [sha256(token), kind]);
  if (!t) throw refused();
  const user = await tx.oneOrNone<UserRow>('SELECT * FROM users WHERE id = $1 AND disabled_at IS NULL FOR UPDATE', [t.user_id]);
  if (!user) throw refused();
  return user;
}

/** POST /v1/invitations/accept: sets the invited user's password and name. */
export async function acceptInvitation(db: Db, token: string, password: string, name: string): Promise<UserRow> {
  checkPassword(password);
  const hash = await hashPassword(password);
  return db.tx(async (tx) => {
    const user = await takeToken(tx, token, 'invitation');
    return tx.one<UserRow>('UPDATE users SET password_hash = $2, name = $3 WHERE id = $1 RETURNING *', [user.id, hash, name]);
  });
}

/** POST /v1/password-reset: a reset token for the active user with this email, or null (the caller answers alike). */
export async function requestPasswordReset(db: Db, email: string): Promise<{ user: UserRow; token: string } | null> {
  const user = await findActiveUserByEmail(db, email);
  if (!user) return null;
  return { user, token: await issueToken(db, user.id, 'password_reset', RESET_TTL_MS) };
}

/** POST /v1/password-reset/confirm: sets the new password, spends every reset token of the user and revokes every
 *  session of theirs (the caller announces it). */
export async function confirmPasswordReset(db: Db, token: string, password: string): Promise<UserRow> {
  checkPassword(password);
  const hash = await hashPassword(password);
  return db.tx(async (tx) => {
    const user = await takeToken(tx, token, 'password_reset');
    await tx.none(`UPDATE user_tokens SET used_at = now() WHERE user_id = $1 AND kind = 'password_reset' AND used_at IS NULL`, [user.id]);
    await revokeUserSessions(tx, user.id);
    return tx.one<UserRow>('UPDATE users SET password_hash = $2 WHERE id = $1 RETURNING *', [user.id, hash]);
  });
}
