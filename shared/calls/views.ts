// API and webhook shapes of a call: the call record's response schema and the view that builds it.
import { Type, type Static } from '@sinclair/typebox';
import type { Principal } from '../accounts/principal.ts';
import type { LegRole } from '../carriers/carrier.ts';
import { FAILURES, type CallRow, type Leg } from './model.ts';
import { hasRecording, recordingPath } from './recording.ts';
import { Nullable } from '../response-schemas.ts';
import { callContentWithheld, type ContentScope } from '../sub-entities/content-policy.ts';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Where the call's recording is served (GET /v1/calls/{id}/recording), or null when it has none. */
export const recordingUrl = (c: CallRow, baseUrl: string) => (hasRecording(c) ? baseUrl + recordingPath(c.id) : null);

export interface ViewOptions {
  /** Public base URL of the API, for recording_url. */
  baseUrl: string;
  /** The credential has recordings:read: recording_url is present (null when there is none). */
  recordings: boolean;
  /** Who pins call content to a HIPAA boundary (the organization, HIPAA sub-entities): their recordings are never returned. */
  content: ContentScope;
}

export const viewOptions = (p: Principal, content: ContentScope, baseUrl: string): ViewOptions =>
  ({ recordings: p.scopes.has('recordings:read'), content, baseUrl });

const Ts = (description: string) => Type.String({ format: 'date-time', description });

export const LegResponse = Type.Object({
  role: Type.Union([Type.Literal('connect'), Type.Literal('destination'), Type.Literal('browser')],
    { description: 'connect: your phone rung first on a bridge; destination: the called party; browser: a browser softphone.' }),
  number: Type.String({ description: 'The number this leg dials (E.164).' }),
  status: Type.String({ description: 'PENDING, DIALING, RINGING, ANSWERED or ENDED.' }),
  end_reason: Nullable(Type.String(), 'Why the leg ended (busy, no_answer, remote_hangup, ...); null while it runs.'),
  originated_at: Nullable(Ts('When the leg was dialed.'), 'When the leg was dialed; null before.'),
  answered_at: Nullable(Ts('When the leg answered.'), 'When the leg answered; null if it did not.'),
  ended_at: Nullable(Ts('When the leg ended.'), 'When the leg ended; null while it runs.'),
}, { description: 'One carrier leg of the call.' });

export const CallResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The call id (call_id in the 202 answer).' }),
  type: Type.Union([Type.Literal('bridge'), Type.Literal('ai'), Type.Literal('webrtc'), Type.Literal('room'), Type.Literal('inbound')],
    { description: 'bridge (POST /v1/calls/dial), ai (POST /v1/calls), webrtc (browser path A), room (browser path B) or inbound (a call to your number).' }),
  direction: Type.String({ description: 'outbound, or inbound for calls to your numbers.' }),
  from_number: Type.String({ description: 'The caller ID shown to the called party (E.164).' }),
  to_number: Type.String({ description: 'The called party (E.164).' }),
  connect_number: Nullable(Type.String(), 'Bridge calls: your phone, rung first (E.164); null for other types.'),
  agent_id: Nullable(Type.String(), 'AI calls: the saved agent used; null for inline settings and other types.'),
  status: Type.String({ description: 'QUEUED, RINGING, ANSWERED (live); COMPLETED, BUSY, NO_ANSWER, VOICEMAIL, FAILED, CANCELED (terminal).' }),
  call_outcome: Nullable(Type.String(), 'How it went: new_call, answered, screened, busy, no_answer, voicemail, failed, canceled, connection_unconfirmed.'),
  failure_code: Nullable(Type.String(), 'Asynchronous failure: busy, no_answer, number_unreachable, call_declined, carrier_rejected, voicemail_reached; null otherwise.'),
  failure_category: Nullable(Type.String(), 'unreachable or voicemail when failure_code is set; null otherwise.'),
  disconnection_reason: Nullable(Type.String(), 'What ended it: remote_hangup, connect_hangup, api_hangup, max_duration_reached, call_screened, caller_id_released, setup_timeout, ...'),
  picked_up: Type.Boolean({ description: 'Whether a person answered (false for screening, voicemail and unanswered calls).' }),
  duration_seconds: Nullable(Type.Integer(), 'Talk time in seconds; 0 when never answered, null when unknown (screening).'),
  record: Type.Boolean({ description: 'Whether the call is recorded.' }),
  cost_cents: Type.Integer({ description: 'Price in cents, set when the call ends (sandbox: 1 cent per started minute per answered leg).' }),
  max_duration_seconds: Type.Integer({ description: 'The call-length limit: the call is ended automatically when reached.' }),
  issued_by_user_id: Nullable(Type.String({ format: 'uuid' }), 'The issuing user (reference: "every call is recorded with its '
    + 'issuing user"): the user of the API key or console session that placed it; null for a key made by the admin CLI '
    + 'without a user, and for inbound calls.'),
  api_key_id: Nullable(Type.String({ format: 'uuid' }), 'The API key that placed the call; '
    + 'null when placed with a client token or a console session, and for inbound calls.'),
  sub_entity_id: Nullable(Type.String({ format: 'uuid' }), 'The sub-entity of the call: its from_number\'s (inbound: the '
    + 'called number\'s) when it was placed, or the one named by sub_entity_id; null: none.'),
  created_at: Ts('When the call was accepted.'),
  answered_at: Nullable(Ts('When the called party answered.'), 'When the called party answered; null if not.'),
  ended_at: Nullable(Ts('When the call ended.'), 'When the call ended; null while live.'),
  legs: Type.Array(LegResponse, { description: 'The carrier legs, in dialing order.' }),
  recording_url: Type.Optional(Nullable(Type.String(), 'Only for credentials with recordings:read: where to GET the '
    + 'recording (audio/wav); null without a recording and always when the organization or the call\'s sub-entity is in HIPAA mode.')),
}, { description: 'A call record.' });

