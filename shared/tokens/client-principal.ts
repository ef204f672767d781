// The principal of a client token: the minting credential's organization and user, the token's own numbers and scopes.
// The minting credential is read again (cached by the gateway like a key): a revoked key or a signed-out session
// takes its tokens with it, and a key whose ceiling or scopes were narrowed since minting, or whose user's role
// narrowed, never lends a token more than it now has. An agent's token reads only the agent's own calls, as the
// agent's session and keys do (shared/users/roles.ts).
import { DEFAULT_RATE_LIMIT, DEMO_RATE_LIMIT, type Principal } from '../accounts/principal.ts';
import type { Db } from '../db.ts';
import type { Scope } from '../scopes.ts';
import { isRole, OWN_CALLS_ONLY, ROLE_SCOPES, type Role } from '../users/roles.ts';
import { NEVER_DELEGATED, type ClientTokenClaims } from './client-token.ts';

export interface ClientPrincipal extends Principal {
  kind: 'client_token';
  /** Epoch ms after which the token is no longer accepted. */
  expiresAtMs: number;
  /** What minted it: an API key (keyId is the key's id) or a console session (keyId is the session's id). */
  mintedBy: 'api_key' | 'session';
}

interface Minter {
  organization_id: string;
  user_id: string | null;
  /** The credential's own scopes (a session: its role's). */
  scopes: Scope[];
  allowed_from: string[];
  allowed_to: string[];
  is_demo: boolean;
  rate_limit_per_minute: number | null;
  role: string | null;
  /** The sub-entity the minting key is limited to (a session: none); its tokens inherit it. */
  sub_entity_id: string | null;
}

/** The minting API key (live, its user not removed), with its user's role. */
const keyMinter = (db: Db, id: string) => db.oneOrNone<Minter & { disabled_at: Date | null }>(
  `SELECT k.organization_id, k.user_id, k.scopes, k.allowed_from, k.allowed_to, k.is_demo, k.rate_limit_per_minute, k.sub_entity_id, u.role, u.disabled_at
     FROM api_keys k LEFT JOIN users u ON u.id = k.user_id
    WHERE k.id = $1 AND k.revoked_at IS NULL`, [id]);

/** The minting console session: live (not signed out, within its absolute expiry) and its user active. A session has
 *  no ceiling of its own: its role's scopes. The idle expiry is not applied (the token's own lifetime, at most an hour,
 *  bounds it). */
async function sessionMinter(db: Db, id: string): Promise<(Minter & { disabled_at: null }) | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
  const row = await db.oneOrNone<{ organization_id: string; user_id: string; role: string }>(
    `SELECT s.organization_id, s.user_id, u.role
       FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.id = $1 AND s.revoked_at IS NULL AND s.expires_at > now() AND u.disabled_at IS NULL`, [id]);
  if (!row || !isRole(row.role)) return null;
  return { ...row, scopes: [...ROLE_SCOPES[row.role]], allowed_from: [], allowed_to: [], is_demo: false, rate_limit_per_minute: null, sub_entity_id: null, disabled_at: null };
}

export async function principalFromClaims(db: Db, c: ClientTokenClaims): Promise<ClientPrincipal | null> {
  const mintedBy = c.m === 'session' ? 'session' : 'api_key';
  const m = mintedBy === 'session' ? await sessionMinter(db, c.k) : await keyMinter(db, c.k);
  if (!m || m.disabled_at || m.organization_id !== c.o) return null;
  const within = (list: string[], ceiling: string[]) => ceiling.length === 0 || list.every((n) => ceiling.includes(n));
  // A token must name at least one caller ID: an empty allowedFrom would mean "any number".
  if (c.f.length === 0 || !within(c.f, m.allowed_from) || !within(c.t, m.allowed_to)) return null;
  const role: Role | null = m.role && isRole(m.role) ? m.role : null;
  // The minter's scopes now, cut down to its user's role now (a key made by a user never does more than the role).
  const minterScopes = new Set(m.scopes.filter((s) => !role || ROLE_SCOPES[role].has(s)));
  const scopes = new Set(c.s.filter((s) => minterScopes.has(s) && !NEVER_DELEGATED.has(s)));
  return {
    kind: 'client_token',
    mintedBy,
    keyId: c.k,
    organizationId: c.o,
    userId: c.u,
    role,
    ownCallsOnly: role !== null && OWN_CALLS_ONLY.has(role),
    scopes,
    isDemo: m.is_demo,
    allowedFrom: c.f,
    allowedTo: c.t.length ? c.t : m.allowed_to,
    subEntityId: m.sub_entity_id,
    rateLimit: m.rate_limit_per_minute ?? (m.is_demo ? DEMO_RATE_LIMIT : DEFAULT_RATE_LIMIT),
    expiresAtMs: c.e * 1000,
  };
}
