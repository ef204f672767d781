import { Type } from '@sinclair/typebox';
import {
  assertNumbersPurchasable, availableNumbers, getNumber, numberDetailView, purchaseNumber, releaseNumber, type LifecycleRow,
} from '../../shared/numbers/lifecycle.ts';
import { assertWholeOrganization, assertWithin, limitOf } from '../../shared/sub-entities/limit.ts';
import type { Principal } from '../../shared/accounts/principal.ts';
import type { Db } from '../../shared/db.ts';
import { cancelQueuedCallsFrom } from '../../shared/calls/caller-id.ts';
import { enqueueProvisioning } from '../../shared/numbers/provisioning.ts';
import { MAX_PAGE_SIZE } from '../../shared/pagination.ts';
import { PhoneNumberDetailResponse } from '../../shared/numbers/schemas.ts';
import type { Plugin, Reply } from '../http/types.ts';
import { PHONE_NUMBER_EXAMPLE } from './phone-numbers.ts';


export const PhoneNumberDetail = PhoneNumberDetailResponse;

export const DETAIL_EXAMPLE = { ...PHONE_NUMBER_EXAMPLE, area_code: '415', activated_at: '2026-11-20T15:04:07.000Z', released_at: null };

const AvailableNumber = Type.Object({
  phone_number: Type.String({ description: 'The number in E.164 form; pass it to POST /v1/phone-numbers.' }),
  area_code: Type.String({ description: 'The three-digit area code.' }),
  iso_country: Type.String({ description: 'ISO 3166-1 alpha-2 country of the number.' }),
  provider: Type.String({ description: 'The carrier the number would live on.' }),
}, { description: 'A number free to buy.' });

export const IdParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The number\'s id.' }) });

/** Before a write by id: a credential limited to a sub-entity touches only that sub-entity's numbers (another's, or one
 *  of none, is not_found as another organization's). */
export const guardNumber = async (db: Db, p: Principal, id: number): Promise<void> => {
  if (limitOf(p) !== null) assertWithin(p, await getNumber(db, p.organizationId, id), 'Phone number');
};

