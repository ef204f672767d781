import { Type } from '@sinclair/typebox';
import { listPhoneNumbers } from '../../shared/numbers/list.ts';
import { phoneNumberView } from '../../shared/numbers/records.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Plugin } from '../http/types.ts';
import { ListMeta } from './schemas.ts';

export const PhoneNumber = Type.Object({
  id: Type.Integer({ description: 'The number\'s id (use it in /v1/phone-numbers/{id}).' }),
  phone_number: Type.String({ description: 'The number in E.164 form.' }),
  name: Type.String({ description: 'A label for the number.' }),
  organization_id: Type.String({ format: 'uuid', description: 'The organization that holds the number.' }),
  user_id: Type.String({ format: 'uuid', description: 'The user the number is assigned to.' }),
  provider: Type.String({ description: 'The carrier the number lives on (sandbox, or livekit in production).' }),
  status: Type.Union([Type.Literal('PROVISIONING'), Type.Literal('ACTIVE'), Type.Literal('RELEASED')],
    { description: 'PROVISIONING (bought, not usable yet), ACTIVE (places calls), RELEASED (given back; kept as history).' }),
  is_active: Type.Boolean({ description: 'Whether the number can place calls now (status ACTIVE).' }),
  iso_country: Type.String({ description: 'ISO 3166-1 alpha-2 country of the number.' }),
  reputation_enrolled_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()],
    { description: 'When the number was enrolled in reputation monitoring; null when it is not.' }),
  cnam_display_name: Type.String({ description: 'Caller name (CNAM) shown to called parties, at most 15 characters.' }),
  cnam_status: Type.String({ description: 'State of the CNAM registration of cnam_display_name: pending (submitted, or '
    + 'not yet submitted), registered or rejected (see cnam_rejection_reason). Set the name with PATCH /v1/phone-numbers/{id}.' }),
  cnam_rejection_reason: Type.Union([Type.String(), Type.Null()],
    { description: 'Why the CNAM provider rejected the display name when cnam_status is rejected; null otherwise.' }),
  texting_status: Type.String({ description: 'A2P texting registration of the number: not_registered, pending, registered or rejected.' }),
  created_at: Type.String({ format: 'date-time', description: 'When the number was acquired.' }),
}, { description: 'A phone number the organization holds.' });

export const PHONE_NUMBER_EXAMPLE = {
  id: 1042, phone_number: '+14155550123', name: 'Front desk', organization_id: '5f0c8a2e-3b1d-4c6e-9a7f-2d4b8e1c0a93',
  user_id: '9b2e4f61-7c3a-4d58-8e1f-0a6b3c9d2e47', provider: 'sandbox', status: 'ACTIVE', is_active: true, iso_country: 'US',
  reputation_enrolled_at: null, cnam_display_name: 'Acme Dental', cnam_status: 'registered', cnam_rejection_reason: null, texting_status: 'not_registered',
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
    query: Type.Object(PageQuery, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(PhoneNumber, { description: 'The numbers, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('phone_numbers', query);
      const { rows, total } = await listPhoneNumbers(deps.db, principal.organizationId, page);
      const out = deps.cursors.page('phone_numbers', page, rows, (r) => r.id, total);
      return { status: 200, body: { data: out.data.map(phoneNumberView), meta: out.meta } };
    },
  });
};
