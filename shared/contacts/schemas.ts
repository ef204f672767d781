// Response schemas of contacts, consents, opt-outs and the Do-Not-Call list, beside their views (contacts.ts:
// contactView, contactDetailView; consents.ts: consentView; opt-outs.ts: optOutView; dnc.ts: dncView).
import { Type } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';

const ISO = (description: string) => Type.String({ format: 'date-time', description });
/** A channel of consents and opt-outs (request fields use it too, with their own description). */
export const ChannelSchema = (description: string) => Type.Union([Type.Literal('call'), Type.Literal('sms')], { description });
const Status = (description: string) => Type.Union([Type.Literal('active'), Type.Literal('revoked')], { description });

export const ContactResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The contact id.' }),
  phone_number: Type.String({ description: 'The contact\'s phone number in E.164 form; one live contact per number.' }),
  name: Type.String({ description: 'The contact\'s name (may be empty).' }),
  timezone: Nullable(Type.String(), 'IANA time zone of the contact (e.g. America/Chicago): the calling window is evaluated '
    + 'in it; null: the zones of the number\'s area code or country.'),
  tags: Type.Array(Type.String({ description: 'A tag.' }), { description: 'Free-form labels; GET /v1/contacts?tag= filters by one.' }),
  sub_entity_id: Nullable(Type.String({ format: 'uuid' }), 'The sub-entity the contact belongs to; null: none. GET /v1/contacts?sub_entity_id= filters by it.'),
  created_at: ISO('When the contact was created.'),
  updated_at: ISO('When the contact was last changed.'),
}, { description: 'A contact.' });

export const ContactDetailResponse = Type.Object({
  ...ContactResponse.properties,
  call_history: Type.Object({
    total: Type.Integer({ description: 'Calls the organization placed to the number.' }),
    answered: Type.Integer({ description: 'Of those, calls a person picked up.' }),
    last_24_hours: Type.Integer({ description: 'Calls placed in the last 24 hours.' }),
    last_30_days: Type.Integer({ description: 'Calls placed in the last 30 days.' }),
    last_called_at: Nullable(Type.String({ format: 'date-time' }), 'When the number was last called; null: never.'),
  }, { description: 'How often the organization called the contact\'s number.' }),
  opted_out: Type.Object({
    call: Type.Boolean({ description: 'The number opted out of calls (calls answer recipient_opted_out).' }),
    sms: Type.Boolean({ description: 'The number opted out of SMS.' }),
  }, { description: 'The number\'s live opt-outs.' }),
  on_dnc: Type.Boolean({ description: 'The number is on the organization\'s Do-Not-Call list.' }),
}, { description: 'A contact with its call history counts and compliance state.' });

export const ConsentResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The consent record id.' }),
  contact_id: Type.String({ format: 'uuid', description: 'The contact it belongs to.' }),
  channel: ChannelSchema('What the consent covers: call or sms.'),
  source: Type.String({ description: 'Where the consent was captured (a web form, a recorded call, a signed paper form ...).' }),
  status: Status('active, or revoked (kept as evidence).'),
  captured_at: ISO('When the person gave consent.'),
  revoked_at: Nullable(Type.String({ format: 'date-time' }), 'When the consent was revoked; null while active.'),
  created_at: ISO('When the record was stored.'),
}, { description: 'A consent record.' });

export const OptOutResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The opt-out record id.' }),
  phone_number: Type.String({ description: 'The number that opted out.' }),
  channel: ChannelSchema('The channel opted out of: call or sms.'),
  source: Type.String({ description: 'How the opt-out was recorded (api, sms_stop for an SMS STOP reply, ...).' }),
  status: Status('active (in force), or revoked (opted back in).'),
  created_at: ISO('When the number opted out.'),
  revoked_at: Nullable(Type.String({ format: 'date-time' }), 'When the number opted back in; null while in force.'),
}, { description: 'An opt-out record.' });

export const DncResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The entry id.' }),
  phone_number: Type.String({ description: 'The listed number (E.164).' }),
  reason: Type.String({ description: 'Why it was listed (free text; may be empty).' }),
  created_at: ISO('When it was listed.'),
}, { description: 'A number on the organization\'s Do-Not-Call list.' });
