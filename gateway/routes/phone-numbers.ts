import { Type } from '@sinclair/typebox';
import { listPhoneNumbers } from '../../shared/numbers/list.ts';
import { phoneNumberView } from '../../shared/numbers/records.ts';
import { PageQuery } from '../../shared/pagination.ts';
import { assertSubEntityFilter } from '../../shared/sub-entities/sub-entities.ts';
import { listFilter } from '../../shared/sub-entities/limit.ts';
import { PhoneNumberResponse } from '../../shared/numbers/schemas.ts';
import type { Plugin } from '../http/types.ts';
import { ListMeta } from './schemas.ts';

export const PhoneNumber = PhoneNumberResponse;

export const PHONE_NUMBER_EXAMPLE = {
  id: 1042, phone_number: '+14155550123', name: 'Front desk', organization_id: '5f0c8a2e-3b1d-4c6e-9a7f-2d4b8e1c0a93',
  user_id: '9b2e4f61-7c3a-4d58-8e1f-0a6b3c9d2e47', provider: 'sandbox', status: 'ACTIVE', is_active: true, iso_country: 'US',
  reputation_enrolled_at: null, cnam_display_name: 'Acme Dental', cnam_status: 'registered', cnam_rejection_reason: null, texting_status: 'not_registered', source: 'purchased', inbound: 'softphone', sub_entity_id: null,
  created_at: '2026-11-20T15:04:05.000Z',
};

export const phoneNumberRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/phone-numbers', scope: 'phone_numbers:read', tag: 'Phone Numbers',
    summary: 'List phone numbers',
    description: 'Lists every number the organization holds now (PROVISIONING and ACTIVE; released numbers are read one '
      + 'by one with GET /v1/phone-numbers/{id}), newest first, with the total in meta.total_results. Paginated with '
      + 'limit, order and cursor. Read-only.',
    examples: { response: { data: [PHONE_NUMBER_EXAMPLE], meta: { total_results: 1, page_size: 20 } } },
    query: Type.Object({ ...PageQuery, sub_entity_id: Type.Optional(Type.String({ description: 'Only the numbers of this '
      + 'sub-entity (meta.total_results counts them). Send it again with each cursor.' })) }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(PhoneNumber, { description: 'The numbers, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('phone_numbers', query);
      assertSubEntityFilter(query.sub_entity_id);
      const { rows, total } = await listPhoneNumbers(deps.db, principal.organizationId, page, { sub_entity_id: listFilter(principal, query.sub_entity_id) });
      const out = deps.cursors.page('phone_numbers', page, rows, (r) => r.id, total);
      return { status: 200, body: { data: out.data.map(phoneNumberView), meta: out.meta } };
    },
  });
};
