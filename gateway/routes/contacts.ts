import { Type } from '@sinclair/typebox';
import { assertSubEntityFilter } from '../../shared/sub-entities/sub-entities.ts';
import { assertWithin, createIn, limitOf, listFilter } from '../../shared/sub-entities/limit.ts';
import type { Principal } from '../../shared/accounts/principal.ts';
import type { Db } from '../../shared/db.ts';
import { mergePolicy, policyView, readPolicy, writePolicy, policyFromRow, type PolicyRow } from '../../shared/compliance/policy.ts';
import { PolicyResponse, WeekdaySchema } from '../../shared/compliance/schemas.ts';
import { isTimeZone } from '../../shared/compliance/timezone.ts';
import { addConsent, consentView, listConsents, revokeConsent, type ConsentRow } from '../../shared/contacts/consents.ts';
import {
  callHistory, contactDetailView, contactView, createContact, deleteContact, getContact, listContacts, updateContact, type ContactRow,
} from '../../shared/contacts/contacts.ts';
import { addDnc, dncView, isOnDnc, listDnc, removeDnc, type DncRow } from '../../shared/contacts/dnc.ts';
import { listOptOuts, optIn, optOut, optOutView, type OptOutRow } from '../../shared/contacts/opt-outs.ts';
import {
  ChannelSchema, ConsentResponse, ContactDetailResponse, ContactResponse, DncResponse, OptOutResponse,
} from '../../shared/contacts/schemas.ts';
import { validationError } from '../../shared/errors.ts';
import { PageQuery } from '../../shared/pagination.ts';
import { isE164 } from '../../shared/phone/e164.ts';
import type { Plugin } from '../http/types.ts';
import { ListMeta, Nullable, UuidIdParams } from './schemas.ts';

// Contacts (consents, opt-outs, call history) and call compliance (the Do-Not-Call list, the policy). The rules
// themselves live in shared/compliance; these handlers only read and write their inputs.

const E164 = (description?: string) => Type.String({ pattern: '^\\+[1-9][0-9]{6,14}$', description });
const ISO = (description: string) => Type.String({ format: 'date-time', description });

const described = ContactResponse.properties;
const fields = {
  phone_number: E164(described.phone_number.description),
  name: Type.String({ maxLength: 200, description: described.name.description }),
  timezone: Nullable(Type.String({ minLength: 1, maxLength: 64 }), described.timezone.description),
  tags: Type.Array(Type.String({ minLength: 1, maxLength: 64, description: 'A tag.' }),
    { maxItems: 50, uniqueItems: true, description: described.tags.description }),
};

const Contact = ContactResponse;
const ContactDetail = ContactDetailResponse;
const Consent = ConsentResponse;
const OptOut = OptOutResponse;
const Dnc = DncResponse;

const Weekday = WeekdaySchema;
const HHMM = (description: string) => Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description });
const Policy = PolicyResponse;

const PolicyPatch = Type.Object({
  call_window: Type.Optional(Type.Object({
    enabled: Type.Optional(Type.Boolean({ description: 'Turn the window on or off.' })),
    start: Type.Optional(HHMM('Opening time (HH:MM).')),
    end: Type.Optional(Type.String({ pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$', description: 'Closing time (HH:MM or 24:00), after start.' })),
  }, { additionalProperties: false, minProperties: 1, description: 'Changes to the calling window.' })),
  allowed_days: Type.Optional(Type.Object({
    enabled: Type.Optional(Type.Boolean({ description: 'Turn the allowed days on or off.' })),
    days: Type.Optional(Type.Array(Weekday, { minItems: 1, maxItems: 7, uniqueItems: true, description: 'The allowed weekdays.' })),
  }, { additionalProperties: false, minProperties: 1, description: 'Changes to the allowed days.' })),
  frequency: Type.Optional(Type.Object({
    enabled: Type.Optional(Type.Boolean({ description: 'Turn the frequency limit on or off.' })),
    max_calls: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Calls allowed per number in the period (1-1000).' })),
    period_hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 8760, description: 'The rolling period in hours (1-8760).' })),
  }, { additionalProperties: false, minProperties: 1, description: 'Changes to the frequency limit.' })),
  consent_required: Type.Optional(Type.Boolean({ description: 'Require a live call consent.' })),
}, { additionalProperties: false, minProperties: 1 });

