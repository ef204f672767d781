import { Type } from '@sinclair/typebox';
import { resolveAgent } from '../../shared/calls/agents.ts';
import { HANGUP_MODES, type CallRow, type HangupMode } from '../../shared/calls/model.ts';
import { placeCall } from '../../shared/calls/place.ts';
import { callRuntime } from '../../shared/calls/runtime.ts';
import { callForContent, contentPolicy, getCall, listCalls } from '../../shared/calls/store.ts';
import { hasRecording } from '../../shared/calls/recording.ts';
import { recordingStore } from '../../shared/calls/recording-store.ts';
import { callView, viewOptions } from '../../shared/calls/views.ts';
import { ApiError, notFound } from '../../shared/errors.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Deprecation, Plugin, Reply } from '../http/types.ts';
import { ListMeta, Nullable } from './schemas.ts';

const Number164 = (description: string, extra: Record<string, unknown> = {}) => Type.String({ description, ...extra });
const Ts = Type.String({ format: 'date-time' });

const Leg = Type.Object({
  role: Type.Union([Type.Literal('connect'), Type.Literal('destination'), Type.Literal('browser')]),
  number: Type.String(),
  status: Type.String({ description: 'PENDING, DIALING, RINGING, ANSWERED or ENDED' }),
  end_reason: Nullable(Type.String()),
  originated_at: Nullable(Ts), answered_at: Nullable(Ts), ended_at: Nullable(Ts),
});

const Call = Type.Object({
  id: Type.String({ format: 'uuid' }),
  type: Type.Union([Type.Literal('bridge'), Type.Literal('ai'), Type.Literal('webrtc'), Type.Literal('room')]),
  direction: Type.String(),
  from_number: Type.String(),
  to_number: Type.String(),
  connect_number: Nullable(Type.String()),
  agent_id: Nullable(Type.String()),
  status: Type.String({ description: 'QUEUED, RINGING, ANSWERED, COMPLETED, BUSY, NO_ANSWER, VOICEMAIL, FAILED, CANCELED' }),
  call_outcome: Nullable(Type.String()),
  failure_code: Nullable(Type.String()),
  failure_category: Nullable(Type.String()),
  disconnection_reason: Nullable(Type.String()),
  picked_up: Type.Boolean(),
  duration_seconds: Nullable(Type.Integer()),
  record: Type.Boolean(),
  cost_cents: Type.Integer(),
  max_duration_seconds: Type.Integer(),
  created_at: Ts,
  answered_at: Nullable(Ts),
  ended_at: Nullable(Ts),
  legs: Type.Array(Leg),
  recording_url: Type.Optional(Nullable(Type.String({ description: 'Only with the recordings:read scope.' }))),
});

const Accepted = Type.Object({
  call_id: Type.String({ format: 'uuid' }),
  status: Type.Literal('QUEUED'),
  from_number: Type.String(),
  selection_source: Type.Literal('exact_from_number'),
  evidence_state: Type.Null(),
  health_warning: Type.Null(),
  recommended_action: Type.Null(),
});

const IdParams = Type.Object({ id: Type.String() });

const CALL_ERRORS = ['destination_missing', 'destination_invalid', 'no_active_number', 'call_id_not_verified',
  'destination_blocked', 'forbidden', 'spend_cap_reached', 'channel_limit_exceeded', 'idempotency_conflict'] as const;

/** The older caller_id/destination spelling of POST /v1/calls. */
const LEGACY_SPELLING = (base: string): Deprecation => ({
  since: new Date('2026-01-01T00:00:00Z'),
  sunset: new Date('2027-06-30T00:00:00Z'),
  link: `${base}/v1/openapi.json`,
});

function accepted(c: { id: string; from_number: string }) {
  return {
    call_id: c.id, status: 'QUEUED' as const, from_number: c.from_number, selection_source: 'exact_from_number' as const,
    evidence_state: null, health_warning: null, recommended_action: null,
  };
}

