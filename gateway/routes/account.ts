import { Type } from '@sinclair/typebox';
import { accountSnapshotDocument } from '../../shared/accounts/snapshot.ts';
import { AccountSnapshotResponse, MeResponse, meView } from '../../shared/accounts/views.ts';
import type { Plugin } from '../http/types.ts';

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
    response: { status: 200, schema: Type.Object({ data: AccountSnapshotResponse }) },
    errors: ['forbidden', 'idempotency_conflict'],
    handler: async ({ deps, principal }) => {
      const document = accountSnapshotDocument(deps.accounts, principal);
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
    response: { status: 200, schema: Type.Object({ data: MeResponse }) },
    handler: async ({ deps, principal }) =>
      ({ status: 200, body: { data: meView(principal, await deps.accounts.identity(principal.organizationId, principal.userId)) } }),
  });
};
