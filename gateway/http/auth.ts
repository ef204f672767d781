import { sha256hex } from '../../shared/ids.ts';
import type { Redis } from 'ioredis';
import { findPrincipalByKey } from '../../shared/accounts/keys.ts';
import type { Principal } from '../../shared/accounts/principal.ts';
import { KEY_REVOKED_CHANNEL } from '../../shared/accounts/revocation.ts';
import { onBroadcast } from '../../shared/broadcast.ts';
import type { Db } from '../../shared/db.ts';
import { ApiError } from '../../shared/http/error-status.ts';
import type { Keyer } from '../../shared/redis.ts';
import type { Logger } from '../../shared/log.ts';
import { reportRedisErrors } from '../../shared/unavailable.ts';
import type { Scope } from '../../shared/scopes.ts';
import { CLIENT_TOKEN_PREFIX, type ClientTokenSigner } from '../../shared/tokens/client-token.ts';
import type { TokenKeys } from '../../shared/tokens/keys.ts';
import { principalFromClaims } from '../../shared/tokens/client-principal.ts';
import { findSession, SESSION_REVOKED_CHANNEL, sessionSecretOf, type SessionPrincipal } from '../../shared/sessions/sessions.ts';

const POSITIVE_TTL_MS = 60_000;
const NEGATIVE_TTL_MS = 5_000;
const MAX_ENTRIES = 50_000;

interface Entry { principal: Principal | null; expires: number }
interface SessionEntry { principal: SessionPrincipal; expires: number }

/** A key's last_used_at is written at most this often (per key and gateway): not one write per request. */
const TOUCH_EVERY_MS = 60_000;
const DEFAULT_IDLE_MS = 12 * 3600_000;

/** Resolves bearer credentials. Keys are looked up by SHA-256 hash and cached in-process; a revocation is
 *  broadcast on Redis and every replica confirms it dropped the key before the revocation returns (the TTL only
 *  bounds a missed broadcast). */
export class Authenticator {
  private readonly cache = new Map<string, Entry>();
  private readonly byKeyId = new Map<string, string>();
  private subscriber: Redis | null = null;
  // Bumped by every revocation: a lookup that was in flight when a revocation arrived may have read the row before
  // it was revoked, so its answer is used once but not cached.
  private revocations = 0;
  /** Cached client tokens of each minting key, so revoking the key drops them too. */
  private readonly tokensByKeyId = new Map<string, Set<string>>();
  /** Console sessions by cookie secret (positive answers only, for at most POSITIVE_TTL_MS), and their secrets by id. */
  private readonly sessions = new Map<string, SessionEntry>();
  private readonly sessionSecrets = new Map<string, string>();
  private sessionRevocations = 0;
  /** When each key's last_used_at was last written by this gateway. */
  private readonly touched = new Map<string, number>();

  /** tokenKeys: the process's client-token signer; without it client tokens are refused. sessionIdleMs: a console
   *  session unused this long is over (SESSION_IDLE_SECONDS). */
  constructor(private readonly db: Db, private readonly key: Keyer, private readonly tokenKeys?: TokenKeys,
    private readonly sessionIdleMs = DEFAULT_IDLE_MS) {}

  /** The client-token signer of this deployment (loaded once). */
  clientTokens(): Promise<ClientTokenSigner> {
    if (!this.tokenKeys) return Promise.reject(new Error('client tokens need the token keys'));
    return this.tokenKeys.clientTokenSigner();
  }

  private readonly revokedHooks: ((subject: string) => void)[] = [];

  /** Runs `fn` for every revocation this gateway applies: a key id, a session id, or `user:<id>` (every session of
   *  a user); e.g. to end the revoked credential's open call streams. */
  onRevoked(fn: (subject: string) => void): void { this.revokedHooks.push(fn); }

  async listen(redis: Redis, log: Logger): Promise<void> {
    this.subscriber = redis.duplicate({ enableAutoPipelining: false });
    reportRedisErrors(this.subscriber, log, 'key-revocations');
    // Confirmed once the key is gone from this cache: the revoker waits for every gateway's confirmation.
    await onBroadcast(this.subscriber, redis, this.key, KEY_REVOKED_CHANNEL, (keyId) => this.forget(keyId));
    // Sign-outs, password resets, removed members and changed roles: the session (or every session of the user) goes.
    await onBroadcast(this.subscriber, redis, this.key, SESSION_REVOKED_CHANNEL, (subject) => this.forgetSession(subject));
  }