const ROLES: LegRole[] = ['connect', 'destination', 'browser'];

const legView = (l: Leg): Static<typeof LegResponse> => ({
  role: l.role, number: l.number, status: l.status, end_reason: l.reason,
  originated_at: l.originated_at, answered_at: l.answered_at, ended_at: l.ended_at,
});

/** The call record of GET /v1/calls and GET /v1/calls/{id}. */
export function callView(c: CallRow, o: ViewOptions): Static<typeof CallResponse> {
  const v: Static<typeof CallResponse> = {
    id: c.id,
    type: c.type,
    direction: c.direction,
    from_number: c.from_number,
    to_number: c.to_number,
    connect_number: c.connect_number,
    agent_id: c.agent_id,
    status: c.status,
    call_outcome: c.call_outcome,
    failure_code: c.failure_code,
    failure_category: c.failure_category,
    disconnection_reason: c.disconnection_reason,
    picked_up: c.picked_up,
    duration_seconds: c.duration_seconds,
    record: c.record,
    cost_cents: c.cost_cents,
    max_duration_seconds: c.max_duration_seconds,
    issued_by_user_id: c.user_id,
    api_key_id: c.api_key_id,
    sub_entity_id: c.sub_entity_id ?? null,
    created_at: c.created_at.toISOString(),
    answered_at: iso(c.answered_at),
    ended_at: iso(c.ended_at),
    legs: ROLES.map((r) => c.legs[r]).filter((l): l is Leg => !!l).map(legView),
  };
  if (o.recordings) v.recording_url = callContentWithheld(o.content, c) ? null : recordingUrl(c, o.baseUrl);
  return v;
}

/** Payload of the disposition events (call_no_answer, call_voicemail, call_busy, call_failed): exactly the
 *  reference's fields. */
export function dispositionPayload(c: CallRow) {
  return {
    id: c.id,
    from_number: c.from_number,
    to_number: c.to_number,
    direction: c.direction,
    duration_seconds: c.duration_seconds,
    status: c.status,
    failure_code: c.failure_code,
    failure_category: c.failure_category,
    disconnection_reason: c.disconnection_reason,
    created_at: c.created_at.toISOString(),
  };
}

/** Payload of new_call, call_completed and phone_call.ended: the disposition fields plus what a receiver needs
 *  to reconcile the call without a read. */
export function callEventPayload(c: CallRow) {
  return {
    ...dispositionPayload(c),
    type: c.type,
    connect_number: c.connect_number,
    agent_id: c.agent_id,
    call_outcome: c.call_outcome,
    picked_up: c.picked_up,
    answered_at: iso(c.answered_at),
    ended_at: iso(c.ended_at),
    cost_cents: c.cost_cents,
    issued_by_user_id: c.user_id,
    api_key_id: c.api_key_id,
    sub_entity_id: c.sub_entity_id ?? null,
  };
}

/** The events a call end writes: call_completed always, the disposition event of its outcome, phone_call.ended. */
export function endEvents(c: CallRow): { eventType: string; data: Record<string, unknown> }[] {
  const out: { eventType: string; data: Record<string, unknown> }[] = [{ eventType: 'call_completed', data: callEventPayload(c) }];
  if (c.failure_code) out.push({ eventType: FAILURES[c.failure_code].event, data: dispositionPayload(c) });
  out.push({ eventType: 'phone_call.ended', data: callEventPayload(c) });
  return out;
}

export const TranscriptResponse = Type.Object({
  call_id: Type.String({ description: 'The call id.' }),
  status: Type.Union([Type.Literal('available'), Type.Literal('pending'), Type.Literal('unavailable')],
    { description: 'available; pending while the call is live; unavailable when there will be none.' }),
  reason: Nullable(Type.String(), 'Why there is none: in_progress, not_answered, not_recorded (a bridge call without record), not_available (the carrier produced none); null when available.'),
  language: Nullable(Type.String(), 'BCP 47 language of the transcript; null when there is none.'),
  turns: Type.Array(Type.Object({
    speaker: Type.String({ description: 'agent, caller (your side of a bridge) or callee (the called party).' }),
    text: Type.String({ description: 'What was said.' }),
    offset_seconds: Type.Number({ description: 'Seconds from the answer to the start of the turn.' }),
  }, { description: 'One turn of the conversation.' }), { description: 'The conversation, in order; empty when there is none.' }),
  analysis: Nullable(Type.Object({}, { additionalProperties: true }), 'summary, sentiment (positive, neutral, negative), '
    + 'turn_count, talk_seconds, ended_by and keywords; null when there is no transcript.'),
}, { description: 'The transcript.' });

type TranscriptColumn = { language: string; turns: Static<typeof TranscriptResponse>['turns']; analysis: Record<string, unknown> };

/** GET /v1/calls/{id}/transcript: the transcript, or why there is none (in_progress, not_answered, not_recorded,
 *  not_available). */
export function transcriptView(c: CallRow): Static<typeof TranscriptResponse> {
  const t = c.transcript as TranscriptColumn | null;
  const reason = t ? null : !c.ended_at ? 'in_progress' : !c.picked_up ? 'not_answered'
    : c.type !== 'ai' && !c.record ? 'not_recorded' : 'not_available';
  return {
    call_id: c.id, status: t ? 'available' : reason === 'in_progress' ? 'pending' : 'unavailable', reason,
    language: t?.language ?? null, turns: t?.turns ?? [], analysis: t?.analysis ?? null,
  };
}
