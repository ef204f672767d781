// The error envelope, built in one place for every HTTP stack: {"error": {code, message, category?,
// resolution_hint?, fields?}} (the reference's shape). What status a domain error answers, and how anything a request
// threw becomes its answer, is shared/http/error-status.ts.

import { Type, type Static } from '@sinclair/typebox';

/** The envelope's schema: the OpenAPI document's components.schemas.Error and the test-only response check
 *  (gateway/http/response-check.ts). */
export const ErrorEnvelope = Type.Object({
  error: Type.Object({
    code: Type.String({ description: 'Machine-readable error code (listed per operation); branch on this.' }),
    message: Type.String({ description: 'Human-readable explanation; may change, never parse it.' }),
    category: Type.Optional(Type.String({
      enum: ['invalid_request', 'compliance_block', 'account_limit', 'unreachable', 'voicemail', 'provider_error'],
      description: 'Present on call-related errors only: the family of the failure.' })),
    resolution_hint: Type.Optional(Type.String({ description: 'What to do about it, when there is something to do.' })),
    fields: Type.Optional(Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: { type: 'string' },
      description: 'Maps each offending request field (or header) to the reason.' })),
    doc_url: Type.Optional(Type.String({ format: 'uri', description: 'Where to read more about this error.' })),
  }, { description: 'The error.' }),
}, { description: 'The error envelope of every non-2xx JSON response.' });

export type ErrorEnvelope = Static<typeof ErrorEnvelope>;

/** What an error says on the wire. */
export interface EnvelopeParts {
  code: string;
  message: string;
  category?: string;
  resolutionHint?: string;
  fields?: Record<string, string>;
}

/** The envelope of an error (fields only when there are some). */
export function errorBody(e: EnvelopeParts): ErrorEnvelope {
  const error: ErrorEnvelope['error'] = { code: e.code, message: e.message };
  if (e.category) error.category = e.category as ErrorEnvelope['error']['category'];
  if (e.resolutionHint) error.resolution_hint = e.resolutionHint;
  if (e.fields && Object.keys(e.fields).length) error.fields = e.fields;
  return { error };
}
