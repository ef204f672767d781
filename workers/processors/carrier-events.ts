import { DelayedError } from 'bullmq';
import type { CarrierEvent } from '../../shared/carriers/carrier.ts';
import { orderWaitMs, predecessorPending } from '../../shared/calls/event-order.ts';
import { CARRIER_EVENTS_QUEUE } from '../../shared/calls/queues.ts';
import { repeatIfTakenBefore, type Processor } from '../processor.ts';

/** An event that overtook an earlier one of its leg first waits in place a moment (WAIT_STEPS x WAIT_MS): the
 *  usual case is two events that fell due together and are being applied side by side. */
const WAIT_STEPS = 10;
const WAIT_MS = 20;


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
    // Crash tests only (CARRIER_EVENTS_FAULT): die right after taking (locking) an event of this kind.
    if (deps.config.faults.carrierEventsKillBefore === ev.kind) process.kill(process.pid, 'SIGKILL');
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
    await repeatIfTakenBefore(job, rt, applied);
    return applied.step.result;
  },
};
