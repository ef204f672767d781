import { Type } from '@sinclair/typebox';
import { accountIdentity, accountSnapshotDocument } from '../../shared/accounts/snapshot.ts';
import type { Plugin } from '../http/types.ts';

const Uuid = Type.String({ format: 'uuid' });

const AccountSnapshot = Type.Object({
  api_key_id: Type.String(),
  plan: Type.String(),
  user: Type.Union([Type.Null(), Type.Object({ id: Uuid, email: Type.String(), name: Type.Union([Type.String(), Type.Null()]) },
    { additionalProperties: false })]),
  organization: Type.Union([Type.Null(), Type.Object({ id: Uuid, name: Type.String(), slug: Type.String() },
    { additionalProperties: false })]),
  footprint: Type.Object({
    phone_numbers: Type.Number(),
    enrolled_reputation_numbers: Type.Number(),
    own_brand_enterprise: Type.Boolean(),
  }, { additionalProperties: false }),
  is_demo: Type.Boolean(),
}, { additionalProperties: false });

const Me = Type.Object({
  user: Type.Union([Type.Null(), Type.Object({ id: Uuid, email: Type.String(), name: Type.Union([Type.String(), Type.Null()]) })]),
  organization: Type.Object({ id: Uuid, name: Type.String(), slug: Type.String() }),
  api_key: Type.Object({
    id: Type.String(), kind: Type.String(), is_demo: Type.Boolean(),
    allowed_from: Type.Array(Type.String()), allowed_to: Type.Array(Type.String()), rate_limit_per_minute: Type.Integer(),
  }),
  scopes: Type.Array(Type.String()),
});

export const accountRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/account', scope: 'account:read', tag: 'Account',
    summary: 'Account snapshot: key, plan, user, organization and live footprint.',
    response: { status: 200, schema: Type.Object({ data: AccountSnapshot }) },
    errors: ['forbidden', 'idempotency_conflict'],
    handler: async ({ deps, principal }) => {
      const document = accountSnapshotDocument(deps.db, principal);
      return { status: 200, json: document instanceof Promise ? await document : document };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/me', scope: 'account:read', tag: 'Account',
    summary: 'The authenticated user and the credential\'s scopes.',
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
