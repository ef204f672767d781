import { Type } from '@sinclair/typebox';
import { CNAM_MAX_LENGTH, CNAM_PUNCTUATION } from '../../shared/cnam/rules.ts';
import { SANDBOX_RESERVED_WORDS } from '../../shared/cnam/provider.ts';
import { setCnam } from '../../shared/cnam/registration.ts';
import { numberDetailView, type LifecycleRow } from '../../shared/numbers/lifecycle.ts';
import { PhoneNumberDetailResponse } from '../../shared/numbers/schemas.ts';
import type { Plugin } from '../http/types.ts';
import { createIn } from '../../shared/sub-entities/limit.ts';
import { DETAIL_EXAMPLE, guardNumber, IdParams } from './phone-number-lifecycle.ts';

// Configuring a held number: its label, its caller name (CNAM; rules in shared/cnam) and its inbound routing.
export const phoneNumberCnamRoutes: Plugin = (routes) => {
  routes.add({
    method: 'PATCH', path: '/v1/phone-numbers/{id}', scope: 'phone_numbers:write', tag: 'Phone Numbers',
    summary: 'Change a number\'s name, caller name (CNAM) or inbound routing',
    description: 'Changes the label (name) and/or the caller name shown to called parties (cnam_display_name). CNAM rules: '
      + `1 to ${CNAM_MAX_LENGTH} characters of letters, digits, spaces and ${CNAM_PUNCTUATION.split('').join(' ')}; no leading, trailing or double `
      + 'space; at least one letter or digit. A new caller name (or the same one after a rejection) sets cnam_status pending '
      + 'and is submitted to the CNAM provider; cnam_status then turns registered, or rejected with cnam_rejection_reason '
      + `(the sandbox provider answers after about 3 s × SANDBOX_TIME_SCALE and rejects names containing ${SANDBOX_RESERVED_WORDS.join(', ')} `
      + 'as a word, or without a letter). A released number answers cnam_number_released. No CNAM registration needs an enterprise registration. '
      + 'inbound sets what answers calls to the number (softphone or reject; see the field). sub_entity_id moves the number to a sub-entity (or null).',
    examples: { request: { cnam_display_name: 'Acme Dental', inbound: 'reject' },
      response: { data: { ...DETAIL_EXAMPLE, cnam_display_name: 'Acme Dental', cnam_status: 'pending', inbound: 'reject' } } },
    params: IdParams,
    body: Type.Object({
      cnam_display_name: Type.Optional(Type.String({ maxLength: 64, description: `The caller name: at most ${CNAM_MAX_LENGTH} characters `
        + `(letters, digits, spaces, ${CNAM_PUNCTUATION.split('').join(' ')}).` })),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A label for the number.' })),
      inbound: Type.Optional(Type.Union([Type.Literal('softphone'), Type.Literal('reject')], { description: 'What answers inbound '
        + 'calls (CARRIER=sip): softphone rings the browsers listening for the number, reject answers 480 (docs/reference/numbers.md).' })),
      sub_entity_id: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'The sub-entity the number belongs '
        + 'to (a sub-entity of your organization, else validation_error); null detaches it. Calls and SMS placed from the '
        + 'number later take it; those already placed keep theirs.' })),
    }, { additionalProperties: false, minProperties: 1 }),
    response: { status: 200, schema: Type.Object({ data: PhoneNumberDetailResponse }) },
    errors: ['cnam_number_released'],
    handler: async (ctx) => {
      await guardNumber(ctx.deps.db, ctx.principal, ctx.params.id);
      // A limited credential keeps its numbers in its sub-entity (sub_entity_id: its own or omitted).
      const body = ctx.body.sub_entity_id === undefined ? ctx.body : { ...ctx.body, sub_entity_id: createIn(ctx.principal, ctx.body.sub_entity_id) };
      const reply = (r: LifecycleRow) => ({ status: 200, body: { data: numberDetailView(r) } });
      return reply(await setCnam(ctx.deps.db, ctx.deps.queues, ctx.deps.config, ctx.principal.organizationId, ctx.params.id, body,
        ctx.idempotent(reply)));
    },
  });
};
