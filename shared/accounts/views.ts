// The account as the API shows it: the snapshot (GET /v1/account), the calling identity (GET /v1/me) and API keys
// (GET/POST /v1/api-keys; the plaintext is part of the creation answer only), their response schemas and views.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import type { ApiKeyRow } from './keys.ts';
import type { Principal } from './principal.ts';
import type { Footprint, Identity } from './snapshot.ts';

const Uuid = (description: string) => Type.String({ format: 'uuid', description });

const userFields = () => ({
  id: Uuid('The user id.'),
  email: Type.String({ description: 'The user\'s email address.' }),
  name: Type.Union([Type.String(), Type.Null()], { description: 'The user\'s display name, if set.' }),
});
const orgFields = () => ({
  id: Uuid('The organization id.'),
  name: Type.String({ description: 'The organization\'s display name.' }),
  slug: Type.String({ description: 'The organization\'s short URL-safe name.' }),
});

export const AccountSnapshotResponse = Type.Object({
  api_key_id: Type.String({ description: 'Id of the credential that made the request.' }),
  plan: Type.String({ description: 'The organization\'s plan.' }),
  user: Type.Union([Type.Null(), Type.Object(userFields(), { additionalProperties: false })],
    { description: 'The user the key belongs to; null for a key of the organization alone.' }),
  organization: Type.Union([Type.Null(), Type.Object(orgFields(), { additionalProperties: false })],
    { description: 'The organization the credential belongs to.' }),
  footprint: Type.Object({
    phone_numbers: Type.Number({ description: 'Numbers the organization holds now (PROVISIONING and ACTIVE).' }),
    enrolled_reputation_numbers: Type.Number({ description: 'Held numbers enrolled in reputation monitoring.' }),
    own_brand_enterprise: Type.Boolean({ description: 'Whether the organization has its own approved enterprise registration.' }),
  }, { additionalProperties: false, description: 'Live counts of what the organization holds.' }),
  is_demo: Type.Boolean({ description: 'A demo key: 120 requests per minute and an allowlist of destinations.' }),
}, { additionalProperties: false, description: 'The account snapshot.' });

export const MeResponse = Type.Object({
  user: Type.Union([Type.Null(), Type.Object(userFields())], { description: 'The user the credential belongs to, if any.' }),
  organization: Type.Object(orgFields(), { description: 'The credential\'s organization.' }),
  api_key: Type.Object({
    id: Type.String({ description: 'The credential id (an API key id, or the minting key\'s id for a client token).' }),
    kind: Type.String({ description: 'api_key, client_token, or session (a console sign-in: id is the session id).' }),
    is_demo: Type.Boolean({ description: 'Whether this is a demo key.' }),
    allowed_from: Type.Array(Type.String(), { description: 'Caller IDs (E.164) the credential may use; empty: any number of the organization.' }),
    allowed_to: Type.Array(Type.String(), { description: 'Destinations (E.164) the credential may call; empty: any.' }),
    rate_limit_per_minute: Type.Integer({ description: 'Requests per minute allowed for this credential.' }),
  }, { description: 'The credential that made the request.' }),
  scopes: Type.Array(Type.String(), { description: 'The credential\'s scopes, sorted.' }),
}, { description: 'The authenticated identity.' });

/** The snapshot of GET /v1/account: exactly the schema's fields, in its order (the document is kept encoded). */
export const accountSnapshotView = (p: Principal, identity: Identity, footprint: Footprint): Static<typeof AccountSnapshotResponse> => ({
  api_key_id: p.keyId,
  plan: identity.plan,
  user: identity.user,
  organization: identity.organization,
  footprint: {
    phone_numbers: footprint.phone_numbers,
    enrolled_reputation_numbers: footprint.enrolled_reputation_numbers,
    own_brand_enterprise: footprint.own_brand_enterprise,
  },
  is_demo: p.isDemo,
});

export const meView = (p: Principal, identity: Identity): Static<typeof MeResponse> => ({
  user: identity.user,
  organization: identity.organization,
  api_key: {
    id: p.keyId, kind: p.kind, is_demo: p.isDemo, allowed_from: [...p.allowedFrom], allowed_to: [...p.allowedTo],
    rate_limit_per_minute: p.rateLimit,
  },
  scopes: [...p.scopes].sort(),
});

export const ApiKeyResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The key id (DELETE /v1/api-keys/{id} revokes it).' }),
  name: Type.String({ description: 'A name for people (what the key is for).' }),
  prefix: Type.String({ description: 'The first characters of the key, to recognize it; the key itself is never shown again.' }),
  scopes: Type.Array(Type.String(), { description: 'What the key may do. A key of a user never does more than the user\'s role allows now.' }),
  allowed_from: Type.Array(Type.String(), { description: 'Caller-ID ceiling (E.164); empty: any number of the organization.' }),
  allowed_to: Type.Array(Type.String(), { description: 'Destination ceiling (E.164); empty: any destination.' }),
  sub_entity_id: Nullable(Type.String({ format: 'uuid' }), 'The one sub-entity the key is limited to (it and its client tokens see and '
    + 'touch only that sub-entity\'s numbers, calls, contacts and SMS); null: the whole organization.'),
  created_by_user_id: Nullable(Type.String({ format: 'uuid' }), 'The user who made the key (calls it places name them); null for '
    + 'keys made by the admin CLI (organization keys).'),
  created_at: Type.String({ format: 'date-time', description: 'When the key was made.' }),
  last_used_at: Nullable(Type.String({ format: 'date-time' }), 'When the key was last used (to the minute); null if never.'),
  revoked_at: Nullable(Type.String({ format: 'date-time' }), 'When the key was revoked; null while it works.'),
}, { description: 'An API key (without its secret).' });

export const apiKeyView = (k: ApiKeyRow): Static<typeof ApiKeyResponse> => ({
  id: k.id,
  name: k.name,
  prefix: k.display_prefix,
  scopes: [...k.scopes].sort(),
  allowed_from: k.allowed_from,
  allowed_to: k.allowed_to,
  sub_entity_id: k.sub_entity_id,
  created_by_user_id: k.user_id,
  created_at: k.created_at.toISOString(),
  last_used_at: k.last_used_at?.toISOString() ?? null,
  revoked_at: k.revoked_at?.toISOString() ?? null,
});
