// The sub-entity and its HIPAA audit rows as the API shows them: response schemas and the views that build them.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import type { HipaaAuditRow, SubEntityRow } from './sub-entities.ts';

export const SubEntityResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The sub-entity id; pass it as sub_entity_id on numbers, calls, contacts and SMS.' }),
  name: Type.String({ description: 'The unit\'s name (a clinic, a branch, a client account).' }),
  external_ref: Nullable(Type.String(), 'Your own reference for the unit (an id in your system); null when not set.'),
  metadata: Type.Record(Type.String(), Type.String(), { description: 'Your string key/value pairs (at most 20).' }),
  hipaa_mode: Type.Boolean({ description: 'HIPAA mode: while true, the content of its calls (transcripts, recordings, '
    + 'analysis) is never returned (content_policy_forbidden), its call webhooks carry no content and its SMS bodies are '
    + 'not returned once delivered. Changed only with compliance:write; every change is audited.' }),
  created_at: Type.String({ format: 'date-time', description: 'When the sub-entity was created.' }),
  updated_at: Type.String({ format: 'date-time', description: 'When it last changed.' }),
}, { description: 'A sub-entity.' });

export const HipaaAuditResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The audit row id.' }),
  sub_entity_id: Type.String({ format: 'uuid', description: 'The sub-entity whose HIPAA mode changed.' }),
  old_value: Type.Boolean({ description: 'hipaa_mode before the change.' }),
  new_value: Type.Boolean({ description: 'hipaa_mode after the change.' }),
  credential_kind: Type.Union([Type.Literal('api_key'), Type.Literal('client_token'), Type.Literal('session')],
    { description: 'api_key, or session (a console user).' }),
  credential_id: Type.String({ description: 'The API key id or the console session id that made the change.' }),
  api_key_id: Nullable(Type.String({ format: 'uuid' }), 'The API key that made the change; null for a console session.'),
  user_id: Nullable(Type.String({ format: 'uuid' }), 'The user of the credential; null for an organization key without a user.'),
  client_address: Type.String({ description: 'The peer address of the connection the change came from.' }),
  changed_at: Type.String({ format: 'date-time', description: 'When it changed.' }),
  reason: Nullable(Type.String(), 'Why, as the person changing it said (reason / hipaa_reason); null when none was given.'),
}, { description: 'One change of a sub-entity\'s HIPAA mode.' });

export const subEntityView = (s: SubEntityRow): Static<typeof SubEntityResponse> => ({
  id: s.id, name: s.name, external_ref: s.external_ref, metadata: s.metadata, hipaa_mode: s.hipaa_mode,
  created_at: s.created_at.toISOString(), updated_at: s.updated_at.toISOString(),
});

export const hipaaAuditView = (a: HipaaAuditRow): Static<typeof HipaaAuditResponse> => ({
  id: a.id, sub_entity_id: a.sub_entity_id, old_value: a.old_value, new_value: a.new_value,
  credential_kind: a.credential_kind as Static<typeof HipaaAuditResponse>['credential_kind'], credential_id: a.credential_id,
  api_key_id: a.api_key_id, user_id: a.user_id, client_address: a.client_address, changed_at: a.changed_at.toISOString(),
  reason: a.reason ?? null,
});
