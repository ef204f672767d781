// Response schemas of phone numbers, beside their views (records.ts: phoneNumberView; lifecycle.ts: numberDetailView).
import { Type } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';

export const PhoneNumberResponse = Type.Object({
  id: Type.Integer({ description: 'The number\'s id (use it in /v1/phone-numbers/{id}).' }),
  phone_number: Type.String({ description: 'The number in E.164 form.' }),
  name: Type.String({ description: 'A label for the number.' }),
  organization_id: Type.String({ format: 'uuid', description: 'The organization that holds the number.' }),
  user_id: Type.String({ format: 'uuid', description: 'The user the number is assigned to.' }),
  provider: Type.String({ description: 'The carrier the number lives on (sandbox, livekit, or sip for a SIP trunk\'s numbers).' }),
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
  source: Type.Union([Type.Literal('purchased'), Type.Literal('imported')], { description: 'Where the number came from: '
    + 'purchased (bought here from the carrier\'s inventory) or imported (a DID of the SIP trunk provider, brought onto '
    + 'the organization with POST /v1/phone-numbers/import or the operator CLI).' }),
  inbound: Type.Union([Type.Literal('softphone'), Type.Literal('reject')], { description: 'What answers calls to the number '
    + '(CARRIER=sip): softphone (default) rings every browser listening for it on the softphone WebSocket, the first to '
    + 'accept takes the call; reject answers 480. Set it with PATCH /v1/phone-numbers/{id}.' }),
  sub_entity_id: Nullable(Type.String({ format: 'uuid' }), 'The sub-entity the number belongs to (GET /v1/sub-entities/{id}); '
    + 'calls placed from it and SMS sent from it take it. null: none. Set it with PATCH /v1/phone-numbers/{id}.'),
  created_at: Type.String({ format: 'date-time', description: 'When the number was acquired.' }),
}, { description: 'A phone number the organization holds.' });

export const PhoneNumberDetailResponse = Type.Composite([PhoneNumberResponse, Type.Object({
  area_code: Type.String({ description: 'The three-digit area code.' }),
  activated_at: Nullable(Type.String({ format: 'date-time' }), 'When the number turned ACTIVE; null before.'),
  released_at: Nullable(Type.String({ format: 'date-time' }), 'When the number was released; null while held.'),
})], { description: 'A phone number with its lifecycle status.' });
