// Documents as the API shows them: the response schema and its view (documents.ts keeps the rows).
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import { DOCUMENT_TYPES } from './detect.ts';
import { PURPOSES, type DocumentRow } from './documents.ts';

export const PurposeSchema = Type.Unsafe<(typeof PURPOSES)[number]>({ type: 'string', enum: [...PURPOSES],
  description: 'enterprise_registration: a supporting document of an enterprise registration (caller_trust scopes); '
    + 'agent_knowledge: a knowledge document for voice agents (agents scopes).' });

export const DocumentResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The document id.' }),
  purpose: PurposeSchema,
  name: Type.String({ description: 'The document\'s name: the one given, else the uploaded file name, else document.<extension>.' }),
  content_type: Type.Unsafe<(typeof DOCUMENT_TYPES)[number]>({ type: 'string', enum: [...DOCUMENT_TYPES],
    description: 'The type read from the bytes (never the declared one): application/pdf, image/png, image/jpeg or text/plain (UTF-8).' }),
  size_bytes: Type.Integer({ description: 'Size in bytes.' }),
  sha256: Type.String({ description: 'SHA-256 of the bytes (hex).' }),
  registration_id: Nullable(Type.String({ format: 'uuid' }), 'The enterprise registration it is attached to, or null.'),
  agent_id: Nullable(Type.String({ format: 'uuid' }), 'The agent it is attached to, or null.'),
  sub_entity_id: Nullable(Type.String({ format: 'uuid' }), 'The sub-entity it belongs to, or null (the organization\'s). While '
    + 'that sub-entity is in HIPAA mode its content answers 403 content_policy_forbidden; this metadata stays.'),
  content_url: Type.String({ description: 'Where to download the bytes (GET, the purpose\'s read scope).' }),
  created_at: Type.String({ format: 'date-time', description: 'When it was uploaded.' }),
}, { description: 'A document: a file the organization keeps with the platform.' });

/** What an enterprise registration lists of its attached documents. */
export const AttachedDocument = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The document id (GET /v1/documents/{id}).' }),
  name: Type.String({ description: 'The document\'s name.' }),
  content_type: Type.String({ description: 'Its type, read from its bytes.' }),
  size_bytes: Type.Integer({ description: 'Size in bytes.' }),
}, { description: 'A document attached to the registration.' });

export function documentView(d: DocumentRow, baseUrl: string): Static<typeof DocumentResponse> {
  return {
    id: d.id, purpose: d.purpose, name: d.name, content_type: d.content_type, size_bytes: Number(d.size_bytes), sha256: d.sha256,
    registration_id: d.registration_id, agent_id: d.agent_id, sub_entity_id: d.sub_entity_id, content_url: `${baseUrl}/v1/documents/${d.id}/content`,
    created_at: d.created_at.toISOString(),
  };
}
