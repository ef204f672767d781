import { Type } from '@sinclair/typebox';
import { DomainError, validationError } from '../../shared/errors.ts';
import { parseE164 } from '../../shared/phone/e164.ts';
import { INBOX_LIST_MAX, inboxEntryView, readInbox, readMailbox } from '../../shared/sandbox/inbox.ts';
import { InboxEntryResponse } from '../../shared/sandbox/schemas.ts';
import type { Plugin } from '../http/types.ts';

// The sandbox's test inbox: what the simulated carrier delivered to external numbers (shared/sandbox/inbox.ts).

const Entry = InboxEntryResponse;

export const sandboxRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/sandbox/inbox', scope: 'voice:read', tag: 'Sandbox', summary: 'Read the sandbox test inbox of a number',
    description: `What the sandbox carrier delivered to an external number because of this organization, newest first (at most ${INBOX_LIST_MAX}): `
      + 'the speech of caller-ID verification calls. With `email` instead of `phone_number`: the emails the platform sent to that '
      + 'address about this organization (invitations, password resets) while SMTP_URL is unset. Give exactly one of the two. '
      + 'Another organization\'s deliveries are never shown. Phone numbers: only with the sandbox carrier (not_found otherwise).',
    examples: { response: { data: [{ id: 17, phone_number: '+12125550187', channel: 'voice', kind: 'caller_id_verification_call',
      text: 'This is the Openline caller ID verification service. Your verification code is 4, 8, 2, 9, 1, 7. Again, your code is 4, 8, 2, 9, 1, 7. Goodbye.',
      created_at: '2026-11-20T15:04:05.000Z' }] } },
    query: Type.Object({
      phone_number: Type.Optional(Type.String({ maxLength: 32, description: 'The external number (E.164).' })),
      email: Type.Optional(Type.String({ maxLength: 254, description: 'An email address (emails sent while SMTP_URL is unset).' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Entry, { description: 'Deliveries, newest first.' }) }) },
    errors: ['not_found'],
    handler: async ({ deps, principal, query }) => {
      if ((query.phone_number === undefined) === (query.email === undefined)) {
        throw validationError({ phone_number: 'give exactly one of phone_number or email', email: 'give exactly one of phone_number or email' });
      }
      if (query.email !== undefined) {
        const rows = await readMailbox(deps.db, principal.organizationId, query.email);
        return { status: 200, body: { data: rows.map(inboxEntryView) } };
      }
      if (deps.config.carrier !== 'sandbox') throw new DomainError('not_found', 'The sandbox inbox exists only with the sandbox carrier.');
      if (!parseE164(query.phone_number!)) throw validationError({ phone_number: 'must be an E.164 number, e.g. +12125550187' });
      const rows = await readInbox(deps.db, principal.organizationId, query.phone_number!);
      return { status: 200, body: { data: rows.map(inboxEntryView) } };
    },
  });
};