const CONTACT = {
  id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f71', phone_number: '+12125550187', name: 'Dana Whitfield', timezone: 'America/New_York',
  tags: ['patient', 'reminders'], sub_entity_id: null, created_at: '2026-11-20T15:04:05.000Z', updated_at: '2026-11-20T15:04:05.000Z',
};
const CONTACT_DETAIL = {
  ...CONTACT, call_history: { total: 3, answered: 2, last_24_hours: 1, last_30_days: 3, last_called_at: '2026-11-22T14:00:00.000Z' },
  opted_out: { call: false, sms: false }, on_dnc: false,
};
const CONSENT = {
  id: '0193a4c2-8a10-7c3e-9d2f-1b4a6c8e0f12', contact_id: CONTACT.id, channel: 'call', source: 'web_form:appointment-booking',
  status: 'active', captured_at: '2026-11-19T10:00:00.000Z', revoked_at: null, created_at: '2026-11-20T15:05:00.000Z',
};
const OPT_OUT = {
  id: '5d1f3a2b-6c4e-4f80-9a1b-2c3d4e5f6a7b', phone_number: CONTACT.phone_number, channel: 'call', source: 'api', status: 'active',
  created_at: '2026-11-21T09:30:00.000Z', revoked_at: null,
};
const DNC = { id: '0193a4c2-9b20-7d4f-8e3a-2c5b7d9f1a23', phone_number: '+13125550142', reason: 'asked not to be called', created_at: '2026-11-21T09:30:00.000Z' };
const POLICY = {
  call_window: { enabled: true, start: '08:00', end: '21:00' },
  allowed_days: { enabled: true, days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
  frequency: { enabled: true, max_calls: 3, period_hours: 24 },
  consent_required: false, updated_at: '2026-11-21T09:30:00.000Z',
};

const IdParams = UuidIdParams('contact');
const ConsentParams = Type.Object({
  id: Type.String({ description: 'The contact id (uuid).' }),
  consent_id: Type.String({ description: 'The consent record id (uuid).' }),
});
const OptOutParams = Type.Object({ id: Type.String({ description: 'The contact id (uuid).' }), channel: ChannelSchema('The channel to opt back in to.') });
const DncParams = Type.Object({ phone_number: E164('The listed number in E.164 form (URL-encode the +, as %2B).') });

function checkTimezone(tz: string | null | undefined) {
  if (tz !== undefined && tz !== null && !isTimeZone(tz)) throw validationError({ timezone: 'is not an IANA time zone name (e.g. America/Chicago)' });
}
function checkE164(field: string, n: string | undefined) {
  if (n !== undefined && !isE164(n)) throw validationError({ [field]: 'is not a valid E.164 number' });
}

/** The contact, when the credential may see it: a credential limited to a sub-entity sees only that sub-entity's
 *  contacts (another's, or one of none, is not_found as another organization's). */
const contactFor = async (db: Db, p: Principal, id: string) => assertWithin(p, await getContact(db, p.organizationId, id), `Contact ${id}`);
/** Before a write by id: a limited credential may touch only its sub-entity's contacts (no read for the others). */
const guardContact = async (db: Db, p: Principal, id: string) => { if (limitOf(p) !== null) await contactFor(db, p, id); };

export const contactRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/contacts', scope: 'contacts:write', tag: 'Contacts', summary: 'Create a contact',
    description: 'Creates a contact (phone_number required, one live contact per number: 409 contact_exists otherwise) and '
      + 'fires contact_created with the contact as its data. A contact\'s timezone, when given, is where its calling window '
      + 'is evaluated.',
    examples: { request: { phone_number: CONTACT.phone_number, name: CONTACT.name, timezone: CONTACT.timezone, tags: CONTACT.tags }, response: { data: CONTACT } },
    body: Type.Object({ phone_number: fields.phone_number, name: Type.Optional(fields.name), timezone: Type.Optional(fields.timezone),
      tags: Type.Optional(fields.tags), sub_entity_id: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'The sub-entity the contact belongs to (one of your organization\'s, else validation_error); null: none.' })), }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: Contact }) },
    errors: ['contact_exists'],
    handler: async (ctx) => {
      checkE164('phone_number', ctx.body.phone_number);
      checkTimezone(ctx.body.timezone);
      const reply = (c: ContactRow) => ({ status: 201, body: { data: contactView(c) } });
      const input = { ...ctx.body, sub_entity_id: createIn(ctx.principal, ctx.body.sub_entity_id) };
      return reply(await createContact(ctx.deps.db, ctx.principal.organizationId, input, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/contacts', scope: 'contacts:read', tag: 'Contacts', summary: 'List contacts',
    description: 'Lists the organization\'s contacts, newest first; filter by tag or phone_number; paginated with limit, order and cursor.',
    examples: { response: { data: [CONTACT], meta: { page_size: 20 } } },
    query: Type.Object({ ...PageQuery, tag: Type.Optional(Type.String({ minLength: 1, description: 'Only contacts with this tag.' })),
      phone_number: Type.Optional(E164('Only the contact with this number (URL-encode the + as %2B).')),
      sub_entity_id: Type.Optional(Type.String({ description: 'Only the contacts of this sub-entity.' })) }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Contact, { description: 'The contacts, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('contacts', query);
      assertSubEntityFilter(query.sub_entity_id);
      const rows = await listContacts(deps.db, principal.organizationId, { tag: query.tag, phone_number: query.phone_number, sub_entity_id: listFilter(principal, query.sub_entity_id) }, page);
      const out = deps.cursors.page('contacts', page, rows, (c) => c.id);
      return { status: 200, body: { data: out.data.map(contactView), meta: out.meta } };
    },
  });
  routes.add({
    method: 'GET', path: '/v1/contacts/{id}', scope: 'contacts:read', tag: 'Contacts', summary: 'Read a contact',
    description: 'Answers the contact with its call history counts (calls placed to its number), its live opt-outs and '
      + 'whether its number is on the Do-Not-Call list. Read-only.',
    examples: { response: { data: CONTACT_DETAIL } },
    params: IdParams, response: { status: 200, schema: Type.Object({ data: ContactDetail }) },
    handler: async ({ deps, principal, params }) => {
      const c = await contactFor(deps.db, principal, params.id);
      const [history, outs, dnc] = await Promise.all([
        callHistory(deps.db, principal.organizationId, c.phone_number, undefined, limitOf(principal)),
        listOptOuts(deps.db, principal.organizationId, c.phone_number),
        isOnDnc(deps.db, principal.organizationId, c.phone_number),
      ]);
      return { status: 200, body: { data: contactDetailView(c, history, outs, dnc) } };
    },
  });
  routes.add({
    method: 'PATCH', path: '/v1/contacts/{id}', scope: 'contacts:write', tag: 'Contacts', summary: 'Change a contact',
    description: 'Changes the fields given (at least one); timezone null clears it. Changing phone_number to another live '
      + 'contact\'s number answers 409 contact_exists.',
    examples: { request: { timezone: 'America/Chicago' }, response: { data: { ...CONTACT, timezone: 'America/Chicago', updated_at: '2026-11-21T08:00:00.000Z' } } },
    params: IdParams,
    body: Type.Object({ phone_number: Type.Optional(fields.phone_number), name: Type.Optional(fields.name), timezone: Type.Optional(fields.timezone),
      tags: Type.Optional(fields.tags), sub_entity_id: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'The sub-entity the contact belongs to (one of your organization\'s, else validation_error); null: none.' })), }, { additionalProperties: false, minProperties: 1 }),
    response: { status: 200, schema: Type.Object({ data: Contact }) },
    errors: ['contact_exists'],
    handler: async (ctx) => {
      checkE164('phone_number', ctx.body.phone_number);
      checkTimezone(ctx.body.timezone);
      await guardContact(ctx.deps.db, ctx.principal, ctx.params.id);
      const patch = ctx.body.sub_entity_id === undefined ? ctx.body : { ...ctx.body, sub_entity_id: createIn(ctx.principal, ctx.body.sub_entity_id) };
      const reply = (c: ContactRow) => ({ status: 200, body: { data: contactView(c) } });
      return reply(await updateContact(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, patch, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/contacts/{id}', scope: 'contacts:write', tag: 'Contacts', summary: 'Delete a contact',
    description: 'Deletes the contact (its consent records are kept as evidence but no longer count). Opt-outs and the '
      + 'Do-Not-Call list are per number and stay in force. Answers 204.',
    params: IdParams, response: { status: 204, description: 'Deleted' },
    handler: async (ctx) => {
      await guardContact(ctx.deps.db, ctx.principal, ctx.params.id);
      const reply = () => ({ status: 204 });
      await deleteContact(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(reply));
      return reply();
    },
  });

  // Consents.
  routes.add({
    method: 'POST', path: '/v1/contacts/{id}/consents', scope: 'contacts:write', tag: 'Contacts', summary: 'Record a consent',
    description: 'Records the contact\'s consent to be called or texted: channel, source (where it was captured) and '
      + 'captured_at (default now; never in the future). With consent_required on, a call needs a live call consent.',
    examples: { request: { channel: 'call', source: CONSENT.source, captured_at: CONSENT.captured_at }, response: { data: CONSENT } },
    params: IdParams,
    body: Type.Object({ channel: ChannelSchema('What the consent covers: call or sms.'),
      source: Type.String({ minLength: 1, maxLength: 200, description: 'Where the consent was captured.' }),
      captured_at: Type.Optional(ISO('When the person gave consent (default now).')) }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: Consent }) },
    handler: async (ctx) => {
      await guardContact(ctx.deps.db, ctx.principal, ctx.params.id);
      const reply = (c: ConsentRow) => ({ status: 201, body: { data: consentView(c) } });
      return reply(await addConsent(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.body, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/contacts/{id}/consents', scope: 'contacts:read', tag: 'Contacts', summary: 'List a contact\'s consents',
    description: 'Every consent record of the contact, active and revoked, newest first. Read-only.',
    examples: { response: { data: [CONSENT] } },
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: Type.Array(Consent, { description: 'The consent records, newest first.' }) }) },
    handler: async ({ deps, principal, params }) => {
      await guardContact(deps.db, principal, params.id);
      return { status: 200, body: { data: (await listConsents(deps.db, principal.organizationId, params.id)).map(consentView) } };
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/contacts/{id}/consents/{consent_id}', scope: 'contacts:write', tag: 'Contacts',
    summary: 'Revoke a consent',
    description: 'Revokes the consent record (kept, with revoked_at) and answers it. Revoking a revoked record answers 409 state_conflict.',
    examples: { response: { data: { ...CONSENT, status: 'revoked', revoked_at: '2026-11-22T10:00:00.000Z' } } },
    params: ConsentParams, response: { status: 200, schema: Type.Object({ data: Consent }) },
    errors: ['state_conflict'],
    handler: async (ctx) => {
      await guardContact(ctx.deps.db, ctx.principal, ctx.params.id);
      const reply = (c: ConsentRow) => ({ status: 200, body: { data: consentView(c) } });
      return reply(await revokeConsent(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.params.consent_id, ctx.idempotent(reply)));
    },
  });

  // Opt-outs of the contact's number.
  routes.add({
    method: 'GET', path: '/v1/contacts/{id}/opt-outs', scope: 'contacts:read', tag: 'Contacts', summary: 'List a contact\'s opt-outs',
    description: 'Every opt-out of the contact\'s number, in force and revoked, on both channels (SMS STOP replies '
      + 'included), newest first. Read-only.',
    examples: { response: { data: [OPT_OUT] } },
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: Type.Array(OptOut, { description: 'The opt-out records, newest first.' }) }) },
    handler: async ({ deps, principal, params }) => {
      const c = await contactFor(deps.db, principal, params.id);
      return { status: 200, body: { data: (await listOptOuts(deps.db, principal.organizationId, c.phone_number)).map(optOutView) } };
    },
  });
  routes.add({
    method: 'POST', path: '/v1/contacts/{id}/opt-outs', scope: 'contacts:write', tag: 'Contacts', summary: 'Opt a contact out',
    description: 'Records that the contact\'s number must not be called (channel call: calls answer recipient_opted_out) '
      + 'or texted (channel sms). 201 with the new record; 200 with the record in force when the number is already opted out.',
    examples: { request: { channel: 'call', source: 'api' }, response: { data: OPT_OUT } },
    params: IdParams,
    body: Type.Object({ channel: ChannelSchema('The channel to opt out of: call or sms.'),
      source: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'How the request was received (default api).' })) },
    { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: OptOut }), also: { 200: 'The number was already opted out: the record in force.' } },
    handler: async (ctx) => {
      const c = await contactFor(ctx.deps.db, ctx.principal, ctx.params.id);
      const reply = (r: { row: OptOutRow; created: boolean }) => ({ status: r.created ? 201 : 200, body: { data: optOutView(r.row) } });
      return reply(await optOut(ctx.deps.db, ctx.principal.organizationId, c.phone_number, ctx.body.channel, ctx.body.source ?? 'api', ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/contacts/{id}/opt-outs/{channel}', scope: 'contacts:write', tag: 'Contacts',
    summary: 'Opt a contact back in',
    description: 'Revokes the opt-out in force on the channel (the person asked to be contacted again) and answers the '
      + 'revoked record; 409 state_conflict when the number is not opted out.',
    examples: { response: { data: { ...OPT_OUT, status: 'revoked', revoked_at: '2026-11-22T10:00:00.000Z' } } },
    params: OptOutParams, response: { status: 200, schema: Type.Object({ data: OptOut }) },
    errors: ['state_conflict'],
    handler: async (ctx) => {
      const c = await contactFor(ctx.deps.db, ctx.principal, ctx.params.id);
      const reply = (r: OptOutRow) => ({ status: 200, body: { data: optOutView(r) } });
      return reply(await optIn(ctx.deps.db, ctx.principal.organizationId, c.phone_number, ctx.params.channel, ctx.idempotent(reply)));
    },
  });

  // The Do-Not-Call list.
  routes.add({
    method: 'POST', path: '/v1/compliance/dnc', subEntities: 'organization', scope: 'contacts:write', tag: 'Contacts', summary: 'Add a number to the Do-Not-Call list',
    description: 'Lists the number on the organization\'s internal Do-Not-Call list: every call path answers 403 '
      + 'dnc_suppressed for it, whatever the policy. 201 with the entry; 200 with the existing entry when already listed.',
    examples: { request: { phone_number: DNC.phone_number, reason: DNC.reason }, response: { data: DNC } },
    body: Type.Object({ phone_number: E164('The number to list (E.164).'),
      reason: Type.Optional(Type.String({ maxLength: 500, description: 'Why (free text).' })) }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: Dnc }), also: { 200: 'The number was already listed: the existing entry.' } },
    handler: async (ctx) => {
      checkE164('phone_number', ctx.body.phone_number);
      const reply = (r: { row: DncRow; created: boolean }) => ({ status: r.created ? 201 : 200, body: { data: dncView(r.row) } });
      return reply(await addDnc(ctx.deps.db, ctx.principal.organizationId, ctx.body.phone_number, ctx.body.reason ?? '', ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/compliance/dnc', subEntities: 'organization', scope: 'contacts:read', tag: 'Contacts', summary: 'List the Do-Not-Call list',
    description: 'The numbers on the organization\'s Do-Not-Call list, newest first; paginated with limit, order and cursor.',
    examples: { response: { data: [DNC], meta: { page_size: 20 } } },
    query: Type.Object(PageQuery, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Dnc, { description: 'The listed numbers.' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('dnc', query);
      const out = deps.cursors.page('dnc', page, await listDnc(deps.db, principal.organizationId, page), (d) => d.id);
      return { status: 200, body: { data: out.data.map(dncView), meta: out.meta } };
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/compliance/dnc/{phone_number}', subEntities: 'organization', scope: 'contacts:write', tag: 'Contacts',
    summary: 'Remove a number from the Do-Not-Call list',
    description: 'Takes the number off the list (the entry is kept as history); 404 when it is not listed. Answers 204.',
    params: DncParams, response: { status: 204, description: 'Removed' },
    handler: async (ctx) => {
      const reply = () => ({ status: 204 });
      await removeDnc(ctx.deps.db, ctx.principal.organizationId, ctx.params.phone_number, ctx.idempotent(reply));
      return reply();
    },
  });

  // The policy.
  routes.add({
    method: 'GET', path: '/v1/compliance/policy', subEntities: 'organization', scope: 'contacts:read', tag: 'Contacts', summary: 'Read the compliance policy',
    description: 'The organization\'s call compliance policy. A new organization has every rule off (updated_at null). Read-only.',
    examples: { response: { data: POLICY } },
    response: { status: 200, schema: Type.Object({ data: Policy }) },
    handler: async ({ deps, principal }) => {
      const { policy, updatedAt } = await readPolicy(deps.db, principal.organizationId);
      return { status: 200, body: { data: policyView(policy, updatedAt) } };
    },
  });
  routes.add({
    method: 'PATCH', path: '/v1/compliance/policy', subEntities: 'organization', scope: 'compliance:write', tag: 'Contacts', summary: 'Change the compliance policy',
    description: 'Changes the parts given (others keep their values) and answers the whole policy. Needs compliance:write, '
      + 'which no key gets by default (an administrator grants it: admin key create --scopes ...,compliance:write). '
      + 'Checked on every call path (POST /v1/calls/dial, POST /v1/calls, POST /v1/webrtc-token, POST /v1/room-token) '
      + 'before anything is placed.',
    examples: { request: { call_window: { enabled: true, start: '08:00', end: '21:00' }, frequency: { enabled: true, max_calls: 3, period_hours: 24 } },
      response: { data: POLICY } },
    body: PolicyPatch,
    response: { status: 200, schema: Type.Object({ data: Policy }) },
    handler: async (ctx) => {
      const { policy } = await readPolicy(ctx.deps.db, ctx.principal.organizationId);
      const next = mergePolicy(policy, ctx.body);
      if (next.window.start >= next.window.end) throw validationError({ 'call_window.end': `must be after call_window.start (${next.window.start})` });
      const reply = (r: PolicyRow) => ({ status: 200, body: { data: policyView(policyFromRow(r), r.updated_at) } });
      return reply(await writePolicy(ctx.deps.db, ctx.principal.organizationId, next, ctx.idempotent(reply)));
    },
  });
};
