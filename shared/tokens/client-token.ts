// Bounded client tokens: a signed, self-contained credential minted from an API key (POST /v1/client-tokens) that
// works in place of that key on the same Authorization header, limited to the caller IDs, destinations and scopes
// chosen at minting, until it expires. Nothing is stored per token: the signature is the proof.
//
//   olct_<base64url(JSON payload)>.<base64url(HMAC-SHA256(secret, "olct_" + payload))>
//
// Rotation: tokens are signed with the current secret and verified with the current one, then the previous one
// (CLIENT_TOKEN_PREVIOUS_SECRET), so tokens minted just before a rotation keep working until they expire.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Db } from '../db.ts';
import { CLIENT_TOKEN_PREFIX } from '../ids.ts';
import type { Scope } from '../scopes.ts';

export { CLIENT_TOKEN_PREFIX };
export const CLIENT_TOKEN_MIN_TTL = 60;
export const CLIENT_TOKEN_MAX_TTL = 3600;
export const CLIENT_TOKEN_DEFAULT_TTL = 900;
/** Scopes a client token gets when the request names none. */
export const CLIENT_TOKEN_DEFAULT_SCOPES: Scope[] = ['voice:webrtc'];
/** Never granted to a client token: a token cannot mint tokens. */
export const NEVER_DELEGATED: ReadonlySet<Scope> = new Set<Scope>(['tokens:mint']);

/** What a client token says (compact names keep the header short). */
export interface ClientTokenClaims {
  v: 1;
  /** organization id */
  o: string;
  /** issuing user id (the minting key's user), or null */
  u: string | null;
  /** minting credential's id: an API key's, or a console session's when `m` is `session` */
  k: string;
  /** what minted it: absent for an API key (every token minted before sessions could mint), `session` for a console
   *  session (POST /v1/client-tokens with the session cookie): its principal then follows the session and its user's role */
  m?: 'session';
  /** caller IDs the token may use (at least one) */
  f: string[];
  /** destinations it may call; empty: any destination within the minting key's ceiling */
  t: string[];
  s: Scope[];
  /** expiry, Unix seconds */
  e: number;
  /** random nonce: two tokens minted in the same second differ */
  n: string;
}

export class ClientTokenSigner {
  private readonly current: Buffer;
  private readonly previous: Buffer | null;

  constructor(current: Buffer | string, previous: Buffer | string | null = null) {
    this.current = Buffer.from(current);
    this.previous = previous === null ? null : Buffer.from(previous);
  }

  sign(claims: Omit<ClientTokenClaims, 'v' | 'n'>): string {
    const payload = Buffer.from(JSON.stringify({ v: 1, ...claims, n: randomBytes(6).toString('base64url') })).toString('base64url');
    return `${CLIENT_TOKEN_PREFIX}${payload}.${mac(this.current, payload)}`;
  }

  /** The claims of a well-formed token signed with the current or previous secret that has not expired; null
   *  otherwise (tampered, foreign, malformed, expired). */
  verify(token: string, nowMs = Date.now()): ClientTokenClaims | null {
    if (!token.startsWith(CLIENT_TOKEN_PREFIX)) return null;
    const body = token.slice(CLIENT_TOKEN_PREFIX.length);
    const dot = body.indexOf('.');
    if (dot <= 0) return null;
    const payload = body.slice(0, dot);
    const sig = Buffer.from(body.slice(dot + 1));
    const ok = (secret: Buffer) => {
      const want = Buffer.from(mac(secret, payload));
      return want.length === sig.length && timingSafeEqual(want, sig);
    };
    if (!ok(this.current) && !(this.previous && ok(this.previous))) return null;
    let c: ClientTokenClaims;
    try {
      c = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return null;
    }
    if (c?.v !== 1 || typeof c.o !== 'string' || typeof c.k !== 'string' || !Array.isArray(c.f) || !Array.isArray(c.t)
      || !Array.isArray(c.s) || typeof c.e !== 'number') return null;
    if (c.e * 1000 <= nowMs) return null;
    return c;
  }
}

const mac = (secret: Buffer, payload: string) =>
  createHmac('sha256', secret).update(CLIENT_TOKEN_PREFIX).update(payload).digest('base64url');

/** The signer of this deployment: CLIENT_TOKEN_SECRET (and _PREVIOUS_SECRET) when set, else the secret generated
 *  once in the database (development), which every replica shares. */
export async function loadClientTokenSigner(db: Db, config: Config): Promise<ClientTokenSigner> {
  if (config.clientTokenSecret) return new ClientTokenSigner(config.clientTokenSecret, config.clientTokenPreviousSecret);
  const { secret } = await db.one(`SELECT secret FROM server_secrets WHERE name = 'client_token'`);
  return new ClientTokenSigner(secret, config.clientTokenPreviousSecret);
}
