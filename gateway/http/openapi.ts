import type { TSchema } from '@sinclair/typebox';
import { ERROR_CODES, ERROR_MEANINGS, type ErrorCode } from '../../shared/errors.ts';
import { statusOf } from '../../shared/http/error-status.ts';
import { ErrorEnvelope } from '../../shared/http/envelope.ts';
import type { AnyRoute, RawRouteDoc } from './types.ts';

// TypeBox schemas are plain JSON Schema (2020-12 compatible) once their symbol keys are dropped, which is what
// OpenAPI 3.1 embeds. The document is generated from the same route table that validates requests.
const plain = (s: TSchema) => JSON.parse(JSON.stringify(s));

/** Codes the pipeline itself can answer on every authenticated route (not_found and idempotency_conflict are added
 *  where they apply: routes with an id in the path, mutating methods); service_unavailable while a store is down. */
const GENERAL: ErrorCode[] = ['validation_error', 'unauthorized', 'scope_missing', 'rate_limited', 'internal_error', 'service_unavailable'];

/** The error codes one route can answer: its own plus the pipeline's, in the order the statuses are listed. */
export function routeErrorCodes(r: AnyRoute, raw = false): ErrorCode[] {
  // A raw route (outside the pipeline) answers only its own codes and unexpected failures.
  const codes: ErrorCode[] = raw ? ['internal_error'] : r.scope ? [...GENERAL] : ['validation_error', 'internal_error', 'service_unavailable'];
  if (r.path.includes('{')) codes.push('not_found');
  // A write made with a console session without its X-CSRF-Token is 403 forbidden (gateway/http/stages/auth.ts).
  if (r.scope && r.method !== 'GET') codes.push('idempotency_conflict', 'forbidden');
  // A credential limited to a sub-entity is refused on routes of the whole organization (stages/scope.ts).
  if (r.scope && r.subEntities !== 'scoped') codes.push('forbidden');
  return [...new Set([...codes, ...(r.errors ?? [])])];
}

