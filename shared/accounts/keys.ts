import type { Db, Tx } from '../db.ts';
import { notFound, validationError } from '../errors.ts';
import { isUuid, newApiKey, sha256 } from '../ids.ts';
import { parseE164 } from '../phone/e164.ts';
import { isScope, type Scope } from '../scopes.ts';
import { isRole, OWN_CALLS_ONLY, ROLE_SCOPES, type Role } from '../users/roles.ts';
import { assertSubEntityOf } from '../sub-entities/sub-entities.ts';
import { assertWholeOrganization } from '../sub-entities/limit.ts';
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
  /** Limit the key to one sub-entity of the organization (checked by the caller). */
  subEntityId?: string | null;
}

/** Creates a key and returns its plaintext, the only time it exists outside the caller's hands. */
export async function createApiKey(db: Db | Tx, input: NewKeyInput): Promise<{ apiKey: string; apiKeyId: string }> {
  const apiKey = newApiKey();
  const row = await db.one(
    `INSERT INTO api_keys (organization_id, user_id, name, display_prefix, key_hash, scopes, allowed_from, allowed_to,
       is_demo, rate_limit_per_minute, sub_entity_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
    [input.organizationId, input.userId, input.name ?? 'default', apiKey.slice(0, 10), sha256(apiKey), input.scopes,
      input.allowedFrom ?? [], input.allowedTo ?? [], input.isDemo ?? false, input.rateLimitPerMinute ?? null, input.subEntityId ?? null],
  );
  return { apiKey, apiKeyId: row.id };
}

/** Revokes a key; returns false when no live key has that id. */
export async function revokeApiKey(db: Db, keyId: string): Promise<boolean> {
  const r = await db.result('UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [keyId]);
  return r.rowCount === 1;
}

/** Resolves a plaintext key to its principal by hash; null for unknown or revoked keys, and for keys of a removed
 *  user. A key made by a user never does more than the user's role now allows: its scopes are cut down to the role's
 *  (a demoted user's keys narrow with them), and an agent's key reads only the agent's own calls. */
export async function findPrincipalByKey(db: Db, plaintext: string): Promise<Principal | null> {
  const row = await db.oneOrNone(
    `SELECT k.id, k.organization_id, k.user_id, k.scopes, k.allowed_from, k.allowed_to, k.is_demo, k.rate_limit_per_minute,
            k.sub_entity_id, u.role, u.disabled_at
       FROM api_keys k LEFT JOIN users u ON u.id = k.user_id
      WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
    [sha256(plaintext)],
  );
  if (!row || row.disabled_at) return null;
  const role: Role | null = row.role && isRole(row.role) ? row.role : null;
  const scopes = (row.scopes as Scope[]).filter((s) => !role || ROLE_SCOPES[role].has(s));
  return {
    kind: 'api_key',
    keyId: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    role,
    ownCallsOnly: role !== null && OWN_CALLS_ONLY.has(role),
    scopes: new Set(scopes),
    isDemo: row.is_demo,
    allowedFrom: row.allowed_from,
    allowedTo: row.allowed_to,
    subEntityId: row.sub_entity_id,
    rateLimit: row.rate_limit_per_minute ?? (row.is_demo ? DEMO_RATE_LIMIT : DEFAULT_RATE_LIMIT),
  };
}

export interface ApiKeyRow {
  id: string;
  organization_id: string;
  user_id: string | null;
  name: string;
  display_prefix: string;
  scopes: Scope[];
  allowed_from: string[];
  allowed_to: string[];
  is_demo: boolean;
  sub_entity_id: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const KEY_COLUMNS = 'id, organization_id, user_id, name, display_prefix, scopes, allowed_from, allowed_to, is_demo, sub_entity_id, created_at, last_used_at, revoked_at';

/** The organization's keys, newest first (revoked ones too, with revoked_at). */
export async function listApiKeys(db: Db, organizationId: string): Promise<ApiKeyRow[]> {
  return db.any<ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE organization_id = $1 ORDER BY created_at DESC, id DESC`, [organizationId]);
}

export async function getApiKey(db: Db | Tx, organizationId: string, id: string): Promise<ApiKeyRow> {
  const row = isUuid(id) ? await db.oneOrNone<ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND organization_id = $2`,
    [id, organizationId]) : null;
  if (!row) throw notFound(`API key ${id}`);
  return row;
}

/** POST /v1/api-keys: a key of the creator's organization and user, never more than the creator: its scopes are a
 *  subset of the creator's, and where the creator has a caller-ID or destination ceiling (rule 8) the new key's
 *  ceiling is a non-empty subset of it. Answers the plaintext, the only time it exists outside the caller's hands. */
export async function createKeyFor(db: Db, creator: Principal,
  input: { name: string; scopes: string[]; allowed_from?: string[]; allowed_to?: string[]; sub_entity_id?: string | null }):
  Promise<{ apiKey: string; row: ApiKeyRow }> {
  // A key limited to a sub-entity makes no keys (nor a limited one): only a credential of the whole organization does.
  assertWholeOrganization(creator, 'making API keys');
  const fields: Record<string, string> = {};
  const unknown = input.scopes.filter((s) => !isScope(s));
  if (unknown.length) fields.scopes = `unknown scope(s): ${unknown.join(', ')}`;
  else {
    const beyond = input.scopes.filter((s) => !creator.scopes.has(s as Scope));
    if (beyond.length) fields.scopes = `beyond your own scopes: ${beyond.join(', ')}`;
  }
  const within = (field: 'allowed_from' | 'allowed_to', list: string[], ceiling: readonly string[]) => {
    const bad = list.filter((n) => !parseE164(n));
    if (bad.length) { fields[field] = `not E.164 numbers: ${bad.join(', ')}`; return; }
    if (ceiling.length === 0) return;
    if (list.length === 0) fields[field] = `your credential is limited to ${ceiling.join(', ')}: name numbers within it`;
    else if (!list.every((n) => ceiling.includes(n))) fields[field] = `beyond your own ceiling (${ceiling.join(', ')})`;
  };
  const from = [...new Set(input.allowed_from ?? [])];
  const to = [...new Set(input.allowed_to ?? [])];
  within('allowed_from', from, creator.allowedFrom);
  within('allowed_to', to, creator.allowedTo);
  if (Object.keys(fields).length) throw validationError(fields);
  await assertSubEntityOf(db, creator.organizationId, input.sub_entity_id);
  const { apiKey, apiKeyId } = await createApiKey(db, {
    organizationId: creator.organizationId, userId: creator.userId, name: input.name, scopes: [...new Set(input.scopes)] as Scope[],
    allowedFrom: from, allowedTo: to, isDemo: creator.isDemo, subEntityId: input.sub_entity_id ?? null,
  });
  return { apiKey, row: await getApiKey(db, creator.organizationId, apiKeyId) };
}
