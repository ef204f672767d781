// The sandbox's inbound calls: a simulated call from an outside phone (a tester) to a number the organization
// holds, recorded whole at once (type and direction inbound) with the given talk time and outcome. Spam-test
// attempts and inbound progress read it like any call. Real carriers record inbound calls from their own events.
// With ring: true it is a live call instead, which rings the organization's listening browsers like a SIP trunk's
// (shared/calls/inbound.ts ringSandboxInbound; its caller's script in shared/carriers/sandbox.ts).
import type { Principal } from '../accounts/principal.ts';
import type { Db } from '../db.ts';
import { validationError } from '../errors.ts';
import { uuidv7 } from '../ids.ts';
import { isE164 } from '../phone/e164.ts';
import { ringSandboxInbound } from '../calls/inbound.ts';
import type { CallRow } from '../calls/model.ts';
import type { CallRuntime } from '../calls/runtime.ts';
import { SANDBOX_INBOUND_TALK_SECONDS } from '../carriers/sandbox.ts';

export const INBOUND_OUTCOMES = ['answered', 'no_answer', 'busy', 'voicemail'] as const;
export type InboundOutcome = (typeof INBOUND_OUTCOMES)[number];

/** Seconds the simulated call rings before it is answered (or gives up). */
export const INBOUND_RING_SECONDS = 3;

const ENDS: Record<InboundOutcome, { status: string; failure: string | null; category: string | null; picked: boolean }> = {
  answered: { status: 'COMPLETED', failure: null, category: null, picked: true },
  no_answer: { status: 'NO_ANSWER', failure: 'no_answer', category: 'unreachable', picked: false },
  busy: { status: 'BUSY', failure: 'busy', category: 'unreachable', picked: false },
  voicemail: { status: 'VOICEMAIL', failure: 'voicemail_reached', category: 'voicemail', picked: false },
};

export interface InboundInput { from_number: string; to_number: string; duration_seconds: number; outcome: InboundOutcome }

/** The request body of POST /v1/sandbox/calls/inbound: a recorded call (duration_seconds and outcome), or with
 *  ring: true a live one that rings browsers (talk_seconds, default 10). */
export interface SandboxInboundRequest {
  from_number: string; to_number: string; duration_seconds?: number; outcome?: InboundOutcome; ring?: boolean; talk_seconds?: number;
}

/** POST /v1/sandbox/calls/inbound: which fields go with which kind of call, then the call. */
export async function sandboxInboundCall(rt: CallRuntime, p: Principal, input: SandboxInboundRequest, now: number): Promise<CallRow> {
  const fields: Record<string, string> = {};
  if (input.ring === true) {
    for (const f of ['duration_seconds', 'outcome'] as const) {
      if (input[f] !== undefined) fields[f] = 'is not allowed with ring: true (the call takes the course the browser gives it)';
    }
  } else {
    for (const f of ['duration_seconds', 'outcome'] as const) if (input[f] === undefined) fields[f] = 'is required';
    if (input.talk_seconds !== undefined) fields.talk_seconds = 'is allowed only with ring: true';
  }
  if (Object.keys(fields).length) throw validationError(fields);
  if (input.ring === true) {
    return ringSandboxInbound(rt, { organizationId: p.organizationId, from: input.from_number, to: input.to_number,
      talkSeconds: input.talk_seconds ?? SANDBOX_INBOUND_TALK_SECONDS, ringSeconds: rt.deps.config.sandboxInboundRingSeconds });
  }
  return simulateInboundCall(rt.deps.db, p, input as InboundInput, now, rt.deps.config.sandboxTimeScale) as Promise<CallRow>;
}

export async function simulateInboundCall(db: Db, p: Principal, input: InboundInput, now: number, timeScale: number) {
  const fields: Record<string, string> = {};
  if (!isE164(input.from_number)) fields.from_number = 'must be an E.164 number';
  if (!isE164(input.to_number)) fields.to_number = 'must be an E.164 number';
  if (input.outcome !== 'answered' && input.duration_seconds !== 0) fields.duration_seconds = 'must be 0 unless outcome is answered';
  if (Object.keys(fields).length) throw validationError(fields);
  const phone = await db.oneOrNone<{ id: number }>(
    `SELECT id FROM phone_numbers WHERE organization_id = $1 AND phone_number = $2 AND status = 'ACTIVE'`, [p.organizationId, input.to_number]);
  if (!phone) throw validationError({ to_number: 'is not an active number of your organization' });
  const end = ENDS[input.outcome];
  const created = new Date(now);
  const answered = end.picked ? new Date(now + INBOUND_RING_SECONDS * 1000) : null;
  const ended = new Date(now + INBOUND_RING_SECONDS * 1000 + input.duration_seconds * 1000);
  const leg = { role: 'destination', number: input.to_number, status: 'ENDED', reason: end.picked ? 'completed' : input.outcome,
    originated_at: created.toISOString(), answered_at: answered?.toISOString() ?? null, ended_at: ended.toISOString() };
  return db.one(
    `INSERT INTO calls (id, organization_id, api_key_id, user_id, type, direction, from_number, to_number, phone_number_id, status,
       call_outcome, failure_code, failure_category, disconnection_reason, picked_up, legs, channels, carrier, time_scale,
       max_duration_seconds, ring_timeout_seconds, price_cents_per_minute, cost_cents, duration_seconds, originated_at, answered_at,
       ended_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'inbound', 'inbound', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 0, 'sandbox', $15, 10800, 30, 0, 0,
       $16, $17, $18, $19, $17, $19) RETURNING *`,
    [uuidv7(now), p.organizationId, p.kind === 'api_key' ? p.keyId : null, p.userId, input.from_number, input.to_number, phone.id,
      end.status, end.picked ? 'answered' : end.status.toLowerCase(), end.failure, end.category, end.picked ? 'remote_hangup' : null,
      end.picked, JSON.stringify({ destination: leg }), timeScale, input.duration_seconds, created, answered, ended]);
}