export const callRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/calls/dial', scope: 'calls:write', tag: 'Calls',
    summary: 'Bridge call: ring connect_number (your phone), then to_number, then connect them. The called party sees only from_number.',
    body: Type.Object({
      from_number: Type.Optional(Number164('Caller ID: an active E.164 number of your organization. Wins over number_set_id.')),
      number_set_id: Type.Optional(Type.String({ description: 'Caller-ID selection from a Number Set (not available yet).' })),
      to_number: Type.Optional(Number164('The called party (E.164).')),
      connect_number: Type.Optional(Number164('The phone rung first and bridged to to_number (E.164).')),
      record: Type.Optional(Type.Boolean({ default: false })),
    }, { additionalProperties: false }),
    response: { status: 202, schema: Type.Object({ data: Accepted }), description: 'Accepted; the call progresses asynchronously.' },
    errors: [...CALL_ERRORS],
    handler: async (ctx) => {
      const { deps, principal, body } = ctx;
      const reply = (call: CallRow): Reply => ({ status: 202, body: { data: accepted(call) } });
      const call = await placeCall(callRuntime(deps), principal, {
        type: 'bridge', from: body.from_number, to: body.to_number, connect: body.connect_number,
        numberSetId: body.number_set_id, record: body.record ?? false, names: { from: 'from_number', to: 'to_number' },
      }, ctx.idempotent(reply));
      return reply(call);
    },
  });

  routes.add({
    method: 'POST', path: '/v1/calls', scope: 'calls:write', tag: 'Calls',
    summary: 'AI outbound call: the agent talks to to_number. caller_id/destination are the deprecated spelling of from_number/to_number.',
    body: Type.Object({
      from_number: Type.Optional(Number164('Caller ID: an active E.164 number of your organization.')),
      to_number: Type.Optional(Number164('The called party (E.164).')),
      caller_id: Type.Optional(Number164('Deprecated spelling of from_number.', { deprecated: true })),
      destination: Type.Optional(Number164('Deprecated spelling of to_number.', { deprecated: true })),
      agent_id: Type.Optional(Type.String({ description: 'A saved agent (GET /v1/agents).' })),
      agent: Type.Optional(Type.Object({
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
        greeting: Type.String({ minLength: 1, maxLength: 1000 }),
        prompt: Type.Optional(Type.String({ maxLength: 20000 })),
        voice: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      }, { additionalProperties: false, description: 'Inline agent settings instead of agent_id.' })),
      record: Type.Optional(Type.Boolean({ default: false })),
    }, { additionalProperties: false }),
    response: {
      status: 202, description: 'Accepted; the call progresses asynchronously.',
      schema: Type.Object({ data: Type.Object({ ...Accepted.properties, to_number: Type.String(), agent_id: Nullable(Type.String()) }) }),
    },
    errors: [...CALL_ERRORS],
    handler: async (ctx) => {
      const { deps, principal, body, baseUrl } = ctx;
      const fields: Record<string, string> = {};
      if (body.from_number !== undefined && body.caller_id !== undefined) fields.caller_id = 'give from_number or caller_id (its deprecated name), not both';
      if (body.to_number !== undefined && body.destination !== undefined) fields.destination = 'give to_number or destination (its deprecated name), not both';
      if (Object.keys(fields).length) throw new ApiError('validation_error', 'Use one spelling per field.', { fields });
      const legacy = body.caller_id !== undefined || body.destination !== undefined;
      const agent = await resolveAgent(deps.db, principal.organizationId, body.agent_id, body.agent);
      const reply = (call: CallRow): Reply => ({
        status: 202, body: { data: { ...accepted(call), to_number: call.to_number, agent_id: call.agent_id } },
        deprecation: legacy ? LEGACY_SPELLING(baseUrl) : undefined,
      });
      const call = await placeCall(callRuntime(deps), principal, {
        type: 'ai', from: body.from_number ?? body.caller_id, to: body.to_number ?? body.destination, record: body.record ?? false,
        agent, names: {
          from: body.caller_id !== undefined || (legacy && body.from_number === undefined) ? 'caller_id' : 'from_number',
          to: body.destination !== undefined || (legacy && body.to_number === undefined) ? 'destination' : 'to_number',
        },
      }, ctx.idempotent(reply));
      return reply(call);
    },
  });

  routes.add({
    method: 'GET', path: '/v1/calls', scope: 'calls:read', tag: 'Calls',
    summary: 'Calls of the organization, newest first (order=asc for oldest first).',
    query: Type.Object(PageQuery, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Call), meta: ListMeta }) },
    handler: async ({ deps, principal, query, baseUrl }) => {
      const page = deps.cursors.params('calls', query);
      const rows = await listCalls(deps.db, principal.organizationId, page);
      const out = deps.cursors.page('calls', page, rows, (r) => r.id);
      const o = viewOptions(principal, principal.scopes.has('recordings:read') ? await contentPolicy(deps.db, principal.organizationId) : 'standard', baseUrl);
      return { status: 200, body: { data: out.data.map((c) => callView(c, o)), meta: out.meta } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/calls/{id}', scope: 'calls:read', tag: 'Calls', summary: 'One call record.',
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: Call }) },
    handler: async ({ deps, principal, params, baseUrl }) => {
      const call = await getCall(deps.db, principal.organizationId, params.id);
      if (!call) throw notFound(`Call ${params.id}`);
      const o = viewOptions(principal, principal.scopes.has('recordings:read') ? await contentPolicy(deps.db, principal.organizationId) : 'standard', baseUrl);
      return { status: 200, body: { data: callView(call, o) } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/calls/{id}/transcript', scope: 'transcripts:read', tag: 'Calls',
    summary: 'Transcript and a small analysis of a call; 403 content_policy_forbidden under a HIPAA content policy.',
    params: IdParams,
    response: {
      status: 200,
      schema: Type.Object({ data: Type.Object({
        call_id: Type.String(),
        status: Type.Union([Type.Literal('available'), Type.Literal('pending'), Type.Literal('unavailable')]),
        reason: Nullable(Type.String({ description: 'Why there is none: in_progress, not_answered, not_recorded (a bridge call without record), not_available (the carrier produced none).' })),
        language: Nullable(Type.String()),
        turns: Type.Array(Type.Object({ speaker: Type.String(), text: Type.String(), offset_seconds: Type.Number() })),
        analysis: Nullable(Type.Object({}, { additionalProperties: true })),
      }) }),
    },
    errors: ['content_policy_forbidden'],
    handler: async ({ deps, principal, params }) => {
      const call = await callForContent(deps.db, principal.organizationId, params.id);
      const t = call.transcript as { language: string; turns: unknown[]; analysis: unknown } | null;
      const reason = t ? null : !call.ended_at ? 'in_progress' : !call.picked_up ? 'not_answered'
        : call.type !== 'ai' && !call.record ? 'not_recorded' : 'not_available';
      return {
        status: 200,
        body: { data: {
          call_id: call.id, status: t ? 'available' : reason === 'in_progress' ? 'pending' : 'unavailable', reason,
          language: t?.language ?? null, turns: t?.turns ?? [], analysis: t?.analysis ?? null,
        } },
      };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/calls/{id}/recording', scope: 'recordings:read', tag: 'Calls',
    summary: 'The call recording as audio/wav (G.711 μ-law, 8 kHz); 404 when the call has none, 403 content_policy_forbidden '
      + 'under a HIPAA content policy. Byte ranges (Range: bytes=) answer 206, a range past the end 416; 503 with Retry-After '
      + 'when the gateway already streams its maximum of recordings.',
    params: IdParams,
    response: { status: 200, contentType: 'audio/wav', description: 'WAV audio (format 7, μ-law, mono, 8 kHz)' },
    errors: ['content_policy_forbidden', 'service_unavailable'],
    handler: async ({ deps, principal, params }) => {
      const call = await callForContent(deps.db, principal.organizationId, params.id);
      if (!hasRecording(call)) {
        throw new ApiError('not_found', `Call ${params.id} has no recording (it was not recorded, not answered, or has not ended).`);
      }
      return {
        status: 200, file: await recordingStore(deps.config.recordingsDir, deps.log).file(call),
        headers: { 'content-type': 'audio/wav', 'content-disposition': `inline; filename="call-${call.id}.wav"` },
      };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/calls/{id}/hangup', scope: 'calls:write', tag: 'Calls',
    summary: 'End a call (mode hangup), or cancel one that has not originated (setup_failed, cancel_setup). Ending an ended call returns its status.',
    params: IdParams,
    query: Type.Object({
      mode: Type.Optional(Type.Union(HANGUP_MODES.map((m) => Type.Literal(m)), { default: 'hangup',
        description: 'hangup: end the call in any state. setup_failed / cancel_setup: cancel only a call not yet originated; an originated call is left running.' })),
    }, { additionalProperties: false }),
    response: {
      status: 200,
      schema: Type.Object({ data: Type.Object({
        call_id: Type.String(), status: Type.String(), mode: Type.String(),
        result: Type.String({ description: 'ended, canceled, already_ended, or already_originated (setup modes left the call running)' }),
      }) }),
    },
    handler: async ({ deps, principal, params, query }) => {
      const mode = (query.mode ?? 'hangup') as HangupMode;
      const applied = await callRuntime(deps).transition(params.id, { type: 'hangup', mode, at: new Date() },
        { organizationId: principal.organizationId, bestEffort: true });
      if (!applied) throw notFound(`Call ${params.id}`);
      const r = applied.step.result;
      const result = r === 'applied' ? (applied.call.status === 'CANCELED' ? 'canceled' : 'ended') : r;
      return { status: 200, body: { data: { call_id: applied.call.id, status: applied.call.status, mode, result } } };
    },
  });
};
