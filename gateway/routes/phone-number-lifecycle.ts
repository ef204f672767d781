import { Type } from '@sinclair/typebox';
import {
  availableNumbers, getNumber, numberDetailView, purchaseNumber, releaseNumber, type LifecycleRow,
} from '../../shared/numbers/lifecycle.ts';
import { cancelQueuedCallsFrom } from '../../shared/calls/caller-id.ts';
import { callRuntime } from '../../shared/calls/runtime.ts';
import { enqueueProvisioning } from '../../shared/numbers/provisioning.ts';
import { MAX_PAGE_SIZE } from '../../shared/pagination.ts';
import type { Plugin, Reply } from '../http/types.ts';
import { PhoneNumber } from './phone-numbers.ts';
import { Nullable } from './schemas.ts';


const PhoneNumberDetail = Type.Composite([PhoneNumber, Type.Object({
  status: Type.Union([Type.Literal('PROVISIONING'), Type.Literal('ACTIVE'), Type.Literal('RELEASED')]),
  area_code: Type.String(),
  activated_at: Nullable(Type.String({ format: 'date-time' })),
  released_at: Nullable(Type.String({ format: 'date-time' })),
})]);

const AvailableNumber = Type.Object({
  phone_number: Type.String({ description: 'E.164' }),
  area_code: Type.String(),
  iso_country: Type.String(),
  provider: Type.String(),
});

const IdParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) });

export const phoneNumberLifecycleRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/phone-numbers/available', scope: 'phone_numbers:read', tag: 'Phone Numbers',
    summary: 'Purchasable sandbox numbers (never one held by any organization).',
    query: Type.Object({
      area_code: Type.Optional(Type.String({ pattern: '^[0-9]{3}$', description: 'Three-digit sandbox area code' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: 20 })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(AvailableNumber), meta: Type.Object({ page_size: Type.Integer() }) }) },
    handler: async ({ deps, query }) => {
      const limit = query.limit ?? 20;
      return { status: 200, body: { data: await availableNumbers(deps.db, query.area_code, limit), meta: { page_size: limit } } };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/phone-numbers', scope: 'phone_numbers:write', tag: 'Phone Numbers',
    summary: 'Buy a number (exact phone_number, or any free one of area_code). 202: it is PROVISIONING; it turns ACTIVE '
      + 'asynchronously and number_purchased fires.',
    body: Type.Object({
      phone_number: Type.Optional(Type.String({ maxLength: 16, description: 'E.164, from GET /v1/phone-numbers/available' })),
      area_code: Type.Optional(Type.String({ pattern: '^[0-9]{3}$' })),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    }, { additionalProperties: false }),
    response: { status: 202, schema: Type.Object({ data: PhoneNumberDetail }) },
    errors: ['number_unavailable'],
    handler: async (ctx) => {
      const { deps, principal, body } = ctx;
      const reply = (r: LifecycleRow): Reply => ({ status: 202, body: { data: numberDetailView(r) } });
      const row = await purchaseNumber(deps.db, principal, body, ctx.idempotent(reply));
      try {
        await enqueueProvisioning(deps.redis, deps.config, row.id);
      } catch (err) {
        // The workers' provisioning sweep picks the number up; the purchase itself is committed.
        deps.log.warn({ err: (err as Error).message, phone_id: row.id }, 'provisioning enqueue failed; left to the sweep');
      }
      return reply(row);
    },
  });

  routes.add({
    method: 'GET', path: '/v1/phone-numbers/{id}', scope: 'phone_numbers:read', tag: 'Phone Numbers',
    summary: 'One of the organization\'s numbers with its lifecycle status (released numbers stay readable).',
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: PhoneNumberDetail }) },
    handler: async ({ deps, principal, params }) => ({
      status: 200, body: { data: numberDetailView(await getNumber(deps.db, principal.organizationId, params.id)) },
    }),
  });

  routes.add({
    method: 'DELETE', path: '/v1/phone-numbers/{id}', scope: 'phone_numbers:write', tag: 'Phone Numbers',
    summary: 'Release a number: status RELEASED, number_released fires, the record is kept as history.',
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: PhoneNumberDetail }) },
    handler: async (ctx) => {
      const { deps, principal, params } = ctx;
      const reply = (r: LifecycleRow): Reply => ({ status: 200, body: { data: numberDetailView(r) } });
      const row = await releaseNumber(deps.db, principal.organizationId, params.id, ctx.idempotent(reply));
      // After the commit; if this process dies first, origination's own check cancels them (shared/calls/caller-id.ts).
      await cancelQueuedCallsFrom(callRuntime(deps), principal.organizationId, row.id).catch((err) =>
        deps.log.warn({ err, phone_id: row.id }, 'queued calls of a released number not canceled; origination will'));
      return reply(row);
    },
  });
};
