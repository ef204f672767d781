import { DelayedError } from 'bullmq';
import type { CarrierEvent } from '../../shared/carriers/carrier.ts';
import { orderWaitMs, predecessorPending } from '../../shared/calls/event-order.ts';
import { pendingEffects } from '../../shared/calls/machine.ts';
import { CARRIER_EVENTS_QUEUE } from '../../shared/calls/queues.ts';
import type { Processor } from '../processor.ts';

/** An event that overtook an earlier one of its leg first waits in place a moment (WAIT_STEPS x WAIT_MS): the
 *  usual case is two events that fell due together and are being applied side by side. */
const WAIT_STEPS = 10;
const WAIT_MS = 20;

/** Test-only fault switch: `kill-before-apply:<kind>` SIGKILLs the workers right after taking (locking) an event
 *  job of that kind and before applying it, leaving the job locked by a dead process. */
const FAULT_KIND = /^kill-before-apply:(ringing|answered|ended)$/.exec(process.env.CARRIER_EVENTS_FAULT ?? '')?.[1];

// Carrier progress (ringing, answered, ended per leg) -> the call state machine, one transaction per event.
// Duplicate and late events change nothing; the follow-up carrier work (ring the destination after the staff
// phone answered, bridge, hang up the other leg, release channels) runs after the commit. Numbered events keep
// their order (shared/calls/event-order.ts): one whose predecessor is still pending goes back to the delayed set
// without using up an attempt, and looks again later — for as long as the predecessor's job exists.
export const carrierEvents: Processor<CarrierEvent> = {
  queue: CARRIER_EVENTS_QUEUE,
  concurrency: 100,
  // A crashed process's locked jobs come back within seconds; a job that stalls again (another crash) is retried,
  // never failed for stalling, since a failed event would count as lost and let its successor through.
  workerOptions: { lockDuration: 5000, stalledInterval: 5000, maxStalledCount: 1_000_000 },
  async process(job, deps, token) {
    const ev = job.data;
    if (FAULT_KIND && ev.kind === FAULT_KIND) process.kill(process.pid, 'SIGKILL');
    const rt = deps.calls;
    let applied = await rt.transition(ev.callId, { type: 'carrier', event: ev });
    for (let i = 0; i < WAIT_STEPS && applied?.step.result === 'out_of_order'; i++) {
      await new Promise((r) => setTimeout(r, WAIT_MS));
      applied = await rt.transition(ev.callId, { type: 'carrier', event: ev });
    }
    if (applied?.step.result === 'out_of_order') {
      if (await predecessorPending(rt.queues.carrierEvents, ev)) {
        await job.moveToDelayed(Date.now() + orderWaitMs(ev), token);
        throw new DelayedError();
      }
      // The predecessor is known lost: apply this one without it.
      applied = await rt.transition(ev.callId, { type: 'carrier', event: ev, predecessorLost: true });
    }
    if (!applied) return 'missing';
    // Taken before (a retry, or a process died holding it, possibly between commit and carrier command): the
    // transition may be done already; repeat what the call's state calls for (every effect is idempotent).
    const takenBefore = job.attemptsMade > 0 || job.attemptsStarted > 1;
    if (takenBefore && applied.step.result !== 'applied') await rt.run(applied.call, pendingEffects(applied.call));
    return applied.step.result;
  },
};