/** Tag descriptions: one per API area, in the order the areas appear. */
const TAGS: Record<string, string> = {
  Account: 'Who the credential is: the account snapshot (plan, organization, live footprint) and the credential\'s own '
    + 'identity and scopes.',
  'Phone Numbers': 'The organization\'s phone numbers and their lifecycle: list held numbers, search purchasable sandbox '
    + 'numbers, buy (PROVISIONING, then ACTIVE), read and release (RELEASED, kept as history). Purchases and releases '
    + 'fire number_purchased and number_released webhooks.',
  'Caller IDs': 'External numbers the organization controls, usable as from_number once verified by a call that speaks '
    + 'a code (POST /v1/caller-ids/{id}/verify, then /confirm). A pending one answers call_id_not_verified.',
  Optimize: 'Website A/B tests through one script tag: register the website (property), paste the snippet, create tests '
    + 'whose variants change the page with safe ops (never script), read honest results, ship the winner, and record '
    + 'conversions from your own systems. The tag (GET /v1/optimize/tag.js?k=) and its collector are public.',
  Agents: 'Saved voice agents (name, greeting, prompt, voice) that AI calls (POST /v1/calls) use by agent_id.',
  Webhooks: 'Webhook subscriptions: the service POSTs each event of the subscribed type to your HTTPS URL, signed per '
    + 'Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature headers) with the subscription\'s secret. '
    + 'Failed deliveries are retried with back-off; a 410 Gone disables the subscription.',
  Calls: 'Outbound calls: bridge calls (ring your phone, then the destination) and AI calls (an agent talks to the '
    + 'destination). A call is accepted QUEUED (202) and progresses asynchronously: RINGING, ANSWERED, then a terminal '
    + 'status (COMPLETED, BUSY, NO_ANSWER, VOICEMAIL, FAILED, CANCELED). With the sandbox carrier the last four digits '
    + 'of a number choose the outcome (0001 busy, 0002 no answer, 0003 voicemail, 0004 unreachable, 0005 declined, '
    + '0006 carrier rejected, 0007 screened, 0008 never hangs up; others answer and talk 10 s).',
  'Browser calling': 'Calls from a browser: bounded client tokens (a short-lived credential limited to chosen numbers and '
    + 'scopes), path A (a single-use ticket for the softphone WebSocket) and path B (a room token for a call the service '
    + 'places).',
  'Enterprise Registration': 'The organization\'s legal business registration (EIN and a signed Letter of Authorization '
    + 'covering its numbers): DRAFT, then PENDING_VETTING once signed and submitted, then APPROVED or REJECTED by vetting '
    + '(enterprise.status.updated webhook). Branded Calling and own-brand remediation need an APPROVED one.',
  'Branded Calling': 'The Display Identity Record: the name, call reason and logo shown on called phones; draft, submitted, '
    + 'then approved and rolled out per network (ATT, TMOBILE, VERIZON).',
  'Number Health': 'Fleet evidence per number (evidence_state, warnings, readiness), Number Sets with sticky-health '
    + 'caller-ID selection, and resumable human spam-test sessions with audited observations.',
  Appointments: 'Bookings made by the voice agent during calls, by workflows or through the API: the organization\'s '
    + 'availability (weekly hours in an IANA time zone, slot length, buffer) and its free slots, booking without double '
    + 'booking, cancellation, new_appointment on every booking, and a secret iCalendar feed. Reads need bookings:read, '
    + 'writes agents:write. See docs/reference/appointments.md.',
  'Sub-entities': 'The units an organization runs under one account (clinics of a dental group, branches, client '
    + 'accounts of an agency): phone numbers, calls, contacts and SMS messages belong to one by sub_entity_id (a call and an '
    + 'SMS take their number\'s), and each list filters by it. HIPAA mode per sub-entity (compliance:write only, audited) '
    + 'withholds the content of its calls and its delivered SMS bodies. See docs/reference/sub-entities.md.',
  Tasks: 'Workflows ("long-horizon tasks", jobs:read / jobs:write): ordered steps (call with a bridge or an agent, SMS '
    + 'template, wait a duration or until a local time, branch on the previous outcome) run for each contact of a campaign over '
    + 'hours or days, through the same compliance, guardrail, channel and spend rules as direct calls and SMS; start, pause, '
    + 'resume, cancel; progress and per-contact history; workflow_contact_completed per finished contact. See docs/reference/workflows.md.',
  'Number Registration': 'Registration of the organization\'s numbers with the call-analytics providers that label calls '
    + '(the Free Caller Registry path carriers\' analytics engines read): per-number status (not_registered, pending, '
    + 'registered, rejected with a reason), bulk submission, and number_registration.status_changed on every change.',
  Sandbox: 'Test helpers of the sandbox carrier: the inbox of what simulated calls said to external numbers, and '
    + 'simulated inbound calls from a tester\'s phone and inbound SMS replies.',
  SMS: 'Text messages: send from a texting-registered number (A2P 10DLC registration, vetted), read sent and received '
    + 'messages. Recipients opt out with STOP and back in with START. See docs/reference/sms.md.',
  Console: 'Users of the console: sign-in sessions (cookie ol_session, X-CSRF-Token on writes), password resets, members '
    + 'and invitations, and self-serve API keys. See docs/reference/console.md.',
  Carriers: 'Callbacks from the production carrier (LiveKit). Not for API clients.',
  Contacts: 'Contacts (consent records, opt-outs, call history) and call compliance: the organization\'s Do-Not-Call list '
    + 'and policy (calling window and days in the recipient\'s local time, calls per number per period, consent), checked '
    + 'on every call path before anything is placed.',
  Documents: 'Files the organization keeps with the platform: supporting documents of enterprise registrations '
    + '(caller_trust scopes) and knowledge documents of voice agents (agents scopes). PDF, PNG, JPEG or plain text, '
    + 'checked from the bytes. See docs/reference/documents.md.',
  Usage: 'Usage and spend per day and month (calls, billed minutes by path, SMS segments, paid reputation checks) and the '
    + 'plan: the same rows the daily spend cap counts.',
  Reputation: 'Caller-trust number reputation: the cached spam evidence of each number per carrier (ATT, TMOBILE, '
    + 'VERIZON; null = unavailable), paid fresh checks under the daily spend cap, and remediation cases for flagged '
    + 'numbers. The sandbox provider answers by the last digit (7 TMOBILE HIGH, 8 ATT MEDIUM and VERIZON HIGH, 9 VERIZON '
    + 'unavailable, 0 unavailable everywhere).',
};

