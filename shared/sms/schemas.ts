// Response schemas of SMS messages and the texting registration, beside their views (messages.ts: messageView;
// registration.ts: registrationView).
import { Type } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';

const ISO = (description: string) => Type.String({ format: 'date-time', description });
export const MESSAGE_STATUSES = ['queued', 'sent', 'delivered', 'undelivered', 'failed', 'received'] as const;

export const MessageResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The message id.' }),
  phone_number: Type.String({ description: 'The remote party: the recipient of an outbound message, the sender of an inbound one.' }),
  from_number: Type.String({ description: 'Who sent it (your number for outbound).' }),
  to_number: Type.String({ description: 'Who it was sent to (your number for inbound).' }),
  direction: Type.Union([Type.Literal('outbound'), Type.Literal('inbound')], { description: 'outbound (sent by you) or inbound (a reply).' }),
  status: Type.Union(MESSAGE_STATUSES.map((s) => Type.Literal(s)), {
    description: 'Outbound: queued, then sent (the carrier accepted it), then delivered or undelivered; failed when the '
      + 'carrier refused it, the recipient opted out or the spend cap refused it. Inbound: received.' }),
  body: Nullable(Type.String(), 'The text; null once the message left the queue when its sub-entity (or the organization) is in HIPAA mode (body_withheld).'),
  body_withheld: Type.Boolean({ description: 'true when body is withheld by HIPAA mode (GET /v1/sub-entities/{id}).' }),
  sub_entity_id: Nullable(Type.String({ format: 'uuid' }), 'The sub-entity of the message: its number\'s (from_number when sent, to_number when received); null: none.'),
  encoding: Type.Union([Type.Literal('GSM-7'), Type.Literal('UCS-2')], { description: 'GSM-7 when every character is in the GSM 03.38 alphabet, else UCS-2.' }),
  segments: Type.Integer({ description: 'Segments the body takes (what is charged): 160/153 GSM-7 or 70/67 UCS-2 characters each.' }),
  provider_id: Nullable(Type.String(), 'The carrier\'s id of the message; null until handed over.'),
  error_message: Nullable(Type.String(), 'Why it failed or was undelivered (a carrier error, recipient_opted_out or spend_cap_reached); else null.'),
  auto_reply_to: Nullable(Type.String(), 'For an automatic reply to STOP/START/HELP: the inbound message it answers.'),
  channel: Type.Literal('sms', { description: 'Always sms.' }),
  created_at: ISO('When it was accepted or received.'),
  sent_at: Nullable(ISO('When the carrier accepted it.'), 'When the carrier accepted it; null before.'),
  delivered_at: Nullable(ISO('When the handset received it.'), 'When the handset received it; null unless delivered.'),
  updated_at: ISO('When its status last changed.'),
}, { description: 'An SMS message.' });
export const RegistrationResponse = Type.Object({
  id: Nullable(Type.String({ format: 'uuid' }), 'The registration id; null when none was submitted.'),
  status: Type.Union(['none', 'pending', 'approved', 'rejected'].map((s) => Type.Literal(s)), {
    description: 'none (never submitted), pending (being vetted), approved (texting allowed), rejected (see rejection_reason; submit again).' }),
  brand: Nullable(Type.Object({}, { additionalProperties: true }), 'The submitted brand; null when none.'),
  campaign: Nullable(Type.Object({}, { additionalProperties: true }), 'The submitted campaign; null when none.'),
  provider: Nullable(Type.String(), 'Who vets it (sandbox).'),
  rejection_reason: Nullable(Type.String(), 'Why vetting rejected it; null unless rejected.'),
  submitted_at: Nullable(ISO('When it was last submitted.'), 'When it was last submitted.'),
  decided_at: Nullable(ISO('When vetting decided.'), 'When vetting decided; null while pending.'),
  numbers: Type.Array(Type.Object({
    phone_number: Type.String({ description: 'A number of the organization.' }),
    texting_status: Type.String({ description: 'not_registered, pending, registered or rejected.' }),
  }, { description: 'A number and its texting status.' }), { description: 'Each held number\'s texting_status.' }),
}, { description: 'The organization\'s texting (A2P 10DLC) registration.' });
