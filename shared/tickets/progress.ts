// What happens after a committed transition of a browser call: its progress is published on Redis (every
// signaling process subscribes; the one holding the call's socket forwards it), and at the end an unused ticket
// is revoked with a setup diagnostic. One PUBLISH per transition, and only for browser calls.
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
  status: string;
  call_outcome: string | null;
  failure_code: string | null;
  failure_category: string | null;
  disconnection_reason: string | null;
  duration_seconds: number | null;
}

export const isBrowserCall = (c: Pick<CallRow, 'type'>) => BROWSER_CALL_TYPES.has(c.type);

export const progressOf = (c: CallRow): CallProgress => ({
  call_id: c.id, organization_id: c.organization_id, status: c.status, call_outcome: c.call_outcome,
  failure_code: c.failure_code, failure_category: c.failure_category, disconnection_reason: c.disconnection_reason,
  duration_seconds: c.duration_seconds,
});

/** The post-commit hook of browser calls (CallRuntime runs it after each applied transition). Never throws. */
export async function afterBrowserTransition(deps: ProcessDeps, applied: Applied, input: Input): Promise<void> {
  const { db, redis, key, log } = deps;
  const call = applied.call;
  if (!isBrowserCall(call) || applied.step.result !== 'applied') return;
  try {
    if (isTerminal(call.status)) {
      const diagnostic = call.call_outcome === 'connection_unconfirmed'
        ? { stage: 'setup', reason: call.disconnection_reason, ...(input.type === 'hangup' ? { mode: input.mode } : {}), at: new Date().toISOString() }
        : undefined;
      const revoked = await revokeUnusedTicket(db, call.id, call.disconnection_reason ?? 'call_ended', diagnostic);
      if (!revoked && diagnostic) await recordSetupDiagnostic(db, call.id, diagnostic);
    }
    await redis.publish(progressChannel(key), JSON.stringify(progressOf(call)));
  } catch (err) {
    // The transition is committed; signaling also reads the call's state when a socket attaches.
    log.warn({ err, call_id: call.id }, 'browser call progress not published');
  }
}
