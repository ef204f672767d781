import type { Principal } from '../../shared/accounts/principal.ts';
import { Type } from '@sinclair/typebox';
import { CALL_POLICY_ERRORS } from '../../shared/compliance/guard.ts';
import { resolveAgent } from '../../shared/calls/agents.ts';
import { HANGUP_MODES, LIVE_STATUSES, TERMINAL_STATUSES, type HangupMode } from '../../shared/calls/model.ts';
import { placeCall, type Placed } from '../../shared/calls/place.ts';
import { exactSelection, selectCallerId, type CallerIdSelection } from '../../shared/number-health/dial.ts';
import { callForContent, getCall, listCalls } from '../../shared/calls/store.ts';
import { contentScope, OPEN_SCOPE } from '../../shared/sub-entities/content-policy.ts';
import { assertSubEntityFilter } from '../../shared/sub-entities/sub-entities.ts';
import { assertWholeOrganization, limitOf, listFilter } from '../../shared/sub-entities/limit.ts';
import { hasRecording } from '../../shared/calls/recording.ts';
import { recordingStore } from '../../shared/calls/recording-store.ts';
import { CallResponse, callView, TranscriptResponse, transcriptView, viewOptions } from '../../shared/calls/views.ts';
import { DomainError, notFound } from '../../shared/errors.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Deprecation, Plugin, Reply } from '../http/types.ts';
import { ListMeta, Nullable, UuidIdParams } from './schemas.ts';

const Number164 = (description: string, extra: Record<string, unknown> = {}) => Type.String({ description, ...extra });

export const Call = CallResponse;

const Accepted = Type.Object({
  call_id: Type.String({ format: 'uuid', description: 'The new call\'s id (GET /v1/calls/{id}).' }),
  status: Type.Literal('QUEUED', { description: 'Always QUEUED: the call progresses asynchronously.' }),
  from_number: Type.String({ description: 'The caller ID used (E.164).' }),
  selection_source: Type.Union([Type.Literal('exact_from_number'), Type.Literal('number_set_sticky_health')],
    { description: 'How the caller ID was chosen: the from_number given, or selected from number_set_id (dial only).' }),
  evidence_state: Nullable(Type.String(), 'The caller ID\'s Number Health evidence_state (dial); null on AI calls and for numbers without evidence.'),
  health_warning: Nullable(Type.String(), 'A warning about the caller ID\'s health (a risky exact from_number is dialed with it); null: none.'),
  recommended_action: Nullable(Type.String(), 'What Number Health recommends for the caller ID; null on AI calls.'),
}, { description: 'The accepted call.' });

/** The user whose calls alone this credential may read (an agent's), else null. */
const ownCallsOf = (p: Principal): string | null => (p.ownCallsOnly ? p.userId ?? '00000000-0000-0000-0000-000000000000' : null);

const IdParams = UuidIdParams('call');

const CALL_ID = '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98';
const ACCEPTED_EXAMPLE = {
  call_id: CALL_ID, status: 'QUEUED', from_number: '+14155550123', selection_source: 'exact_from_number',
  evidence_state: null, health_warning: null, recommended_action: null,
};
const CALL_EXAMPLE = {
  id: CALL_ID, type: 'bridge', direction: 'outbound', from_number: '+14155550123', to_number: '+12125550187',
  connect_number: '+13125550142', agent_id: null, status: 'COMPLETED', call_outcome: 'answered', failure_code: null,
  failure_category: null, disconnection_reason: 'remote_hangup', picked_up: true, duration_seconds: 10, record: true,
  cost_cents: 2, max_duration_seconds: 3600, issued_by_user_id: '5b1f0c2e-8a3d-4e6f-9b7a-2c4d6e8f0a1b', api_key_id: '3c7d9e2a-6b4f-4a1e-8d5c-1f9a0b7e6c24', sub_entity_id: null, created_at: '2026-11-20T15:04:05.000Z', answered_at: '2026-11-20T15:04:09.000Z',
  ended_at: '2026-11-20T15:04:19.000Z',
  legs: [
    { role: 'connect', number: '+13125550142', status: 'ENDED', end_reason: 'completed', originated_at: '2026-11-20T15:04:05.200Z',
      answered_at: '2026-11-20T15:04:07.200Z', ended_at: '2026-11-20T15:04:19.000Z' },
    { role: 'destination', number: '+12125550187', status: 'ENDED', end_reason: 'completed', originated_at: '2026-11-20T15:04:07.300Z',
      answered_at: '2026-11-20T15:04:09.000Z', ended_at: '2026-11-20T15:04:19.000Z' },
  ],
  recording_url: `https://api.openline.example/v1/calls/${CALL_ID}/recording`,
};

