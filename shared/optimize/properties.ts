import type { Static } from '@sinclair/typebox';
import { randomToken, uuidv7 } from '../ids.ts';
import { DomainError, notFound, validationError } from '../errors.ts';
import type { Db } from '../db.ts';
import type { PropertyResponse, SnippetResponse } from './schemas.ts';

// Properties: the websites an organization tests. The public key only identifies the property to the tag and the
// collector (it grants nothing else). verified_at is set the first time the tag loads from a page on the domain.

export const PUBLIC_KEY_PREFIX = 'olpk_';
/** What a public key can look like (keys are made as olpk_ + 24 letters and digits). The tag and the collector refuse
 *  anything else before a lookup, so no stray text (NUL, an unpaired surrogate) ever reaches PostgreSQL. */
export const PUBLIC_KEY = /^olpk_[A-Za-z0-9]{1,40}$/;

export interface PropertyRow {
  id: string; organization_id: string; domain: string; name: string; public_key: string;
  verified_at: Date | null; created_at: Date;
}

export const propertyView = (p: PropertyRow): Static<typeof PropertyResponse> => ({
  id: p.id, domain: p.domain, name: p.name, public_key: p.public_key,
  verified_at: p.verified_at?.toISOString() ?? null, created_at: p.created_at.toISOString(),
});

/** A bare host name (lower case, no scheme, port or path): example.com, shop.example.co.uk, 127.0.0.1. */
export function normalizeDomain(input: string): string | null {
  const d = input.trim().toLowerCase().replace(/\.$/, '');
  if (!/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/.test(d)) return null;
  return d;
}

/** Whether a host belongs to the property's domain (the domain itself or a subdomain of it). */
export const hostOnDomain = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`);

export async function createProperty(db: Db, organizationId: string, input: { domain: string; name?: string }): Promise<PropertyRow> {
  const domain = normalizeDomain(input.domain);
  if (!domain) throw validationError({ domain: 'must be a host name such as example.com (no scheme, port or path)' });
  const existing = await db.oneOrNone('SELECT id FROM optimize_properties WHERE organization_id = $1 AND domain = $2', [organizationId, domain]);
  if (existing) throw propertyExists(existing.id, domain);
  try {
    return await db.one(
      `INSERT INTO optimize_properties (id, organization_id, domain, name, public_key) VALUES ($1, $2, $3, $4, $5) RETURNING *`,
      [uuidv7(), organizationId, domain, input.name ?? domain, PUBLIC_KEY_PREFIX + randomToken(24)]);
  } catch (err) {
    if ((err as { code?: string }).code !== '23505') throw err;
    const row = await db.one('SELECT id FROM optimize_properties WHERE organization_id = $1 AND domain = $2', [organizationId, domain]);
    throw propertyExists(row.id, domain);
  }
}

const propertyExists = (id: string, domain: string) => new DomainError('property_exists',
  `${domain} is already registered as property ${id}.`, { fields: { domain: 'is already registered', conflicts_with: id } });

export function listProperties(db: Db, organizationId: string): Promise<PropertyRow[]> {
  return db.any('SELECT * FROM optimize_properties WHERE organization_id = $1 ORDER BY id', [organizationId]);
}

/** The property by id, or the organization's first one when id is undefined; not_found otherwise. */
export async function getProperty(db: Db, organizationId: string, id?: string): Promise<PropertyRow> {
  const row = id === undefined
    ? await db.oneOrNone('SELECT * FROM optimize_properties WHERE organization_id = $1 ORDER BY id LIMIT 1', [organizationId])
    : /^[0-9a-f-]{36}$/i.test(id) ? await db.oneOrNone('SELECT * FROM optimize_properties WHERE organization_id = $1 AND id = $2', [organizationId, id]) : null;
  if (!row) throw notFound(id === undefined ? 'A property (register one with POST /v1/optimize/properties)' : `Property ${id}`);
  return row;
}

/** The one <script> tag to paste into <head>: synchronous on purpose, so the variant applies before first paint. */
export const scriptTag = (baseUrl: string, publicKey: string) => `<script src="${baseUrl}/v1/optimize/tag.js?k=${publicKey}"></script>`;

/** GET /v1/optimize/snippet: the property's tag, served from this API's base URL. */
export const snippetView = (p: PropertyRow, baseUrl: string): Static<typeof SnippetResponse> =>
  ({ property_id: p.id, public_key: p.public_key, script_tag: scriptTag(baseUrl, p.public_key) });

/** Sets verified_at once (the first tag load from the domain). */
export async function markVerified(db: Db, propertyId: string): Promise<void> {
  await db.none('UPDATE optimize_properties SET verified_at = now() WHERE id = $1 AND verified_at IS NULL', [propertyId]);
}
