// API and webhook shapes of a call.
import type { Principal } from '../accounts/principal.ts';
import type { LegRole } from '../carriers/carrier.ts';
import { FAILURES, type CallRow, type Leg } from './model.ts';
import { hasRecording, recordingPath } from './recording.ts';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Where the call's recording is served (GET /v1/calls/{id}/recording), or null when it has none. */
export const recordingUrl = (c: CallRow, baseUrl: string) => (hasRecording(c) ? baseUrl + recordingPath(c.id) : null);

export interface ViewOptions {
  /** Public base URL of the API, for recording_url. */
  baseUrl: string;
  /** The credential has recordings:read: recording_url is present (null when there is none). */
  recordings: boolean;
  /** The organization pins call content to a HIPAA boundary: recordings are never returned. */
  hipaa: boolean;
}

export const viewOptions = (p: Principal, contentPolicy: string, baseUrl: string): ViewOptions =>
  ({ recordings: p.scopes.has('recordings:read'), hipaa: contentPolicy === 'hipaa', baseUrl });

const ROLES: LegRole[] = ['connect', 'destination', 'browser'];

const legView = (l: Leg) => ({
  role: l.role, number: l.number, status: l.status, end_reason: l.reason,
  originated_at: l.originated_at, answered_at: l.answered_at, ended_at: l.ended_at,
});

/** The call record of GET /v1/calls and GET /v1/calls/{id}. */
export function callView(c: CallRow, o: ViewOptions) {
  const v: Record<string, unknown> = {
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
    created_at: c.created_at.toISOString(),
    answered_at: iso(c.answered_at),
    ended_at: iso(c.ended_at),
    legs: ROLES.map((r) => c.legs[r]).filter((l): l is Leg => !!l).map(legView),
  };
  if (o.recordings) v.recording_url = o.hipaa ? null : recordingUrl(c, o.baseUrl);
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
  };
}

/** The events a call end writes: call_completed always, the disposition event of its outcome, phone_call.ended. */
export function endEvents(c: CallRow): { eventType: string; data: Record<string, unknown> }[] {
  const out: { eventType: string; data: Record<string, unknown> }[] = [{ eventType: 'call_completed', data: callEventPayload(c) }];
  if (c.failure_code) out.push({ eventType: FAILURES[c.failure_code].event, data: dispositionPayload(c) });
  out.push({ eventType: 'phone_call.ended', data: callEventPayload(c) });
  return out;
}
