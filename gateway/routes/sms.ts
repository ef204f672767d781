import { Type } from '@sinclair/typebox';
import { contentScope } from '../../shared/sub-entities/content-policy.ts';
import { assertSubEntityFilter } from '../../shared/sub-entities/sub-entities.ts';
import { assertNumberWithinDb, assertWithin, listFilter } from '../../shared/sub-entities/limit.ts';
import { PageQuery } from '../../shared/pagination.ts';
import { receiveInbound, type InboundResult } from '../../shared/sms/inbound.ts';
import { acceptSend, getMessage, listMessages, messageView, sendQueue, type MessageRow } from '../../shared/sms/messages.ts';
import {
  CAMPAIGN_USE_CASES, findRegistration, numbersTextingStatus, registrationView, submitRegistration, type Submitted,
} from '../../shared/sms/registration.ts';
import { registrationProvider } from '../../shared/sms/sandbox-registration.ts';
import { MAX_SEGMENTS } from '../../shared/sms/segments.ts';
import { MESSAGE_STATUSES, MessageResponse, RegistrationResponse } from '../../shared/sms/schemas.ts';
import type { GatewayDeps, Plugin, Reply } from '../http/types.ts';
import { ListMeta, Nullable, UuidIdParams } from './schemas.ts';

const E164 = (description: string) => Type.String({ minLength: 1, maxLength: 32, description });

const Message = MessageResponse;

const MESSAGE_EXAMPLE = {
  id: '0193a4e1-2b3c-7d4e-8f50-61a2b3c4d5e6', phone_number: '+12125550187', from_number: '+14155550123', to_number: '+12125550187',
  direction: 'outbound', status: 'queued', body: 'Your appointment is tomorrow at 10 AM. Reply STOP to opt out.', body_withheld: false, sub_entity_id: null, encoding: 'GSM-7',
  segments: 1, provider_id: null, error_message: null, auto_reply_to: null, channel: 'sms', created_at: '2026-11-23T01:00:00.000Z',
  sent_at: null, delivered_at: null, updated_at: '2026-11-23T01:00:00.000Z',
};

const Brand = Type.Object({
  legal_name: Type.String({ minLength: 2, maxLength: 255, description: 'The business\'s legal name, as registered with the tax authority.' }),
  ein: Type.String({ pattern: '^\\d{2}-?\\d{7}$', description: 'US Employer Identification Number (12-3456789).' }),
  website: Type.Optional(Type.String({ maxLength: 255, description: 'The business\'s website.' })),
  vertical: Type.String({ minLength: 2, maxLength: 64, description: 'Industry, e.g. healthcare, retail, real_estate.' }),
  country: Type.Literal('US', { description: 'Country of registration (US: 10DLC).' }),
}, { additionalProperties: false, description: 'Who sends: the brand.' });

const Campaign = Type.Object({
  use_case: Type.Union(CAMPAIGN_USE_CASES.map((u) => Type.Literal(u)), { description: 'What the messages are for.' }),
  description: Type.String({ minLength: 20, maxLength: 1000, description: 'What is sent and to whom.' }),
  sample_messages: Type.Array(Type.String({ minLength: 10, maxLength: 320, description: 'A message as it will be sent.' }),
    { minItems: 1, maxItems: 5, description: '1 to 5 sample messages; vetting expects opt-out language (Reply STOP).' }),
  message_flow: Type.String({ minLength: 20, maxLength: 1000, description: 'How recipients give consent (opt in).' }),
}, { additionalProperties: false, description: 'What is sent: the campaign.' });

const Registration = RegistrationResponse;

const BRAND_EXAMPLE = { legal_name: 'Acme Dental LLC', ein: '12-3456789', website: 'https://acmedental.example', vertical: 'healthcare', country: 'US' };
const CAMPAIGN_EXAMPLE = {
  use_case: 'appointment_reminders', description: 'Appointment reminders and rescheduling links for our patients.',
  sample_messages: ['Acme Dental: your cleaning is tomorrow at 10 AM. Reply STOP to opt out.'],
  message_flow: 'Patients opt in on the booking form by ticking an unchecked SMS consent box.',
};
const REGISTRATION_EXAMPLE = {
  id: '0193a4e0-1a2b-7c3d-8e4f-5a6b7c8d9e0f', status: 'pending', brand: BRAND_EXAMPLE, campaign: CAMPAIGN_EXAMPLE, provider: 'sandbox',
  rejection_reason: null, submitted_at: '2026-11-23T01:00:00.000Z', decided_at: null,
  numbers: [{ phone_number: '+14155550123', texting_status: 'pending' }],
};

async function registrationReply(deps: GatewayDeps, orgId: string) {
  return registrationView(await findRegistration(deps.db, orgId), await numbersTextingStatus(deps.db, orgId));
}

const inboundView = (r: InboundResult) =>
  ({ message: messageView(r.message), keyword: r.keyword, reply: r.reply ? messageView(r.reply) : null });

