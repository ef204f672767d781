import type { TSchema } from '@sinclair/typebox';
import { ERROR_CODES, type ErrorCode } from '../../shared/errors.ts';
import type { AnyRoute } from './types.ts';

// TypeBox schemas are plain JSON Schema (2020-12 compatible) once their symbol keys are dropped, which is what
// OpenAPI 3.1 embeds. The document is generated from the same route table that validates requests.
const plain = (s: TSchema) => JSON.parse(JSON.stringify(s));

const GENERAL: ErrorCode[] = ['validation_error', 'unauthorized', 'scope_missing', 'not_found', 'rate_limited', 'internal_error'];

const ErrorEnvelope = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string' },
        message: { type: 'string' },
        category: { type: 'string', enum: ['invalid_request', 'compliance_block', 'account_limit', 'unreachable', 'voicemail', 'provider_error'] },
        resolution_hint: { type: 'string' },
        fields: { type: 'object', additionalProperties: { type: 'string' } },
        doc_url: { type: 'string', format: 'uri' },
      },
    },
  },
};

const RATE_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit', 'RateLimit-Policy'];

export function buildOpenApi(routes: AnyRoute[], serverUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const parameters: unknown[] = [];
    for (const [where, schema] of [['path', r.params], ['query', r.query]] as const) {
      if (!schema) continue;
      const s = plain(schema);
      for (const [name, prop] of Object.entries<Record<string, unknown>>(s.properties ?? {})) {
        parameters.push({ name, in: where, required: where === 'path' || (s.required ?? []).includes(name), schema: prop,
          ...(prop.description ? { description: prop.description } : {}) });
      }
    }
    const responses: Record<string, unknown> = {};
    const okHeaders = Object.fromEntries(RATE_HEADERS.map((h) => [h, { $ref: `#/components/headers/${h}` }]));
    responses[String(r.response.status)] = {
      description: r.response.description ?? 'Success',
      headers: r.scope ? okHeaders : undefined,
      ...(r.response.contentType
        ? { content: { [r.response.contentType]: { schema: { type: 'string', contentMediaType: r.response.contentType } } } }
        : r.response.schema ? { content: { 'application/json': { schema: plain(r.response.schema) } } } : {}),
    };
    if (r.response.contentType) {
      // Files are sent by the pipeline's file streams (file-response.ts), which answer single byte ranges.
      responses['206'] = {
        description: 'One byte range (Range: bytes=a-b, a- or -n), with Content-Range',
        headers: r.scope ? okHeaders : undefined,
        content: { [r.response.contentType]: { schema: { type: 'string', contentMediaType: r.response.contentType } } },
      };
      responses['416'] = {
        description: 'Error: validation_error (the range starts past the end; Content-Range: bytes */<size>)',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    const codes = [...(r.scope ? GENERAL : ['validation_error', 'not_found', 'internal_error'] as ErrorCode[]), ...(r.errors ?? [])];
    if (r.scope && r.method !== 'GET') codes.push('idempotency_conflict');
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of codes) {
      const st = ERROR_CODES[code].status;
      byStatus.set(st, [...new Set([...(byStatus.get(st) ?? []), code])]);
    }
    for (const [st, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
      responses[String(st)] = {
        description: `Error: ${list.join(', ')}`,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    const op: Record<string, unknown> = {
      operationId: `${r.method.toLowerCase()}${r.path.replace(/\{(\w+)\}/g, 'By_$1').replace(/[^A-Za-z0-9]+(.)?/g, (_, ch) => (ch ? ch.toUpperCase() : ''))}`,
      summary: r.summary,
      tags: [r.tag],
      parameters: parameters.length ? parameters : undefined,
      security: r.scope ? [{ bearer: [r.scope] }] : [],
      'x-required-scope': r.scope ?? undefined,
      deprecated: r.deprecated ? true : undefined,
      responses,
    };
    if (r.body) {
      op.requestBody = { required: true, content: { 'application/json': { schema: plain(r.body) } } };
    }
    if (r.scope && r.method !== 'GET') {
      op.parameters = [...(parameters as unknown[]), { $ref: '#/components/parameters/IdempotencyKey' }];
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = JSON.parse(JSON.stringify(op));
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Telephony, Caller-Trust and Website-Testing Service API',
      version: '1.0.0',
      description: 'Organization-scoped HTTP JSON API. Every request carries Authorization: Bearer <API key>.',
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key or bounded client token' } },
      schemas: { Error: ErrorEnvelope },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 },
          description: 'Replays the stored response of the first successful request with this key for 24 hours.',
        },
      },
      headers: Object.fromEntries(RATE_HEADERS.map((h) => [h, { schema: { type: h.startsWith('X-') ? 'integer' : 'string' } }])),
    },
  };
}
