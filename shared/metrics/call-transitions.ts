// Every call transition, where it is applied (CallRuntime.transition in the gateway, workers and signaling): one
// counter increment and one info log line. Inputs that changed nothing (a duplicate or late carrier event, a second
// hangup) are neither counted nor logged.
import type { Logger } from '../log.ts';
import type { Input } from '../calls/machine.ts';
import type { Applied } from '../calls/store.ts';
import { processCounter } from './process-metrics.ts';

export const callTransitions = processCounter('openline_call_transitions_total',
  'Call transitions applied by this process, by call status before and after (equal when only a leg moved).', ['from', 'to']);

/** What made the call move, in a few words: the input, and for carrier events the leg, what it did and why. */
export function transitionCause(input: Input): string {
  switch (input.type) {
    case 'carrier': {
      const e = input.event;
      return `carrier:${e.role}:${e.kind}${e.reason ? `:${e.reason}` : ''}`;
    }
    case 'hangup': return `hangup:${input.mode}`;
    case 'abandon': return `abandon:${input.reason}`;
    default: return input.type;
  }
}

/** The CallRuntime hook (runs after the commit) that counts and logs each applied transition. */
export function reportCallTransitions(log: Logger) {
  const out = log.child({ event: 'call_transition' });
  return async (applied: Applied, input: Input): Promise<void> => {
    if (applied.step.result !== 'applied') return;
    const { call, from } = applied;
    callTransitions.inc({ from, to: call.status });
    out.info({ call_id: call.id, organization_id: call.organization_id, from, to: call.status, cause: transitionCause(input),
      ...(call.disconnection_reason && call.status !== from ? { disconnection_reason: call.disconnection_reason } : {}) },
    `call ${from} -> ${call.status}`);
  };
}