const GUIDE = `API of the openline platform: telephony (bridge, AI and browser calls), phone numbers, voice agents and
webhooks. Every path below is served by this gateway; this page is generated from the same schemas that validate
requests, so it is exactly what the server accepts and answers.

## Authentication
Every request carries \`Authorization: Bearer <credential>\`: an API key (\`olk_...\`, shown once when created with
\`npm run admin -- key create\`) or a bounded client token (\`olct_...\`, POST /v1/client-tokens). A credential
belongs to one organization and sees only its resources (another organization's id is \`404 not_found\`). Each
operation names the scope it requires; a credential without it gets \`403 scope_missing\`. Failures carry a
\`WWW-Authenticate\` Bearer challenge pointing at \`/.well-known/oauth-protected-resource\`.

The console signs people in instead (POST /v1/session, tag Console): the HttpOnly cookie \`ol_session\` then
authenticates like a key with the user's role's scopes, and every POST, PUT, PATCH and DELETE made with it must carry
\`X-CSRF-Token\` (the session's \`csrf_token\`; \`403 forbidden\` otherwise). A request with both uses the key.

## Envelopes
Success: \`{"data": ...}\`. Lists: \`{"data": [...], "meta": {"cursor"?, "total_results"?, "page_size"}}\`.
Errors: \`{"error": {"code", "message", "category"?, "resolution_hint"?, "fields"?}}\`. Every response carries
\`X-Request-Id\`. Request bodies are JSON (\`Content-Type: application/json\`, at most 1 MiB); unknown fields and
unknown query parameters are refused.

## Pagination
Lists take \`limit\` (1-100, default 20), \`order\` (\`desc\`, newest first, the default; or \`asc\`) and \`cursor\`
(the previous page's \`meta.cursor\`, opaque, valid 24 hours). \`meta.cursor\` is absent on the last page.

## Idempotency
Every POST, PUT, PATCH and DELETE accepts an \`Idempotency-Key\` header (1-255 printable ASCII characters, scoped to
the credential). The first successful response is stored for 24 hours and replayed verbatim, with
\`Idempotency-Replay: true\`, for a retry with the same key and request; the same key with a different request is
\`409 idempotency_conflict\`, as is a retry while the first request still runs (with \`Retry-After: 1\`).

## Rate limits
600 requests per minute per key (120 for demo keys, or the key's own limit), in a fixed one-minute window. Every
authenticated response carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\`, \`X-RateLimit-Reset\` (Unix ms),
\`RateLimit\` and \`RateLimit-Policy\`; a refusal is \`429 rate_limited\` with \`Retry-After\` (seconds).

## Errors
Branch on \`error.code\`, never on the message. \`fields\` maps each offending request field to the reason. Call
errors carry \`category\` (invalid_request, compliance_block, account_limit, provider_error). 429 and 5xx are
retryable (with the same Idempotency-Key); a 503 \`service_unavailable\` (a store briefly unreachable) carries
Retry-After. Each operation below lists every code it can answer and what it means.

## Versioning
Paths start with \`/v1\` (\`/api/v1\` for webhook subscriptions). A deprecated route or spelling answers with
\`Deprecation\`, \`Sunset\` and \`Link: <...>; rel="sunset"\` headers.`;

/** A response's description listing its codes with their meanings (Markdown), and one example per code. */
function errorResponse(status: number, list: ErrorCode[]) {
  return {
    description: list.map((c) => `- \`${c}\`: ${ERROR_MEANINGS[c]}${retryable(c) ? ' **Retryable**: the same request may succeed later.' : ''}`).join('\n'),
    content: {
      'application/json': {
        schema: { $ref: '#/components/schemas/Error' },
        examples: Object.fromEntries(list.map((c) => [c, { summary: c, value: errorExample(c, status) }])),
      },
    },
  };
}

/** The reference's Retryable column (ERROR_CODES[code].retryable), said in each code's description. */
const retryable = (code: ErrorCode) => (ERROR_CODES[code] as { retryable?: boolean }).retryable === true;