const PLACEMENT = 'Checked in this order, each failure leaving no call behind: destination present and dialable '
  + '(destination_missing, destination_invalid), numbers inside the credential\'s bounds (forbidden), destination rules '
  + '(destination_blocked: emergency and short codes, premium and special-rate ranges, countries not allowed, demo keys '
  + 'outside the sandbox), the caller ID held by the organization or one of its verified caller IDs (call_id_not_verified; '
  + 'caller_id_held_elsewhere when another account holds that caller ID\'s number) and ACTIVE (no_active_number), '
  + 'the plan (no_active_subscription, voice_usage_exhausted) and call compliance of to_number (dnc_suppressed, '
  + 'recipient_opted_out, no_consent, day_not_allowed, outside_call_window, frequency_exceeded: see the Contacts tag), '
  + 'the per-minute call rate (rate_limited), the daily spend cap (spend_cap_reached) and the channel limit '
  + '(channel_limit_exceeded: calls never queue). Sandbox: the last four digits of a number choose its outcome (see the '
  + 'Calls tag).';

const CALL_ERRORS = ['destination_missing', 'destination_invalid', 'no_active_number', 'call_id_not_verified', 'caller_id_held_elsewhere',
  'destination_blocked', 'forbidden', 'spend_cap_reached', 'channel_limit_exceeded', 'idempotency_conflict', ...CALL_POLICY_ERRORS] as const;

/** The older caller_id/destination spelling of POST /v1/calls. */
const LEGACY_SPELLING = (base: string): Deprecation => ({
  since: new Date('2026-01-01T00:00:00Z'),
  sunset: new Date('2027-06-30T00:00:00Z'),
  link: `${base}/v1/openapi.json`,
});

function accepted(c: { id: string; from_number: string }, sel?: CallerIdSelection) {
  return {
    call_id: c.id, status: 'QUEUED' as const, from_number: c.from_number, selection_source: sel?.selection_source ?? 'exact_from_number',
    evidence_state: sel?.evidence_state ?? null, health_warning: sel?.health_warning ?? null, recommended_action: sel?.recommended_action ?? null,
  };
}

