// The principal of a client token: the minting key's organization and user, the token's own numbers and scopes.
// The minting key is read again (cached by the gateway like a key): a revoked key takes its tokens with it, and a
// key whose ceiling or scopes were narrowed since minting never lends a token more than it now has.
import { DEFAULT_RATE_LIMIT, DEMO_RATE_LIMIT, type Principal } from '../accounts/principal.ts';
import type { Db } from '../db.ts';
import type { Scope } from '../scopes.ts';
import { NEVER_DELEGATED, type ClientTokenClaims } from './client-token.ts';

export interface ClientPrincipal extends Principal {
  kind: 'client_token';
  /** Epoch ms after which the token is no longer accepted. */
  expiresAtMs: number;
}

export async function principalFromClaims(db: Db, c: ClientTokenClaims): Promise<ClientPrincipal | null> {
  const key = await db.oneOrNone(
    `SELECT organization_id, user_id, scopes, allowed_from, allowed_to, is_demo, rate_limit_per_minute
       FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, [c.k]);
  if (!key || key.organization_id !== c.o) return null;
  const within = (list: string[], ceiling: string[]) => ceiling.length === 0 || list.every((n) => ceiling.includes(n));
  // A token must name at least one caller ID: an empty allowedFrom would mean "any number".
  if (c.f.length === 0 || !within(c.f, key.allowed_from) || !within(c.t, key.allowed_to)) return null;
  const keyScopes = new Set(key.scopes as Scope[]);
  const scopes = new Set(c.s.filter((s) => keyScopes.has(s) && !NEVER_DELEGATED.has(s)));
  return {
    kind: 'client_token',
    keyId: c.k,
    organizationId: c.o,
    userId: c.u,
    scopes,
    isDemo: key.is_demo,
    allowedFrom: c.f,
    allowedTo: c.t.length ? c.t : key.allowed_to,
    rateLimit: key.rate_limit_per_minute ?? (key.is_demo ? DEMO_RATE_LIMIT : DEFAULT_RATE_LIMIT),
    expiresAtMs: c.e * 1000,
  };
}
