import { Type } from '@sinclair/typebox';
import { listPhoneNumbers } from '../../shared/numbers/list.ts';
import { phoneNumberView } from '../../shared/numbers/records.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Plugin } from '../http/types.ts';
import { ListMeta } from './schemas.ts';

export const PhoneNumber = Type.Object({
  id: Type.Integer(),
  phone_number: Type.String({ description: 'E.164' }),
  name: Type.String(),
  organization_id: Type.String({ format: 'uuid' }),
  user_id: Type.String({ format: 'uuid' }),
  provider: Type.String(),
  is_active: Type.Boolean(),
  iso_country: Type.String(),
  reputation_enrolled_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  cnam_display_name: Type.String(),
  cnam_status: Type.String(),
  texting_status: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});

export const phoneNumberRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/phone-numbers', scope: 'phone_numbers:read', tag: 'Phone Numbers',
    summary: 'The organization\'s phone numbers, newest first.',
    query: Type.Object(PageQuery, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(PhoneNumber), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('phone_numbers', query);
      const { rows, total } = await listPhoneNumbers(deps.db, principal.organizationId, page);
      const out = deps.cursors.page('phone_numbers', page, rows, (r) => r.id, total);
      return { status: 200, body: { data: out.data.map(phoneNumberView), meta: out.meta } };
    },
  });
};
