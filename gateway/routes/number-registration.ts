// /v1/number-registration: registering the organization's numbers with the call-analytics providers that label
// calls (rules and states in shared/number-registration/registration.ts; docs/reference/number-registration.md).
import { Type } from '@sinclair/typebox';
import { numberRegistrationProvider, SANDBOX_REGISTRATION_MS, SANDBOX_TABLE } from '../../shared/number-registration/provider.ts';
import {
  CALL_PURPOSES, getRegistration, listRegistrations, STATUS_EVENT, SUBMIT_MAX, submitRegistrations, type SubmitSummary,
} from '../../shared/number-registration/registration.ts';
import {
  NumberRegistrationResponse, REGISTRATION_EXAMPLE, REGISTRATION_STATUSES, registrationView, SubmitMeta, SubmitResultResponse,
} from '../../shared/number-registration/schemas.ts';
import { ListMeta } from '../../shared/response-schemas.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Plugin } from '../http/types.ts';

const SANDBOX_WORDS = SANDBOX_TABLE.map((r) => `${r.when}: ${r.verdict.status === 'rejected' ? `rejected ${r.verdict.code}` : r.verdict.status}`).join('; ');

const PENDING_EXAMPLE = {
  ...REGISTRATION_EXAMPLE, phone_id: 1043, phone_number: '+14155550124', status: 'pending' as const, decided_at: null,
  submitted_at: '2026-11-21T10:00:00.000Z',
};

export const numberRegistrationRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/number-registration', scope: 'caller_trust:write', tag: 'Number Registration',
    summary: 'Register numbers with the call-analytics providers',
    description: 'Submits numbers to the call-analytics providers that label calls (the Free Caller Registry path that '
      + `carriers' analytics engines read). Name 1 to ${SUBMIT_MAX} numbers with phone_ids or phone_numbers (E.164), not both; `
      + 'each must be an ACTIVE number the organization holds, listed once. The business registered with them is the '
      + 'request\'s business_name and ein when given (both), else the organization\'s APPROVED enterprise registration '
      + '(legal name, EIN, address); without either the request answers validation_error. Any malformed, foreign, '
      + 'released, provisioning or repeated entry answers validation_error naming it (phone_ids[i]) and submits nothing. '
      + 'Each number then gets its own result: submitted (now pending; a rejected number is submitted again), '
      + 'already_pending or already_registered (left alone, not resubmitted). The provider decides later: status turns '
      + `registered or rejected and ${STATUS_EVENT} fires on every change. The sandbox provider decides after about `
      + `${SANDBOX_REGISTRATION_MS / 1000} s × SANDBOX_TIME_SCALE: ${SANDBOX_WORDS}; any other number is registered. `
      + 'Honours Idempotency-Key.',
    examples: {
      request: { phone_ids: [1042, 1043], call_purpose: 'appointment_reminders' },
      response: {
        data: [
          { phone_id: 1042, phone_number: '+14155550123', result: 'already_registered', registration: REGISTRATION_EXAMPLE },
          { phone_id: 1043, phone_number: '+14155550124', result: 'submitted', registration: PENDING_EXAMPLE },
        ],
        meta: { submitted: 1, already_pending: 0, already_registered: 1 },
      },
    },
    body: Type.Object({
      phone_ids: Type.Optional(Type.Array(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'A phone number id.' }), {
        maxItems: SUBMIT_MAX, description: `The numbers to register by id, 1 to ${SUBMIT_MAX}, each once.` })),
      phone_numbers: Type.Optional(Type.Array(Type.String({ maxLength: 16, description: 'A number in E.164 form.' }), {
        maxItems: SUBMIT_MAX, description: `The numbers to register in E.164 form (instead of phone_ids), 1 to ${SUBMIT_MAX}, each once.` })),
      business_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The legal name of the business '
        + 'calling from the numbers (with ein; default: the APPROVED enterprise registration\'s legal name).' })),
      ein: Type.Optional(Type.String({ maxLength: 10, description: 'Its EIN, NN-NNNNNNN (with business_name; default: the '
        + 'APPROVED enterprise registration\'s).' })),
      call_purpose: Type.Optional(Type.Union(CALL_PURPOSES.map((p) => Type.Literal(p)), { description: 'Why the business calls '
        + '(the registry\'s call category); default customer_service.' })),
    }, { additionalProperties: false }),
    response: {
      status: 202,
      schema: Type.Object({
        data: Type.Array(SubmitResultResponse, { description: 'One result per number, in the order given.' }),
        meta: SubmitMeta,
      }),
    },
    handler: async (ctx) => {
      const { deps, principal, body } = ctx;
      const reply = (s: SubmitSummary) => ({
        status: 202,
        body: {
          data: s.results.map((r) => ({ phone_id: r.phone_id, phone_number: r.phone_number, result: r.result, registration: registrationView(r.registration) })),
          meta: { submitted: s.submitted, already_pending: s.already_pending, already_registered: s.already_registered },
        },
      });
      const provider = numberRegistrationProvider(deps.config.numberRegistration);
      return reply(await submitRegistrations(deps.db, deps.queues, deps.config, provider, principal.organizationId, body, ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'GET', path: '/v1/number-registration', scope: 'caller_trust:read', tag: 'Number Registration',
    summary: 'List the numbers\' registrations',
    description: 'Every number the organization holds now (PROVISIONING and ACTIVE; a released number is read with GET '
      + '/v1/number-registration/{phone_id}) with its registration status, newest number first, with the total in '
      + 'meta.total_results. status filters (not_registered includes numbers never submitted). Paginated with limit, order '
      + 'and cursor. Read-only.',
    examples: { response: { data: [PENDING_EXAMPLE, REGISTRATION_EXAMPLE], meta: { total_results: 2, page_size: 20 } } },
    query: Type.Object({
      ...PageQuery,
      status: Type.Optional(Type.Union(REGISTRATION_STATUSES.map((s) => Type.Literal(s)), { description: 'Only numbers with this registration status.' })),
    }, { additionalProperties: false }),
    response: {
      status: 200,
      schema: Type.Object({ data: Type.Array(NumberRegistrationResponse, { description: 'The numbers, newest first (or oldest with order=asc).' }), meta: ListMeta }),
    },
    handler: async ({ deps, principal, query }) => {
      const list = `number_registration:${query.status ?? ''}`;
      const page = deps.cursors.params(list, query);
      const { rows, total } = await listRegistrations(deps.db, principal.organizationId, page, query.status);
      const out = deps.cursors.page(list, page, rows, (r) => Number(r.phone_id), total);
      return { status: 200, body: { data: out.data.map(registrationView), meta: out.meta } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/number-registration/{phone_id}', scope: 'caller_trust:read', tag: 'Number Registration',
    summary: 'Read a number\'s registration',
    description: 'One number\'s registration, by the phone number\'s id (the id of GET /v1/phone-numbers). Released numbers '
      + 'are readable too: their registration was withdrawn (status not_registered, withdrawn_at set). A number of another '
      + 'organization answers not_found. Read-only.',
    examples: { response: { data: REGISTRATION_EXAMPLE } },
    params: Type.Object({ phone_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The phone number\'s id.' }) }),
    response: { status: 200, schema: Type.Object({ data: NumberRegistrationResponse }) },
    handler: async ({ deps, principal, params }) =>
      ({ status: 200, body: { data: registrationView(await getRegistration(deps.db, principal.organizationId, params.phone_id)) } }),
  });
};