  /** Drops a session (by id) or every session of a user (`user:<id>`) from this gateway's cache. */
  forgetSession(subject: string): void {
    this.sessionRevocations++;
    for (const fn of this.revokedHooks) fn(subject);
    if (subject.startsWith('user:')) {
      const userId = subject.slice(5);
      for (const [secret, e] of this.sessions) {
        if (e.principal.userId === userId) { this.sessions.delete(secret); this.sessionSecrets.delete(e.principal.keyId); }
      }
      // Client tokens of the user (their principals carry the old role) go too.
      for (const [minter, tokens] of this.tokensByKeyId) {
        const some = tokens.values().next().value;
        const p = some === undefined ? undefined : this.cache.get(some)?.principal;
        if (p?.userId !== userId) continue;
        for (const t of tokens) this.cache.delete(t);
        this.tokensByKeyId.delete(minter);
      }
      return;
    }
    const secret = this.sessionSecrets.get(subject);
    if (secret !== undefined) this.sessions.delete(secret);
    this.sessionSecrets.delete(subject);
    // Client tokens minted by the session end with it.
    for (const t of this.tokensByKeyId.get(subject) ?? []) this.cache.delete(t);
    this.tokensByKeyId.delete(subject);
  }

  /** The principal of a cached, live session named by a Cookie header, without a promise; undefined: look it up. */
  cachedSession(cookie: string | undefined): SessionPrincipal | undefined {
    const secret = sessionSecretOf(cookie);
    if (secret === null) return undefined;
    const hit = this.sessions.get(secret);
    const now = Date.now();
    return hit && hit.expires > now && hit.principal.expiresAtMs > now ? hit.principal : undefined;
  }

  /** The principal of the session a Cookie header names, or 401. */
  async authenticateSession(cookie: string | undefined): Promise<SessionPrincipal> {
    const secret = sessionSecretOf(cookie);
    if (secret === null) throw unauthorized('invalid_token', 'The session cookie is malformed; sign in again (POST /v1/session).');
    const cached = this.cachedSession(cookie);
    if (cached) return cached;
    const seen = this.sessionRevocations;
    const p = await findSession(this.db, secret, this.sessionIdleMs);
    if (!p) throw unauthorized('invalid_token', 'The session has expired or was signed out; sign in again (POST /v1/session).');
    if (seen === this.sessionRevocations) {
      if (this.sessions.size >= MAX_ENTRIES) { this.sessions.clear(); this.sessionSecrets.clear(); }
      this.sessions.set(secret, { principal: p, expires: Math.min(Date.now() + POSITIVE_TTL_MS, p.expiresAtMs) });
      this.sessionSecrets.set(p.keyId, secret);
    }
    return p;
  }

  /** Notes that a key (or a client token of it) was used: writes its last_used_at at most once a minute. */
  touch(p: Principal): void {
    if (p.kind === 'session') return;
    const now = Date.now();
    const last = this.touched.get(p.keyId);
    if (last !== undefined && now - last < TOUCH_EVERY_MS) return;
    if (this.touched.size >= MAX_ENTRIES) this.touched.clear();
    this.touched.set(p.keyId, now);
    this.db.none('UPDATE api_keys SET last_used_at = now() WHERE id = $1', [p.keyId]).catch(() => this.touched.delete(p.keyId));
  }

  async close(): Promise<void> {
    await this.subscriber?.quit().catch(() => undefined);
  }

  forget(keyId: string): void {
    this.revocations++;
    for (const fn of this.revokedHooks) fn(keyId);
    const token = this.byKeyId.get(keyId);
    if (token !== undefined) this.cache.delete(token);
    this.byKeyId.delete(keyId);
    for (const t of this.tokensByKeyId.get(keyId) ?? []) this.cache.delete(t);
    this.tokensByKeyId.delete(keyId);
  }

  /** The principal of a well-formed "Bearer <key>" header whose key is cached and valid, without a promise (the
   *  common case, and the hot path); undefined sends the caller to authenticate(). */
  cached(header: string | undefined): Principal | undefined {
    if (header === undefined || !header.startsWith('Bearer ')) return undefined;
    const hit = this.cache.get(header.slice(7));
    return hit && hit.principal && hit.expires > Date.now() ? hit.principal : undefined;
  }

