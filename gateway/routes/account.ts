import { Type } from '@sinclair/typebox';
import { accountIdentity, accountSnapshotDocument } from '../../shared/accounts/snapshot.ts';
import type { Plugin } from '../http/types.ts';

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

const AccountSnapshot = Type.Object({
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

const Me = Type.Object({
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

const ORG = { id: '5f0c8a2e-3b1d-4c6e-9a7f-2d4b8e1c0a93', name: 'Acme Dental', slug: 'acme-dental' };
const USER = { id: '9b2e4f61-7c3a-4d58-8e1f-0a6b3c9d2e47', email: 'ops@acme-dental.example', name: 'Dana Ortiz' };

export const accountRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/account', scope: 'account:read', tag: 'Account',
    summary: 'Read the account snapshot',
    description: 'Answers the snapshot of the account the credential belongs to: the key id, the plan, the user and '
      + 'organization, and the live footprint (numbers held now, numbers enrolled in reputation monitoring). The '
      + 'footprint follows every change at once, whoever makes it. Every field is always present and no other field is '
      + 'ever added. Read-only: changes nothing.',
    examples: { response: { data: { api_key_id: '3c7d9e2a-6b4f-4a1e-8d5c-1f9a0b7e6c24', plan: 'sandbox', user: USER, organization: ORG,
      footprint: { phone_numbers: 3, enrolled_reputation_numbers: 0, own_brand_enterprise: false }, is_demo: false } } },
    response: { status: 200, schema: Type.Object({ data: AccountSnapshot }) },
    errors: ['forbidden', 'idempotency_conflict'],
    handler: async ({ deps, principal }) => {
      const document = accountSnapshotDocument(deps.db, principal);
      return { status: 200, json: document instanceof Promise ? await document : document };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/me', scope: 'account:read', tag: 'Account',
    summary: 'Read the calling identity',
    description: 'Answers who is calling: the user and organization of the credential, the credential itself (kind, '
      + 'demo flag, caller-ID and destination ceiling, rate limit) and its scopes. Useful to check what a key or a '
      + 'client token may do before using it. Read-only.',
    examples: { response: { data: { user: USER, organization: ORG,
      api_key: { id: '3c7d9e2a-6b4f-4a1e-8d5c-1f9a0b7e6c24', kind: 'api_key', is_demo: false, allowed_from: [], allowed_to: [], rate_limit_per_minute: 600 },
      scopes: ['account:read', 'calls:read', 'calls:write', 'phone_numbers:read'] } } },
    response: { status: 200, schema: Type.Object({ data: Me }) },
    handler: async ({ deps, principal: p }) => {
      const snap = await accountIdentity(deps.db, p);
      return {
        status: 200,
        body: {
          data: {
            user: snap.user,
            organization: snap.organization,
            api_key: {
              id: p.keyId, kind: p.kind, is_demo: p.isDemo, allowed_from: [...p.allowedFrom], allowed_to: [...p.allowedTo],
              rate_limit_per_minute: p.rateLimit,
            },
            scopes: [...p.scopes].sort(),
          },
        },
      };
    },
  });
};