export const phoneNumberLifecycleRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/phone-numbers/available', scope: 'phone_numbers:read', tag: 'Phone Numbers',
    summary: 'Search purchasable numbers',
    description: 'Answers up to limit numbers of the sandbox inventory (+1 NXX 555 XXXX in the sandbox area codes) that '
      + 'no organization holds now, optionally of one area_code. Nothing is reserved: a number listed here can be bought '
      + 'by another organization first (then the purchase answers number_unavailable). Read-only.',
    examples: { response: { data: [{ phone_number: '+14155550123', area_code: '415', iso_country: 'US', provider: 'sandbox' }], meta: { page_size: 20 } } },
    query: Type.Object({
      area_code: Type.Optional(Type.String({ pattern: '^[0-9]{3}$', description: 'Only numbers of this three-digit sandbox area code '
        + '(415, 212, 312, 206, 617, 512, 303, 404, 305, 702).' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: 20, description: 'How many numbers to answer, 1 to 100.' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(AvailableNumber, { description: 'Numbers free to buy.' }),
      meta: Type.Object({ page_size: Type.Integer({ description: 'The limit used.' }) }, { description: 'Paging information.' }) }) },
    handler: async ({ deps, query }) => {
      const limit = query.limit ?? 20;
      return { status: 200, body: { data: await availableNumbers(deps.db, query.area_code, limit), meta: { page_size: limit } } };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/phone-numbers', scope: 'phone_numbers:write', tag: 'Phone Numbers', changesAccount: true,
    summary: 'Buy a number',
    description: 'Buys one number for the organization: the exact phone_number, or any free number of area_code. The '
      + 'number is held at once (status PROVISIONING, is_active false) and turns ACTIVE asynchronously, within seconds on '
      + 'the sandbox, when the number_purchased webhook fires. A PROVISIONING number cannot place calls yet '
      + '(no_active_number). A number held by any organization answers number_unavailable. With the SIP trunk carrier '
      + '(CARRIER=sip) numbers come from the trunk provider: buying answers numbers_from_trunk (409).',
    examples: {
      request: { phone_number: '+14155550123', name: 'Front desk' },
      response: { data: { ...DETAIL_EXAMPLE, status: 'PROVISIONING', is_active: false, activated_at: null } },
    },
    body: Type.Object({
      phone_number: Type.Optional(Type.String({ maxLength: 16, description: 'The exact number to buy (E.164), from GET '
        + '/v1/phone-numbers/available. Give this or area_code, not both.' })),
      area_code: Type.Optional(Type.String({ pattern: '^[0-9]{3}$', description: 'Buy any free number of this sandbox area code. '
        + 'Give this or phone_number, not both.' })),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A label for the number.' })),
    }, { additionalProperties: false }),
    response: { status: 202, schema: Type.Object({ data: PhoneNumberDetail }) },
    errors: ['number_unavailable', 'numbers_from_trunk', 'forbidden'],
    handler: async (ctx) => {
      const { deps, principal, body } = ctx;
      // Buying is an account purchase: a credential limited to a sub-entity cannot (its numbers are moved to it).
      assertWholeOrganization(principal, 'buying numbers');
      assertNumbersPurchasable(deps.config.carrier);
      const reply = (r: LifecycleRow) => ({ status: 202, body: { data: numberDetailView(r) } });
      const row = await purchaseNumber(deps.db, principal, body, ctx.idempotent(reply));
      try {
        await enqueueProvisioning(deps.queues, deps.config, row.id);
      } catch (err) {
        // The workers' provisioning sweep picks the number up; the purchase itself is committed.
        deps.log.warn({ err: (err as Error).message, phone_id: row.id }, 'provisioning enqueue failed; left to the sweep');
      }
      return reply(row);
    },
  });

  routes.add({
    method: 'GET', path: '/v1/phone-numbers/{id}', scope: 'phone_numbers:read', tag: 'Phone Numbers',
    summary: 'Read a phone number',
    description: 'Answers one number the organization holds or held, with its lifecycle status (PROVISIONING, ACTIVE or '
      + 'RELEASED) and when it was activated and released. Read-only.',
    examples: { response: { data: DETAIL_EXAMPLE } },
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: PhoneNumberDetail }) },
    handler: async ({ deps, principal, params }) => ({
      status: 200, body: { data: numberDetailView(assertWithin(principal, await getNumber(deps.db, principal.organizationId, params.id), 'Phone number')) },
    }),
  });

  routes.add({
    method: 'DELETE', path: '/v1/phone-numbers/{id}', scope: 'phone_numbers:write', tag: 'Phone Numbers', changesAccount: true,
    summary: 'Release a number',
    description: 'Gives the number back: its status becomes RELEASED (is_active false), the number_released webhook fires '
      + 'and calls still QUEUED with it as caller ID are canceled (call_outcome connection_unconfirmed, '
      + 'disconnection_reason caller_id_released); calls already ringing or answered go on. Its registration with the call-analytics providers is withdrawn '
      + '(number_registration.status_changed; /v1/number-registration). The record stays readable. '
      + 'Releasing a number that is already released answers not_found (retry with the same Idempotency-Key to get the first answer).',
    examples: { response: { data: { ...DETAIL_EXAMPLE, status: 'RELEASED', is_active: false, released_at: '2026-11-21T09:30:00.000Z' } } },
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: PhoneNumberDetail }) },
    errors: ['forbidden'],
    handler: async (ctx) => {
      const { deps, principal, params } = ctx;
      await guardNumber(deps.db, principal, params.id);
      const reply = (r: LifecycleRow) => ({ status: 200, body: { data: numberDetailView(r) } });
      const row = await releaseNumber(deps.db, deps.queues, principal.organizationId, params.id, ctx.idempotent(reply));
      // After the commit; if this process dies first, origination's own check cancels them (shared/calls/caller-id.ts).
      await cancelQueuedCallsFrom(deps.calls, principal.organizationId, row.id).catch((err) =>
        deps.log.warn({ err, phone_id: row.id }, 'queued calls of a released number not canceled; origination will'));
      return reply(row);
    },
  });
};