  /** The principal of an Authorization header value, or 401 with a reason. */
  async authenticate(header: string | undefined): Promise<Principal> {
    if (!header) throw unauthorized('missing', 'Missing Authorization header; send "Authorization: Bearer <API key>" (or sign in to the console: POST /v1/session).');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) {
      // "Bearer" alone (uWS trims the space after it) is a client whose key variable was empty: say so.
      if (/^Bearer\s*$/i.test(header)) throw unauthorized('invalid_request', 'The bearer token is empty; send "Authorization: Bearer <API key>" with your key after "Bearer ".');
      throw unauthorized('invalid_request', 'The Authorization header must use the Bearer scheme: "Bearer <API key>".');
    }
    const token = m[1];
    const now = Date.now();
    const hit = this.cache.get(token);
    let principal: Principal | null;
    if (hit && hit.expires > now) {
      principal = hit.principal;
    } else {
      const seen = this.revocations;
      let expires = now + POSITIVE_TTL_MS;
      if (token.startsWith(CLIENT_TOKEN_PREFIX) && this.tokenKeys) {
        // A client token: the signature and expiry are checked here, its minting key in the database.
        const claims = token.length <= 8192 ? (await this.clientTokens()).verify(token, now) : null;
        const cp = claims ? await principalFromClaims(this.db, claims) : null;
        if (cp) cp.credentialId = `ct_${sha256hex(token).slice(0, 32)}`;
        principal = cp;
        if (cp) expires = Math.min(expires, cp.expiresAtMs);
      } else {
        principal = token.length <= 200 ? await findPrincipalByKey(this.db, token) : null;
      }
      if (seen === this.revocations) {
        if (this.cache.size >= MAX_ENTRIES) { this.cache.clear(); this.tokensByKeyId.clear(); }
        this.cache.set(token, { principal, expires: principal ? expires : now + NEGATIVE_TTL_MS });
        if (principal?.kind === 'client_token') {
          let set = this.tokensByKeyId.get(principal.keyId);
          if (!set) this.tokensByKeyId.set(principal.keyId, (set = new Set()));
          set.add(token);
        } else if (principal) this.byKeyId.set(principal.keyId, token);
      }
    }
    if (!principal) {
      throw unauthorized('invalid_token', token.startsWith(CLIENT_TOKEN_PREFIX)
        ? 'The client token is invalid, has expired, or its API key has been revoked.' : 'The API key is invalid or has been revoked.');
    }
    return principal;
  }
}

/** The credential holds the scope, or one of a list (any-of: the challenge and fields.scope name them all). */
export function requireScope(p: Principal, scope: Scope | readonly Scope[]): void {
  if (typeof scope === 'string') {
    if (p.scopes.has(scope)) return;
    throw new AuthError('scope_missing', `This credential lacks the "${scope}" scope required by this endpoint.`,
      'insufficient_scope', scope, `Create a key that includes the ${scope} scope.`);
  }
  if (scope.some((s) => p.scopes.has(s))) return;
  const names = scope.join(' or ');
  throw new AuthError('scope_missing', `This credential lacks the scopes of this endpoint: it needs ${names}.`,
    'insufficient_scope', scope, `Create a key that includes ${names}.`);
}

type Challenge = 'missing' | 'invalid_request' | 'invalid_token' | 'insufficient_scope';

/** A 401 or 403 that must carry a Bearer challenge (RFC 6750) pointing at our resource metadata (RFC 9728). */
export class AuthError extends ApiError {
  constructor(code: 'unauthorized' | 'scope_missing', message: string, readonly challenge: Challenge,
    readonly scope?: Scope | readonly Scope[], resolutionHint?: string) {
    super(code, message, { resolutionHint, fields: scope ? { scope: typeof scope === 'string' ? `requires ${scope}` : `requires one of ${scope.join(', ')}` } : undefined });
  }

  wwwAuthenticate(baseUrl: string): string {
    const meta = `resource_metadata=${quoted(`${baseUrl}/.well-known/oauth-protected-resource`)}`;
    switch (this.challenge) {
      case 'missing': return `Bearer realm="api", ${meta}`;
      case 'insufficient_scope':
        return `Bearer realm="api", error="insufficient_scope", error_description="The credential lacks the required scope", scope=${quoted(typeof this.scope === 'string' ? this.scope : (this.scope ?? []).join(' '))}, ${meta}`;
      case 'invalid_request':
        return `Bearer realm="api", error="invalid_request", error_description="Malformed Authorization header", ${meta}`;
      default:
        return `Bearer realm="api", error="invalid_token", error_description="The API key is invalid or revoked", ${meta}`;
    }
  }
}

/** An RFC 9110 quoted-string: quotes and backslashes escaped, so a value can never end the parameter early. */
const quoted = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`;

function unauthorized(challenge: Challenge, message: string): AuthError {
  return new AuthError('unauthorized', message, challenge);
}