function errorExample(code: ErrorCode, status: number) {
  const spec = ERROR_CODES[code] as { category?: string };
  const error: Record<string, unknown> = { code, message: ERROR_MEANINGS[code].split('; ')[0].replace(/`/g, '') };
  if (spec.category) error.category = spec.category;
  if (code === 'validation_error') error.fields = status === 416 ? { Range: 'must start before byte 48044' } : { to_number: 'must be an E.164 number' };
  if (code === 'scope_missing') error.fields = { scope: 'calls:write' };
  if (code === 'idempotency_conflict') error.fields = { conflicts_with: 'req_01J9Z6Q4TFM4V3Y1R5C8N2XK7B' };
  if (code === 'state_conflict') error.fields = { entity: 'optimize_test', status: 'archived' };
  return { error };
}

const RATE_HEADER_DOCS: Record<string, string> = {
  'X-RateLimit-Limit': 'Requests allowed in the one-minute window.',
  'X-RateLimit-Remaining': 'Requests left in the current window.',
  'X-RateLimit-Reset': 'When the window resets, as a Unix timestamp in milliseconds.',
  RateLimit: 'Remaining quota and seconds to reset, as a structured field: "default";r=<remaining>;t=<seconds>.',
  'RateLimit-Policy': 'The quota policy: "default";q=<limit>;w=60.',
};

const RATE_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit', 'RateLimit-Policy'];

export function buildOpenApi(apiRoutes: AnyRoute[], serverUrl: string, rawRoutes: RawRouteDoc[] = []) {
  const paths: Record<string, Record<string, unknown>> = {};
  const raw = new Map<AnyRoute, RawRouteDoc>(rawRoutes.map((d) => [{ ...d, scope: null, handler: async () => ({ status: 500 }) }, d]));
  const routes = [...apiRoutes, ...raw.keys()];
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
        : r.response.schema ? { content: { 'application/json': { schema: plain(r.response.schema),
          ...(r.examples?.response !== undefined ? { example: r.examples.response } : {}) } } } : {}),
    };
    for (const [st, description] of Object.entries(r.response.also ?? {})) {
      responses[st] = { ...(responses[String(r.response.status)] as object), description };
    }
    if (r.response.contentType && !raw.has(r)) {
      // Files are sent by the pipeline's file streams (file-response.ts), which answer single byte ranges.
      responses['206'] = {
        description: 'One byte range (Range: bytes=a-b, a- or -n), with Content-Range',
        headers: r.scope ? okHeaders : undefined,
        content: { [r.response.contentType]: { schema: { type: 'string', contentMediaType: r.response.contentType } } },
      };
      responses['416'] = { ...errorResponse(416, ['validation_error']),
        description: '- `validation_error`: the byte range starts past the end of the file (Content-Range: bytes */<size>).' };
    }
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of routeErrorCodes(r, raw.has(r))) {
      const st = statusOf(code);
      byStatus.set(st, [...(byStatus.get(st) ?? []), code]);
    }
    for (const [st, list] of [...byStatus].sort((a, b) => a[0] - b[0])) responses[String(st)] = errorResponse(st, list);
    const json = raw.get(r)?.plainJson;
    for (const [st, description] of Object.entries(raw.get(r)?.plainErrors ?? {})) {
      responses[st] = { description,
        ...(json ? { content: { 'application/json': { schema: plain(json.schema), example: json.examples[Number(st)] } } } : {}) };
    }
    const op: Record<string, unknown> = {
      operationId: `${r.method.toLowerCase()}${r.path.replace(/\{(\w+)\}/g, 'By_$1').replace(/[^A-Za-z0-9]+(.)?/g, (_, ch) => (ch ? ch.toUpperCase() : ''))}`,
      summary: r.summary,
      description: r.description,
      tags: [r.tag],
      parameters: parameters.length ? parameters : undefined,
      security: r.scope ? (typeof r.scope === 'string' ? [r.scope] : r.scope).map((sc: string) => ({ bearer: [sc] })) : raw.has(r) && raw.get(r)!.security !== 'public' ? [{ [raw.get(r)!.security]: [] }] : [],
      // One scope, or (any-of routes) the list of which one is needed.
      'x-required-scope': r.scope ?? undefined,
      deprecated: r.deprecated ? true : undefined,
      responses,
    };
    if (r.body) {
      op.requestBody = { required: true, content: { 'application/json': { schema: plain(r.body),
        ...(r.examples?.request !== undefined ? { example: r.examples.request } : {}) } } };
      if (r.upload) {
        (op.requestBody as { content: Record<string, unknown> }).content['multipart/form-data'] = {
          schema: plain(r.upload.form), ...(r.upload.encoding ? { encoding: r.upload.encoding } : {}),
          ...(r.upload.formExample !== undefined ? { example: r.upload.formExample } : {}) };
        if (r.upload.formDescription) (op.requestBody as Record<string, unknown>).description = r.upload.formDescription;
      }
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
      description: GUIDE,
      license: { name: 'Apache License 2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: serverUrl, description: 'This gateway' }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name, ...(TAGS[name] ? { description: TAGS[name] } : {}) })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'API key (olk_...) or bounded client token (olct_...).' },
        livekitWebhook: { type: 'apiKey', in: 'header', name: 'Authorization',
          description: 'LiveKit\'s webhook signature: a JWT signed with LIVEKIT_API_SECRET whose sha256 claim is the body\'s SHA-256.' },
      },
      schemas: { Error: plain(ErrorEnvelope) },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 },
          description: 'Replays the stored response of the first successful request with this key for 24 hours.',
        },
      },
      headers: Object.fromEntries(RATE_HEADERS.map((h) => [h, {
        description: RATE_HEADER_DOCS[h], schema: { type: h.startsWith('X-') ? 'integer' : 'string' } }])),
    },
  };
}
