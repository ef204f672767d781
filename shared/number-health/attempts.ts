// Attempts attach an existing call to a session's queued number (they never dial); observations record what the
// tester's handset showed, once the call reached a terminal carrier state. A corrected observation keeps the
// before/after snapshot in spam_test_observation_audit; callback_verified is only ever set by an operator's
// attestation (recorded with who and when), never automatically.
import type { Static } from '@sinclair/typebox';
import type { Db, WithinTx } from '../db.ts';
import { isTerminal } from '../calls/model.ts';
import { DomainError, notFound, validationError, stateConflict } from '../errors.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import type { Outcome } from './policy.ts';
import { attemptView, findSession, getAttempt, HUMAN_MODES, type AttemptRow, type Handset } from './sessions.ts';
import type { AuditResponse, InboundResponse, ObservationResultResponse } from './schemas.ts';
import { recountSummary } from './summary.ts';

interface CallFacts {
  id: string; type: string; direction: string; from_number: string; to_number: string; phone_number_id: number | null;
  status: string; created_at: Date;
}

export async function createAttempt(db: Db, organizationId: string, userId: string, sessionId: string,
  input: { phone_id: number; call_id: string }, now: number, within?: WithinTx<AttemptRow>): Promise<AttemptRow> {
  const session = await findSession(db, organizationId, sessionId);
  if (!session) throw notFound(`Spam-test session ${sessionId}`);
  if (session.status !== 'ACTIVE') {
    throw stateConflict('number_health_session', session.status, `The session is ${session.status}; attempts attach only to an ACTIVE session.`,
      { resolutionHint: session.status === 'PAUSED' ? 'PATCH the session to {"status": "ACTIVE"} first.' : undefined });
  }
  if (!session.phone_ids.includes(input.phone_id)) throw validationError({ phone_id: 'is not in this session\'s queue' });
  const call = isUuid(input.call_id) ? await db.oneOrNone<CallFacts>(
    `SELECT id, type, direction, from_number, to_number, phone_number_id, status, created_at FROM calls
      WHERE id = $1 AND organization_id = $2`, [input.call_id, organizationId]) : null;
  if (!call) throw notFound(`Call ${input.call_id}`);
  const phone = await db.one<{ phone_number: string }>('SELECT phone_number FROM phone_numbers WHERE id = $1', [input.phone_id]);
  // Outbound: the queued number called the tester; inbound: the tester called the queued number.
  const inbound = call.direction === 'inbound';
  const ours = inbound ? call.to_number : call.from_number;
  const theirs = inbound ? call.from_number : call.to_number;
  if (ours !== phone.phone_number) {
    throw validationError({ call_id: `${inbound ? 'was not made to' : 'was not made from'} phone_id ${input.phone_id} (${phone.phone_number})` });
  }
  if (theirs !== session.tester_phone) {
    throw validationError({ call_id: `${inbound ? 'did not come from' : 'was not made to'} the session's tester (${session.tester_phone})` });
  }
  if (call.created_at.getTime() < session.created_at.getTime()) {
    throw validationError({ call_id: 'was placed before the session started' });
  }
  if (call.type === 'ai' && HUMAN_MODES.includes(session.mode)) {
    throw validationError({ call_id: `is an AI call; ${session.mode} sessions take human calls only` });
  }
  return db.tx(async (tx) => {
    const taken = await tx.oneOrNone('SELECT id FROM spam_test_attempts WHERE call_id = $1', [call.id]);
    if (taken) throw validationError({ call_id: `is already attached (attempt ${taken.id})` });
    await tx.none(
      `INSERT INTO spam_test_attempts (id, session_id, organization_id, phone_id, call_id, created_by_user_id, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [uuidv7(now), sessionId, organizationId, input.phone_id, call.id, userId, new Date(now)]).catch((err) => {
      if ((err as { code?: string }).code === '23505') throw validationError({ call_id: 'is already attached to an attempt' });
      throw err;
    });
    const a = (await tx.one<AttemptRow>(
      `SELECT a.*, c.direction AS call_direction, c.status AS call_status, c.duration_seconds
         FROM spam_test_attempts a JOIN calls c ON c.id = a.call_id WHERE a.call_id = $1`, [call.id]));
    await within?.(tx, a);
    return a;
  });
}

export interface ObservationInput {
  outcome: Outcome;
  observed_label: string;
  handset: Handset;
  callback_verified?: boolean;
}

/** What the audit keeps of an attempt before and after a posting (null: nothing observed or attested yet). */
interface Snapshot { outcome: Outcome | null; observed_label: string | null; handset: Handset | null; callback_verified: boolean }

const snapshot = (a: AttemptRow): Snapshot | null => (a.outcome === null && !a.callback_attested_by_user_id ? null : {
  outcome: a.outcome, observed_label: a.observed_label, handset: a.handset, callback_verified: a.callback_verified,
});

/** An attempt after a posting, with every posting of its observation. */
export interface ObservationResult { attempt: AttemptRow; audit: Audit }

export const observationResultView = (r: ObservationResult): Static<typeof ObservationResultResponse> =>
  ({ attempt: attemptView(r.attempt), audit: r.audit });

/** Seconds a client waits before retrying an observation on a live call. */
export const OBSERVATION_RETRY_SECONDS = 5;

export async function recordObservation(db: Db, organizationId: string, userId: string, attemptId: string, input: ObservationInput,
  now: number, within?: WithinTx<ObservationResult>): Promise<ObservationResult> {
  return db.tx(async (tx) => {
    const a = await getAttempt(tx, organizationId, attemptId, true);
    if (!a) throw notFound(`Attempt ${attemptId}`);
    const session = (await findSession(tx, organizationId, a.session_id))!;
    if (session.status === 'CANCELLED') throw stateConflict('number_health_session', 'CANCELLED', 'The session is CANCELLED; its evidence is kept but no longer changes.');
    if (!isTerminal(a.call_status!)) {
      throw new DomainError('call_not_terminal', `The call is ${a.call_status}: observations are recorded once the call has reached a terminal carrier state.`,
        { fields: { call_status: `is ${a.call_status}, not terminal` }, retryAfterSeconds: OBSERVATION_RETRY_SECONDS,
          resolutionHint: `Retry after ${OBSERVATION_RETRY_SECONDS} seconds, or once GET /v1/calls/${a.call_id} shows a terminal status (COMPLETED, BUSY, NO_ANSWER, VOICEMAIL, FAILED, CANCELED).` });
    }
    const at = new Date(now);
    const attest = input.callback_verified !== undefined;
    const updated = await tx.one<AttemptRow>(
      `UPDATE spam_test_attempts SET outcome = $2, observed_label = $3, handset = $4, observed_at = $5, observed_by_user_id = $6,
              callback_verified = CASE WHEN $7 THEN $8 ELSE callback_verified END,
              callback_attested_by_user_id = CASE WHEN $7 THEN $6 ELSE callback_attested_by_user_id END,
              callback_attested_at = CASE WHEN $7 THEN $5 ELSE callback_attested_at END
        WHERE id = $1 RETURNING *`,
      [a.id, input.outcome, input.observed_label, JSON.stringify(input.handset), at, userId, attest, input.callback_verified ?? false]);
    const after = { ...updated, call_direction: a.call_direction, call_status: a.call_status, duration_seconds: a.duration_seconds };
    await tx.none(
      `INSERT INTO spam_test_observation_audit (attempt_id, organization_id, user_id, before, after, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [a.id, organizationId, userId, JSON.stringify(snapshot(a)), JSON.stringify(snapshot(after)), at]);
    await recountSummary(tx, organizationId, a.phone_id, at);
    const audit = await auditOf(tx, a.id);
    const result = { attempt: after, audit };
    await within?.(tx, result);
    return result;
  });
}

type Audit = Static<typeof AuditResponse>;

/** Every posting of an attempt's observation, oldest first. after is never null: a posting always sets an outcome. */
export async function auditOf(q: Db | Parameters<WithinTx<unknown>>[0], attemptId: string): Promise<Audit> {
  const rows = await q.any<{ user_id: string; before: Snapshot | null; after: Snapshot; created_at: Date }>(
    `SELECT user_id, before, after, created_at FROM spam_test_observation_audit WHERE attempt_id = $1 ORDER BY id`, [attemptId]);
  return rows.map((r) => ({ recorded_by_user_id: r.user_id, before: r.before, after: r.after, recorded_at: r.created_at.toISOString() }));
}

/** GET .../sessions/{id}/inbound?phone_id=: the latest call from the tester to the queued number since the
 *  session started (existing inbound routing only; nothing is redirected). */
export async function inboundProgress(db: Db, organizationId: string, sessionId: string, phoneId: number): Promise<Static<typeof InboundResponse>> {
  const session = await findSession(db, organizationId, sessionId);
  if (!session) throw notFound(`Spam-test session ${sessionId}`);
  if (!session.phone_ids.includes(phoneId)) throw validationError({ phone_id: 'is not in this session\'s queue' });
  const phone = await db.one<{ phone_number: string }>('SELECT phone_number FROM phone_numbers WHERE id = $1', [phoneId]);
  const c = await db.oneOrNone(
    `SELECT c.id, c.type, c.status, c.answered_at, c.ended_at, c.duration_seconds, c.picked_up, a.id AS attempt_id,
            COALESCE(a.callback_verified, false) AS callback_verified
       FROM calls c LEFT JOIN spam_test_attempts a ON a.call_id = c.id
      WHERE c.organization_id = $1 AND c.direction = 'inbound' AND c.to_number = $2 AND c.from_number = $3 AND c.created_at >= $4
      ORDER BY c.created_at DESC, c.id DESC LIMIT 1`,
    [organizationId, phone.phone_number, session.tester_phone, session.created_at]);
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    session_id: sessionId, phone_id: phoneId, phone_number: phone.phone_number, tester_phone_number: session.tester_phone,
    call_id: c?.id ?? null, attempt_id: c?.attempt_id ?? null, status: c ? c.status : 'WAITING',
    answered_at: iso(c?.answered_at ?? null), ended_at: iso(c?.ended_at ?? null), duration_seconds: c?.duration_seconds ?? null,
    callback_verified: c?.callback_verified ?? false, human: c ? c.type !== 'ai' && c.picked_up : false,
  };
}