// SMS: sending and reading messages, the texting registration, and the sandbox's inbound simulation. Rules live
// in shared/sms.
export const smsRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/sms/send', scope: 'sms:write', tag: 'SMS', summary: 'Send an SMS',
    description: 'Accepts a message from an ACTIVE, texting-registered number of your organization and answers it queued '
      + `(202); it is sent asynchronously, each number at most SMS_NUMBER_RATE_PER_SECOND messages per second (default 1). `
      + `The body may take at most ${MAX_SEGMENTS} segments (GSM-7: 160 characters single, 153 per segment; UCS-2: 70 / 67). `
      + 'Refused with 403 texting_not_ready when the texting registration is missing, pending or rejected or from_number '
      + 'cannot send (fields.reason, fields.registration_status), 403 recipient_opted_out when the recipient replied STOP, '
      + '403 forbidden when a number is outside the credential\'s bounds, 403 destination_blocked when a demo key texts a '
      + 'number outside the sandbox\'s 555 numbers, 402 no_active_subscription when the organization\'s subscription is '
      + 'inactive. Each segment is charged when the message is handed to the carrier (daily spend cap; a message whose '
      + 'organization\'s subscription lapsed meanwhile fails, uncharged). Events: sms_sent, then sms_delivered or sms_failed.',
    examples: {
      request: { from_number: '+14155550123', to_number: '+12125550187', body: MESSAGE_EXAMPLE.body },
      response: { data: MESSAGE_EXAMPLE },
    },
    body: Type.Object({
      from_number: E164('Your ACTIVE, texting-registered number (E.164), inside the credential\'s bounds.'),
      to_number: E164('The recipient (E.164), inside the credential\'s bounds.'),
      body: Type.String({ minLength: 1, maxLength: 1600, description: `The text, at most ${MAX_SEGMENTS} segments.` }),
      sub_entity_id: Type.Optional(Type.String({ description: 'The message\'s sub-entity. Without it the message takes '
        + 'from_number\'s; a number that belongs to a sub-entity binds its messages to it (naming another is a validation_error).' })),
    }, { additionalProperties: false }),
    response: { status: 202, description: 'Accepted: the message, queued.', schema: Type.Object({ data: Message }) },
    errors: ['forbidden', 'destination_blocked', 'texting_not_ready', 'no_active_subscription', 'recipient_opted_out', 'idempotency_conflict'],
    handler: async (ctx) => {
      const reply = (m: MessageRow) => ({ status: 202, body: { data: messageView(m) } });
      return reply(await acceptSend(ctx.deps.db, sendQueue(ctx.deps.queues), ctx.principal, ctx.body,
        ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'GET', path: '/v1/sms/messages', scope: 'sms:read', tag: 'SMS', summary: 'List SMS messages',
    description: 'Lists the organization\'s messages, outbound and inbound, newest first; filter by direction, status, the '
      + 'remote phone_number or your local_number; paginated with limit, order and cursor. Read-only.',
    examples: { response: { data: [MESSAGE_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object({
      ...PageQuery,
      direction: Type.Optional(Type.Union([Type.Literal('outbound'), Type.Literal('inbound')], { description: 'Only this direction.' })),
      status: Type.Optional(Type.Union(MESSAGE_STATUSES.map((s) => Type.Literal(s)), { description: 'Only this status.' })),
      phone_number: Type.Optional(E164('Only messages with this remote party.')),
      local_number: Type.Optional(E164('Only messages sent from or received on this number of yours.')),
      sub_entity_id: Type.Optional(Type.String({ description: 'Only the messages of this sub-entity.' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Message, { description: 'The messages.' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const { limit, cursor, order, ...filters } = query;
      const page = deps.cursors.params('sms-messages', { limit, cursor, order });
      assertSubEntityFilter(filters.sub_entity_id);
      const rows = await listMessages(deps.db, principal.organizationId, { ...filters, sub_entity_id: listFilter(principal, filters.sub_entity_id) }, page);
      const out = deps.cursors.page('sms-messages', page, rows, (m) => m.id);
      const content = await contentScope(deps.db, principal.organizationId);
      return { status: 200, body: { data: out.data.map((m) => messageView(m, content)), meta: out.meta } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/sms/messages/{id}', scope: 'sms:read', tag: 'SMS', summary: 'Read an SMS message',
    description: 'Answers one message of the organization with its current status. Read-only.',
    examples: { response: { data: { ...MESSAGE_EXAMPLE, status: 'delivered', provider_id: 'SBX0193a4e12b3c7d4e8f5061a2b3c4d5e6',
      sent_at: '2026-11-23T01:00:01.000Z', delivered_at: '2026-11-23T01:00:03.000Z', updated_at: '2026-11-23T01:00:03.000Z' } } },
    params: UuidIdParams('message'),
    response: { status: 200, schema: Type.Object({ data: Message }) },
    handler: async ({ deps, principal, params }) => {
      const m = assertWithin(principal, await getMessage(deps.db, principal.organizationId, params.id), `Message ${params.id}`);
      return { status: 200, body: { data: messageView(m, await contentScope(deps.db, principal.organizationId)) } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/sms/registration', subEntities: 'organization', scope: 'sms:read', tag: 'SMS', summary: 'Read the texting registration',
    description: 'Answers the organization\'s A2P 10DLC texting registration (status none when never submitted) and each '
      + 'held number\'s texting_status. Read-only.',
    examples: { response: { data: REGISTRATION_EXAMPLE } },
    response: { status: 200, schema: Type.Object({ data: Registration }) },
    handler: async ({ deps, principal }) => ({ status: 200, body: { data: await registrationReply(deps, principal.organizationId) } }),
  });

  routes.add({
    method: 'POST', path: '/v1/sms/registration', subEntities: 'organization', scope: 'sms:write', tag: 'SMS', summary: 'Submit the texting registration',
    description: 'Submits a brand and a campaign for A2P 10DLC vetting: the registration becomes pending (202) and its '
      + 'numbers\' texting_status pending; vetting then approves it (numbers registered, texting allowed) or rejects it '
      + 'with a rejection_reason. Allowed when there is none or it was rejected; 409 state_conflict while '
      + 'pending or approved. Every status change fires TEXTING_REGISTRATION_STATUS_CHANGED. The sandbox vets in 3 s and '
      + 'rejects an EIN starting with 00 (brand_identity_unverified) and sample messages without opt-out language '
      + '(campaign_opt_out_language_missing).',
    examples: { request: { brand: BRAND_EXAMPLE, campaign: CAMPAIGN_EXAMPLE }, response: { data: REGISTRATION_EXAMPLE } },
    body: Type.Object({ brand: Brand, campaign: Campaign }, { additionalProperties: false }),
    response: { status: 202, description: 'Submitted: the registration, pending.', schema: Type.Object({ data: Registration }) },
    errors: ['state_conflict', 'idempotency_conflict'],
    handler: async (ctx) => {
      const reply = (r: Submitted) => ({ status: 202, body: { data: registrationView(r.row, r.numbers) } });
      return reply(await submitRegistration(ctx.deps.db, registrationProvider(ctx.deps.queues, ctx.deps.config), ctx.principal.organizationId,
        ctx.body, ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'POST', path: '/v1/sandbox/sms/inbound', scope: 'sms:write', tag: 'Sandbox', summary: 'Simulate an inbound SMS',
    description: 'The sandbox carrier\'s stand-in for a reply from a phone: stores an inbound message from from_number to '
      + 'your ACTIVE number to_number and fires contact_replied. A body that is only STOP, UNSUBSCRIBE, CANCEL, END or QUIT '
      + '(any case, trimmed) opts from_number out of SMS from your organization; START or UNSTOP opts it back in; HELP '
      + 'changes nothing. Each keyword is answered automatically: the reply is recorded as an outbound message and sent.',
    examples: {
      request: { from_number: '+12125550187', to_number: '+14155550123', body: 'STOP' },
      response: { data: {
        message: { ...MESSAGE_EXAMPLE, id: '0193a4e2-0000-7000-8000-000000000001', phone_number: '+12125550187', from_number: '+12125550187',
          to_number: '+14155550123', direction: 'inbound', status: 'received', body: 'STOP', provider_id: 'SBXIN0193a4e200007000800000000001' },
        keyword: 'stop',
        reply: { ...MESSAGE_EXAMPLE, id: '0193a4e2-0000-7000-8000-000000000002', auto_reply_to: '0193a4e2-0000-7000-8000-000000000001',
          body: 'Acme Dental: You are unsubscribed and will receive no more messages. Reply START to resubscribe.' },
      } },
    },
    body: Type.Object({
      from_number: E164('The phone that sends the reply (E.164).'),
      to_number: E164('Your ACTIVE number that receives it.'),
      body: Type.String({ minLength: 1, maxLength: 1600, description: 'The text received.' }),
    }, { additionalProperties: false }),
    response: { status: 201, description: 'The stored message, the keyword recognized and the automatic reply.', schema: Type.Object({ data: Type.Object({
      message: Message,
      keyword: Nullable(Type.Union([Type.Literal('stop'), Type.Literal('start'), Type.Literal('help')]), 'The keyword the body is, or null.'),
      reply: Nullable(Message, 'The automatic reply (queued), or null when the body is no keyword.'),
    }, { description: 'What happened.' }) }) },
    errors: ['idempotency_conflict', 'forbidden'],
    handler: async (ctx) => {
      // A credential limited to a sub-entity simulates replies only to its own sub-entity's numbers.
      await assertNumberWithinDb(ctx.deps.db, ctx.principal, ctx.body.to_number, 'to_number');
      const reply = (r: InboundResult) => ({ status: 201, body: { data: inboundView(r) } });
      return reply(await receiveInbound(ctx.deps.db, sendQueue(ctx.deps.queues), ctx.principal.organizationId,
        ctx.body, ctx.idempotent(reply)));
    },
  });
};
