import { Type } from '@sinclair/typebox';
import {
  addCallerId, CALLER_ID_LIMIT, type CallerIdRow, CODE_DIGITS, CODE_TTL_SECONDS, callerIdView, confirmCallerId, getCallerId, listCallerIds,
  MAX_CALLS_PER_HOUR, MAX_CODE_ATTEMPTS, placeVerificationCall, removeCallerId,
} from '../../shared/caller-ids/caller-ids.ts';
import { cancelQueuedCallsFromCallerId } from '../../shared/calls/caller-id.ts';
import { PageQuery } from '../../shared/pagination.ts';
import { CallerIdResponse } from '../../shared/caller-ids/schemas.ts';
import type { Plugin, Reply } from '../http/types.ts';
import { ListMeta, UuidIdParams } from './schemas.ts';

// Caller IDs: external numbers the organization proves it controls (a verification call speaks a code, the code
// is confirmed here), usable as from_number once verified. Rules in shared/caller-ids.

const CallerId = CallerIdResponse;

const EXAMPLE = {
  id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70', phone_number: '+12125550187', name: 'Dr. Lee mobile', status: 'pending',
  verification: { state: 'code_sent', expires_at: '2026-11-20T15:14:05.000Z', attempts_remaining: 5 },
  verified_at: null, created_at: '2026-11-20T15:03:00.000Z', updated_at: '2026-11-20T15:04:05.000Z',
};
const VERIFIED_EXAMPLE = { ...EXAMPLE, status: 'verified', verification: null, verified_at: '2026-11-20T15:05:12.000Z', updated_at: '2026-11-20T15:05:12.000Z' };

const IdParams = UuidIdParams('caller ID');
const One = Type.Object({ data: CallerId });

