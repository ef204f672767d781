// API keys as the API shows them (GET/POST /v1/api-keys): the response schema and the view. The plaintext is part of
// the creation answer only.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import type { ApiKeyRow } from './keys.ts';

export const ApiKeyResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The key id (DELETE /v1/api-keys/{id} revokes it).' }),
  name: Type.String({ description: 'A name for people (what the key is for).' }),
  prefix: Type.String({ description: 'The first characters of the key, to recognize it; the key itself is never shown again.' }),
  scopes: Type.Array(Type.String(), { description: 'What the key may do. A key of a user never does more than the user\'s role allows now.' }),
  allowed_from: Type.Array(Type.String(), { description: 'Caller-ID ceiling (E.164); empty: any number of the organization.' }),
  allowed_to: Type.Array(Type.String(), { description: 'Destination ceiling (E.164); empty: any destination.' }),
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
  created_by_user_id: k.user_id,
  created_at: k.created_at.toISOString(),
  last_used_at: k.last_used_at?.toISOString() ?? null,
  revoked_at: k.revoked_at?.toISOString() ?? null,
});
