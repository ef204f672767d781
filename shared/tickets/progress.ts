// What happens after a committed change of a call: its progress is published on Redis, one PUBLISH per new call and
// per transition, for every call. Two kinds of subscribers read it: every signaling process (the one holding a
// browser call's socket forwards it; other calls, `browser: false`, it ignores) and every gateway that has a call
// stream open (GET /v1/calls/stream, gateway/http/event-stream.ts, filtered by organization). At the end of a
// browser call an unused ticket is revoked with a setup diagnostic first.
import type { Keyer } from '../redis.ts';
import { isTerminal, type CallRow } from '../calls/model.ts';
import type { Input } from '../calls/machine.ts';
import type { Applied } from '../calls/store.ts';
import type { ProcessDeps } from '../process.ts';
import { BROWSER_CALL_TYPES, recordSetupDiagnostic, revokeUnusedTicket } from './tickets.ts';

export const progressChannel = (key: Keyer) => key('calls', 'progress');

/** The message published for each transition (and what signaling turns into frames). */
export interface CallProgress {
  call_id: string;
  organization_id: string;
  /** Whether signaling carries this call (webrtc, room); signaling ignores the others. */
  browser: boolean;
  /** The user who placed the call (an agent's call stream shows only its own calls). */
  user_id: string | null;
  type: string;
  direction: string;
  from_number: string;
  to_number: string;
  connect_number: string | null;
  created_at: string;
  answered_at: string | null;
  ended_at: string | null;
  updated_at: string;
  status: string;
  call_outcome: string | null;
  failure_code: string | null;
  failure_category: string | null;
  disconnection_reason: string | null;
  duration_seconds: number | null;
}

export const isBrowserCall = (c: Pick<CallRow, 'type'>) => BROWSER_CALL_TYPES.has(c.type);

const isoOrNull = (d: Date | null) => (d ? d.toISOString() : null);

export const progressOf = (c: CallRow): CallProgress => ({
  call_id: c.id, organization_id: c.organization_id, browser: isBrowserCall(c), user_id: c.user_id, type: c.type,
  direction: c.direction, from_number: c.from_number, to_number: c.to_number, connect_number: c.connect_number,
  created_at: c.created_at.toISOString(), answered_at: isoOrNull(c.answered_at), ended_at: isoOrNull(c.ended_at),
  updated_at: (c.updated_at ?? c.created_at).toISOString(), status: c.status, call_outcome: c.call_outcome,
  failure_code: c.failure_code, failure_category: c.failure_category, disconnection_reason: c.disconnection_reason,
  duration_seconds: c.duration_seconds,
});

/** Publishes a call's current state (after its insert or a transition committed). Never throws: a lost message is
 *  repaired by readers (signaling reads the call when a socket attaches; a call stream's client re-lists). */
export async function publishProgress(deps: Pick<ProcessDeps, 'redis' | 'key' | 'log'>, call: CallRow): Promise<void> {
  try {
    await deps.redis.publish(progressChannel(deps.key), JSON.stringify(progressOf(call)));
  } catch (err) {
    deps.log.warn({ err, call_id: call.id }, 'call progress not published');
  }
}

/** The post-commit hook of every call (CallRuntime runs it after each applied transition): a browser call's ticket
 *  revocation at its end, then the progress of every call. Never throws. */
export async function afterTransition(deps: ProcessDeps, applied: Applied, input: Input): Promise<void> {
  const { db, log } = deps;
  const call = applied.call;
  if (applied.step.result !== 'applied') return;
  if (isBrowserCall(call)) try {
    if (isTerminal(call.status)) {
      const diagnostic = call.call_outcome === 'connection_unconfirmed'
        ? { stage: 'setup', reason: call.disconnection_reason, ...(input.type === 'hangup' ? { mode: input.mode } : {}), at: new Date().toISOString() }
        : undefined;
      const revoked = await revokeUnusedTicket(db, call.id, call.disconnection_reason ?? 'call_ended', diagnostic);
      if (!revoked && diagnostic) await recordSetupDiagnostic(db, call.id, diagnostic);
    }
  } catch (err) {
    // The transition is committed; the reconciler and the ticket's own expiry cover a ticket left unrevoked.
    log.warn({ err, call_id: call.id }, 'browser call end: ticket not revoked');
  }
  await publishProgress(deps, call);
}
