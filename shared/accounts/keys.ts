import type { Db, Tx } from '../db.ts';
import { newApiKey, sha256 } from '../ids.ts';
import type { Scope } from '../scopes.ts';
import { DEFAULT_RATE_LIMIT, DEMO_RATE_LIMIT, type Principal } from './principal.ts';

export interface NewKeyInput {
  organizationId: string;
  userId: string | null;
  scopes: Scope[];
  isDemo?: boolean;
  allowedFrom?: string[];
  allowedTo?: string[];
  rateLimitPerMinute?: number | null;
  name?: string;
}

/** Creates a key and returns its plaintext, the only time it exists outside the caller's hands. */
export async function createApiKey(db: Db | Tx, input: NewKeyInput): Promise<{ apiKey: string; apiKeyId: string }> {
  const apiKey = newApiKey();
  const row = await db.one(
    `INSERT INTO api_keys (organization_id, user_id, name, display_prefix, key_hash, scopes, allowed_from, allowed_to,
       is_demo, rate_limit_per_minute)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
    [input.organizationId, input.userId, input.name ?? 'default', apiKey.slice(0, 10), sha256(apiKey), input.scopes,
      input.allowedFrom ?? [], input.allowedTo ?? [], input.isDemo ?? false, input.rateLimitPerMinute ?? null],
  );
  return { apiKey, apiKeyId: row.id };
}

/** Revokes a key; returns false when no live key has that id. */
export async function revokeApiKey(db: Db, keyId: string): Promise<boolean> {
  const r = await db.result('UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [keyId]);
  return r.rowCount === 1;
}

/** Resolves a plaintext key to its principal by hash; null for unknown or revoked keys. */
export async function findPrincipalByKey(db: Db, plaintext: string): Promise<Principal | null> {
  const row = await db.oneOrNone(
    `SELECT id, organization_id, user_id, scopes, allowed_from, allowed_to, is_demo, rate_limit_per_minute
       FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
    [sha256(plaintext)],
  );
  if (!row) return null;
  return {
    kind: 'api_key',
    keyId: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    scopes: new Set(row.scopes as Scope[]),
    isDemo: row.is_demo,
    allowedFrom: row.allowed_from,
    allowedTo: row.allowed_to,
    rateLimit: row.rate_limit_per_minute ?? (row.is_demo ? DEMO_RATE_LIMIT : DEFAULT_RATE_LIMIT),
  };
}