export const callerIdRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/caller-ids', scope: 'voice:write', tag: 'Caller IDs', summary: 'Add a caller ID',
    description: 'Adds an external number the organization controls, status pending. It cannot be used as from_number '
      + '(call_id_not_verified) until verified: POST /v1/caller-ids/{id}/verify places a call that speaks a code, POST '
      + '/v1/caller-ids/{id}/confirm checks it. The number must be dialable under the destination rules (no emergency, '
      + `short-code, premium or special-rate number; international only when its country is allowed), must not be one of the organization's own numbers nor a caller ID it already has (caller_id_exists) nor a number another account holds on this platform (caller_id_held_elsewhere), and an organization holds at most ${CALLER_ID_LIMIT} (caller_id_limit_exceeded). A removed caller ID may be added again (and verified again).`,
    examples: { request: { phone_number: '+12125550187', name: 'Dr. Lee mobile' },
      response: { data: { ...EXAMPLE, verification: { state: 'not_started', expires_at: null, attempts_remaining: null }, updated_at: EXAMPLE.created_at } } },
    body: Type.Object({
      phone_number: Type.String({ maxLength: 32, description: 'The external number, E.164 (e.g. +12125550187).' }),
      name: Type.Optional(Type.String({ maxLength: 100, description: 'A label for the caller ID.' })),
    }, { additionalProperties: false }),
    response: { status: 201, schema: One },
    errors: ['caller_id_exists', 'caller_id_held_elsewhere', 'caller_id_limit_exceeded'],
    handler: async (ctx) => {
      const reply = (r: CallerIdRow) => ({ status: 201, body: { data: callerIdView(r) } });
      return reply(await addCallerId(ctx.deps.db, ctx.principal.organizationId, ctx.body, ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'GET', path: '/v1/caller-ids', scope: 'voice:read', tag: 'Caller IDs', summary: 'List caller IDs',
    description: 'Lists the organization\'s caller IDs (pending and verified; removed ones are gone), newest first, '
      + 'optionally of one status. Paginated with limit, order and cursor. Read-only.',
    examples: { response: { data: [VERIFIED_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object({ ...PageQuery,
      status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('verified')], { description: 'Only caller IDs of this status.' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(CallerId, { description: 'The caller IDs, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params(`caller_ids:${query.status ?? ''}`, query);
      const rows = await listCallerIds(deps.db, principal.organizationId, page, query.status);
      const out = deps.cursors.page(`caller_ids:${query.status ?? ''}`, page, rows, (r) => r.id);
      return { status: 200, body: { data: out.data.map(callerIdView), meta: out.meta } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/caller-ids/{id}', scope: 'voice:read', tag: 'Caller IDs', summary: 'Read a caller ID',
    description: 'Answers one caller ID of the organization with where its verification stands. Read-only.',
    examples: { response: { data: EXAMPLE } },
    params: IdParams, response: { status: 200, schema: One },
    handler: async ({ deps, principal, params }) =>
      ({ status: 200, body: { data: callerIdView(await getCallerId(deps.db, principal.organizationId, params.id)) } }),
  });

  routes.add({
    method: 'DELETE', path: '/v1/caller-ids/{id}', scope: 'voice:write', tag: 'Caller IDs', summary: 'Remove a caller ID',
    description: 'Removes the caller ID: from now on it is refused as from_number (as any number the organization does '
      + 'not hold). Its calls still QUEUED are canceled (disconnection_reason caller_id_released); calls already ringing '
      + 'or answered go on. Answers 204 with no body; the number may be added again later.',
    params: IdParams, response: { status: 204, description: 'Removed' },
    handler: async (ctx) => {
      const { deps, principal } = ctx;
      const reply = () => ({ status: 204 });
      const removed = await removeCallerId(deps.db, principal.organizationId, ctx.params.id, ctx.idempotent(reply));
      // After the commit; if this process dies first, origination's own check cancels them (shared/calls/store.ts).
      await cancelQueuedCallsFromCallerId(deps.calls, principal.organizationId, removed.phone_number).catch((err) =>
        deps.log.warn({ err, caller_id: removed.id }, 'queued calls of a removed caller ID not canceled; origination will'));
      return reply();
    },
  });

  routes.add({
    method: 'POST', path: '/v1/caller-ids/{id}/verify', scope: 'voice:write', tag: 'Caller IDs',
    summary: 'Place the verification call',
    description: `Calls the number and speaks a new ${CODE_DIGITS}-digit code, valid ${CODE_TTL_SECONDS / 60} minutes; `
      + 'any earlier code stops working and a lockout is cleared. With the sandbox carrier the call is simulated and what '
      + 'it said is readable at once from GET /v1/sandbox/inbox?phone_number=. At most '
      + `${MAX_CALLS_PER_HOUR} verification calls per caller ID per rolling hour (rate_limited with Retry-After). A verified `
      + 'caller ID answers caller_id_already_verified; a number another account has come to hold on this platform since it '
      + 'was added, caller_id_held_elsewhere (no call is placed). On a carrier without verification calls: service_unavailable.',
    examples: { response: { data: EXAMPLE } },
    params: IdParams, response: { status: 202, schema: One, description: 'The call was placed; confirm the code it speaks.' },
    errors: ['caller_id_already_verified', 'caller_id_held_elsewhere', 'service_unavailable'],
    handler: async (ctx) => {
      const reply = (r: CallerIdRow) => ({ status: 202, body: { data: callerIdView(r) } });
      return reply(await placeVerificationCall(ctx.deps.db, ctx.deps.config, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'POST', path: '/v1/caller-ids/{id}/confirm', scope: 'voice:write', tag: 'Caller IDs',
    summary: 'Confirm the spoken code',
    description: 'Checks the code the verification call spoke (compared in constant time with the stored hash; the code '
      + 'itself is never stored). Right: status verified, usable as from_number. Wrong: verification_code_incorrect '
      + `(the attempt counts); the ${MAX_CODE_ATTEMPTS}th wrong code locks the code (verification_locked) until a new `
      + 'verification call. An expired code answers verification_code_expired, no call yet verification_not_started.',
    examples: { request: { code: '482917' }, response: { data: VERIFIED_EXAMPLE } },
    params: IdParams,
    body: Type.Object({ code: Type.String({ maxLength: 32, description: `The ${CODE_DIGITS} digits the call spoke.` }) }, { additionalProperties: false }),
    response: { status: 200, schema: One },
    errors: ['caller_id_already_verified', 'verification_not_started', 'verification_code_incorrect', 'verification_code_expired', 'verification_locked'],
    handler: async (ctx) => {
      const reply = (r: CallerIdRow) => ({ status: 200, body: { data: callerIdView(r) } });
      return reply(await confirmCallerId(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.body.code, ctx.idempotent(reply)));
    },
  });
};