export const callRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/calls/dial', scope: 'calls:write', tag: 'Calls',
    summary: 'Place a bridge call',
    description: 'Places a bridge call: connect_number (your phone) is rung first; once it answers, to_number is rung '
      + 'showing from_number, and the two are connected. Answers 202 with the call QUEUED; progress (RINGING, ANSWERED, '
      + 'the terminal status) shows on GET /v1/calls/{id} and in call webhooks. Holds 2 channels until it ends. '
      + PLACEMENT,
    examples: {
      request: { from_number: '+14155550123', to_number: '+12125550187', connect_number: '+13125550142', record: true },
      response: { data: ACCEPTED_EXAMPLE },
    },
    body: Type.Object({
      from_number: Type.Optional(Number164('Caller ID: an active E.164 number of your organization. Wins over number_set_id.')),
      number_set_id: Type.Optional(Type.String({ description: 'Without from_number: the caller ID is selected from this Number Set (POST /v1/number-health/sets/{id}/resolve explains the order).' })),
      to_number: Type.Optional(Number164('The called party (E.164).')),
      connect_number: Type.Optional(Number164('The phone rung first and bridged to to_number (E.164); required.')),
      record: Type.Optional(Type.Boolean({ default: false, description: 'Record the call (GET /v1/calls/{id}/recording once it ended).' })),
      sub_entity_id: Type.Optional(Type.String({ description: 'The call\'s sub-entity. Without it the call takes from_number\'s; '
        + 'a number that belongs to a sub-entity binds its calls to it (naming another is a validation_error).' })),
    }, { additionalProperties: false }),
    response: { status: 202, schema: Type.Object({ data: Accepted }), description: 'Accepted; the call progresses asynchronously.' },
    errors: [...CALL_ERRORS],
    handler: async (ctx) => {
      const { deps, principal, body } = ctx;
      const at = deps.clock.now();
      const set = await selectCallerId(deps.db, principal.organizationId,
        { from: body.from_number, numberSetId: body.number_set_id, to: body.to_number }, at);
      const reply = ({ call, callerId }: Placed) =>
        ({ status: 202, body: { data: accepted(call, set ?? exactSelection(call.from_number, callerId)) } });
      const placed = await placeCall(deps.calls, principal, {
        type: 'bridge', from: set ? set.from : body.from_number, to: body.to_number, connect: body.connect_number,
        record: body.record ?? false, subEntityId: body.sub_entity_id, withEvidence: !set, names: { from: 'from_number', to: 'to_number' }, at,
      }, ctx.idempotent(reply));
      return reply(placed);
    },
  });

  routes.add({
    method: 'POST', path: '/v1/calls', scope: 'calls:write', tag: 'Calls',
    summary: 'Place an AI call',
    description: 'Places an AI call: to_number is rung showing from_number and, once answered, the agent (a saved '
      + 'agent_id, or inline agent settings) speaks its greeting and holds the conversation; the transcript is available '
      + 'when it ends. Answers 202 with the call QUEUED. Holds 1 channel until it ends. The older spelling caller_id / '
      + 'destination still works, answered with Deprecation, Sunset and Link rel="sunset" headers; mixing both '
      + 'spellings of one field is a validation_error. With the SIP trunk carrier (CARRIER=sip) AI calls answer '
      + 'service_unavailable (503): the voice-agent media pipeline they need does not exist there yet. ' + PLACEMENT,
    examples: {
      request: { from_number: '+14155550123', to_number: '+12125550187', agent_id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70' },
      response: { data: { ...ACCEPTED_EXAMPLE, to_number: '+12125550187', agent_id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70' } },
    },
    body: Type.Object({
      from_number: Type.Optional(Number164('Caller ID: an active E.164 number of your organization.')),
      to_number: Type.Optional(Number164('The called party (E.164).')),
      caller_id: Type.Optional(Number164('Deprecated spelling of from_number.', { deprecated: true })),
      destination: Type.Optional(Number164('Deprecated spelling of to_number.', { deprecated: true })),
      agent_id: Type.Optional(Type.String({ description: 'A saved agent (GET /v1/agents). Give this or agent, not both.' })),
      agent: Type.Optional(Type.Object({
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Shown on the call record.' })),
        greeting: Type.String({ minLength: 1, maxLength: 1000, description: 'First sentence the agent speaks when answered.' }),
        prompt: Type.Optional(Type.String({ maxLength: 20000, description: 'Instructions for the conversation.' })),
        voice: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Voice name of the speech engine (default "neutral").' })),
      }, { additionalProperties: false, description: 'Inline agent settings instead of agent_id.' })),
      record: Type.Optional(Type.Boolean({ default: false, description: 'Record the call (GET /v1/calls/{id}/recording once it ended).' })),
      sub_entity_id: Type.Optional(Type.String({ description: 'The call\'s sub-entity. Without it the call takes from_number\'s; '
        + 'a number that belongs to a sub-entity binds its calls to it (naming another is a validation_error).' })),
    }, { additionalProperties: false }),
    response: {
      status: 202, description: 'Accepted; the call progresses asynchronously.',
      schema: Type.Object({ data: Type.Object({ ...Accepted.properties, to_number: Type.String({ description: 'The called party (E.164).' }),
        agent_id: Nullable(Type.String(), 'The saved agent used; null for inline settings.') }, { description: 'The accepted call.' }) }),
    },
    errors: [...CALL_ERRORS, 'service_unavailable'],
    handler: async (ctx) => {
      const { deps, principal, body, baseUrl } = ctx;
      const fields: Record<string, string> = {};
      if (body.from_number !== undefined && body.caller_id !== undefined) fields.caller_id = 'give from_number or caller_id (its deprecated name), not both';
      if (body.to_number !== undefined && body.destination !== undefined) fields.destination = 'give to_number or destination (its deprecated name), not both';
      if (Object.keys(fields).length) throw new DomainError('validation_error', 'Use one spelling per field.', { fields });
      const legacy = body.caller_id !== undefined || body.destination !== undefined;
      const agent = await resolveAgent(deps.db, principal, body.agent_id, body.agent);
      const reply = ({ call }: Placed) => ({
        status: 202, body: { data: { ...accepted(call), to_number: call.to_number, agent_id: call.agent_id } },
        deprecation: legacy ? LEGACY_SPELLING(baseUrl) : undefined,
      });
      const placed = await placeCall(deps.calls, principal, {
        type: 'ai', from: body.from_number ?? body.caller_id, to: body.to_number ?? body.destination, record: body.record ?? false,
        subEntityId: body.sub_entity_id,
        agent, names: {
          from: body.caller_id !== undefined || (legacy && body.from_number === undefined) ? 'caller_id' : 'from_number',
          to: body.destination !== undefined || (legacy && body.to_number === undefined) ? 'destination' : 'to_number',
        }, at: deps.clock.now(),
      }, ctx.idempotent(reply));
      return reply(placed);
    },
  });

  routes.add({
    method: 'GET', path: '/v1/calls', scope: 'calls:read', tag: 'Calls',
    summary: 'List calls',
    description: 'Lists the organization\'s calls of every type, newest first; paginated with limit, order and cursor. '
      + 'A credential of a user with the agent role sees only the calls that user placed. '
      + 'recording_url is included only for credentials with recordings:read. Read-only.',
    examples: { response: { data: [CALL_EXAMPLE], meta: { cursor: 'eyJsIjoiY2FsbHMiLCJrIjoiMDE5M2E0ZDAifQ.q7Xv2', page_size: 1 } } },
    query: Type.Object({
      ...PageQuery,
      status: Type.Optional(Type.Union([...LIVE_STATUSES, ...TERMINAL_STATUSES].map((s) => Type.Literal(s)), {
        description: 'Only calls in this status. Send it again with each cursor: a cursor keeps only the order.' })),
      direction: Type.Optional(Type.Union([Type.Literal('outbound'), Type.Literal('inbound')], {
        description: 'Only outbound or only inbound calls. Send it again with each cursor.' })),
      sub_entity_id: Type.Optional(Type.String({ description: 'Only the calls of this sub-entity. Send it again with each cursor.' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Call, { description: 'The calls, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query, baseUrl }) => {
      const page = deps.cursors.params('calls', query);
      assertSubEntityFilter(query.sub_entity_id);
      const rows = await listCalls(deps.db, principal.organizationId, page, ownCallsOf(principal),
        { status: query.status, direction: query.direction, sub_entity_id: listFilter(principal, query.sub_entity_id) });
      const out = deps.cursors.page('calls', page, rows, (r) => r.id);
      const o = viewOptions(principal, principal.scopes.has('recordings:read') ? await contentScope(deps.db, principal.organizationId) : OPEN_SCOPE, baseUrl);
      return { status: 200, body: { data: out.data.map((c) => callView(c, o)), meta: out.meta } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/calls/stream', scope: 'calls:read', tag: 'Calls',
    summary: 'Follow the organization\'s calls live (Server-Sent Events)',
    description: 'A text/event-stream that stays open and carries one `event: call` message each time a call of the '
      + 'organization is placed or changes state (QUEUED, RINGING, ANSWERED, then its end), in the order of the changes '
      + 'of each call. `data` is JSON: call_id, status, type, direction, from_number, to_number, connect_number, '
      + 'call_outcome, failure_code, failure_category, disconnection_reason, duration_seconds, issued_by_user_id, '
      + 'created_at, answered_at, ended_at, updated_at (read GET /v1/calls/{id} for the rest). A credential of a user '
      + 'with the agent role sees only the calls that user placed. A comment line (`: heartbeat`) is sent every 15 s '
      + '(CALL_STREAM_HEARTBEAT_SECONDS). Works with an API key (Authorization header) or a console session cookie '
      + '(EventSource). Messages carry no id and there is no Last-Event-ID resume: after a reconnect, list the calls '
      + 'again (GET /v1/calls) and follow the stream from there. At most CALL_STREAMS_PER_ORGANIZATION (10) streams per '
      + 'organization on one gateway: more are refused with rate_limited. The stream ends when the key is revoked or '
      + 'the session signed out. Read-only.',
    examples: { response: 'retry: 3000\n: stream open\n\nevent: call\ndata: {"call_id":"0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98","status":"RINGING","type":"bridge","direction":"outbound","from_number":"+14155550123","to_number":"+14155554567","connect_number":"+14155550199","call_outcome":null,"failure_code":null,"failure_category":null,"disconnection_reason":null,"duration_seconds":null,"issued_by_user_id":null,"created_at":"2025-01-15T10:30:00.000Z","answered_at":null,"ended_at":null,"updated_at":"2025-01-15T10:30:00.412Z"}\n\n: heartbeat\n\n' },
    response: { status: 200, contentType: 'text/event-stream', description: 'An open stream of `event: call` messages and `: heartbeat` comments.' },
    errors: ['rate_limited', 'forbidden'],
    handler: async ({ principal }) => {
      // The stream follows the whole organization's calls; a credential limited to a sub-entity reads GET /v1/calls.
      assertWholeOrganization(principal, 'following the organization\'s live call stream');
      return {
      status: 200,
      stream: {
        organizationId: principal.organizationId, onlyUserId: ownCallsOf(principal), credentialId: principal.keyId,
        userId: principal.userId, endsAtMs: 'expiresAtMs' in principal ? (principal as { expiresAtMs: number }).expiresAtMs : null,
      },
      };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/calls/{id}', scope: 'calls:read', tag: 'Calls', summary: 'Read a call',
    description: 'Answers one call with its status, outcome, timings, cost and legs. Poll it (or subscribe to call '
      + 'webhooks) to follow a call: QUEUED, RINGING, ANSWERED, then COMPLETED, BUSY, NO_ANSWER, VOICEMAIL, FAILED or '
      + 'CANCELED. Read-only.',
    examples: { response: { data: CALL_EXAMPLE } },
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: Call }) },
    handler: async ({ deps, principal, params, baseUrl }) => {
      const call = await getCall(deps.db, principal.organizationId, params.id, ownCallsOf(principal), limitOf(principal));
      if (!call) throw notFound(`Call ${params.id}`);
      const o = viewOptions(principal, principal.scopes.has('recordings:read') ? await contentScope(deps.db, principal.organizationId) : OPEN_SCOPE, baseUrl);
      return { status: 200, body: { data: callView(call, o) } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/calls/{id}/transcript', scope: 'transcripts:read', tag: 'Calls',
    summary: 'Read a call\'s transcript',
    description: 'Answers the call\'s transcript (turns with speaker and offset) and a small analysis, once the call '
      + 'ended. status is available, pending (the call is live) or unavailable, with reason saying why there is none. '
      + 'AI calls always have one once answered; bridge calls only when recorded. When the organization or the call\'s sub-entity is in HIPAA mode the '
      + 'answer is content_policy_forbidden. Read-only; needs transcripts:read.',
    examples: { response: { data: {
      call_id: CALL_ID, status: 'available', reason: null, language: 'en-US',
      turns: [
        { speaker: 'agent', text: 'Hi, this is Acme Dental calling to confirm your appointment tomorrow at 10 AM.', offset_seconds: 0.4 },
        { speaker: 'callee', text: 'Yes, that works, thank you.', offset_seconds: 5.1 },
      ],
      analysis: { summary: 'The patient confirmed the appointment.', sentiment: 'positive', turn_count: 2, talk_seconds: 10,
        ended_by: 'remote_hangup', keywords: ['appointment', 'confirm'] },
    } } },
    params: IdParams,
    response: {
      status: 200,
      schema: Type.Object({ data: TranscriptResponse }),
    },
    errors: ['content_policy_forbidden'],
    handler: async ({ deps, principal, params }) =>
      ({ status: 200, body: { data: transcriptView(await callForContent(deps.db, principal.organizationId, params.id, ownCallsOf(principal), limitOf(principal))) } }),
  });

  routes.add({
    method: 'GET', path: '/v1/calls/{id}/recording', scope: 'recordings:read', tag: 'Calls',
    summary: 'Download a call recording',
    description: 'Streams the recording of a call placed with record: true, once it was answered and has ended: WAV, '
      + 'G.711 μ-law, mono, 8 kHz. The sandbox renders it from the transcript, lasting exactly the talk time; with the SIP '
      + 'trunk carrier it is the call\'s real audio, both directions mixed, from the first RTP packet on, and not_found '
      + 'for a moment after the call ended while the media process finishes writing it. Accepts one byte range (Range: bytes=a-b, a- or -n) '
      + 'answered 206 with Content-Range; a range starting past the end is 416; several or malformed ranges are '
      + 'ignored (200, whole file). not_found when the call has no recording (not recorded, not answered, not ended). '
      + 'When the organization or the call\'s sub-entity is in HIPAA mode: content_policy_forbidden. When this gateway already streams its maximum of '
      + 'recordings (RECORDING_STREAMS_MAX): service_unavailable with Retry-After: 1. Needs recordings:read.',
    params: IdParams,
    response: { status: 200, contentType: 'audio/wav', description: 'WAV audio (format 7, μ-law, mono, 8 kHz)' },
    errors: ['content_policy_forbidden', 'service_unavailable'],
    handler: async ({ deps, principal, params }) => {
      const call = await callForContent(deps.db, principal.organizationId, params.id, ownCallsOf(principal), limitOf(principal));
      if (!hasRecording(call)) {
        throw new DomainError('not_found', `Call ${params.id} has no recording (it was not recorded, not answered, or has not ended).`);
      }
      const file = await recordingStore(deps.config.recordingsDir, deps.log).file(call);
      if (!file) throw new DomainError('not_found', `The recording of call ${params.id} is still being written: try again in a moment.`);
      return {
        status: 200, file,
        headers: { 'content-type': 'audio/wav', 'content-disposition': `inline; filename="call-${call.id}.wav"` },
      };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/calls/{id}/hangup', scope: 'calls:write', tag: 'Calls',
    summary: 'End or cancel a call',
    description: 'mode=hangup (default) ends the call in any live state: QUEUED or RINGING becomes CANCELED, ANSWERED '
      + 'becomes COMPLETED (disconnection_reason api_hangup), and every leg is hung up. mode=setup_failed or cancel_setup '
      + 'cancels only a call not yet originated (CANCELED, call_outcome connection_unconfirmed, its browser ticket '
      + 'revoked); a call already dialed is left running (result already_originated). On an ended call every mode '
      + 'answers its current status with result already_ended. No body.',
    examples: { response: { data: { call_id: CALL_ID, status: 'COMPLETED', mode: 'hangup', result: 'ended' } } },
    params: IdParams,
    query: Type.Object({
      mode: Type.Optional(Type.Union(HANGUP_MODES.map((m) => Type.Literal(m)), { default: 'hangup',
        description: 'hangup: end the call in any state. setup_failed / cancel_setup: cancel only a call not yet originated; an originated call is left running.' })),
    }, { additionalProperties: false }),
    response: {
      status: 200,
      schema: Type.Object({ data: Type.Object({
        call_id: Type.String({ description: 'The call id.' }),
        status: Type.String({ description: 'The call\'s status after the request.' }),
        mode: Type.String({ description: 'The mode applied.' }),
        result: Type.String({ description: 'ended, canceled, already_ended, or already_originated (setup modes left the call running).' }),
      }, { description: 'What the request did.' }) }),
    },
    handler: async ({ deps, principal, params, query }) => {
      const mode = (query.mode ?? 'hangup') as HangupMode;
      // A credential limited to a sub-entity ends only that sub-entity's calls (another's: not_found, as another organization's).
      if (limitOf(principal) !== null && !(await getCall(deps.db, principal.organizationId, params.id, null, limitOf(principal)))) {
        throw notFound(`Call ${params.id}`);
      }
      const applied = await deps.calls.transition(params.id, { type: 'hangup', mode, at: new Date() },
        { organizationId: principal.organizationId, bestEffort: true });
      if (!applied) throw notFound(`Call ${params.id}`);
      const r = applied.step.result;
      const result = r === 'applied' ? (applied.call.status === 'CANCELED' ? 'canceled' : 'ended') : r;
      return { status: 200, body: { data: { call_id: applied.call.id, status: applied.call.status, mode, result } } };
    },
  });
};
