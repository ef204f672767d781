import type { CarrierEvent } from '../../shared/carriers/carrier.ts';
import { pendingEffects } from '../../shared/calls/machine.ts';
import { CARRIER_EVENTS_QUEUE } from '../../shared/calls/queues.ts';
import { callRuntime } from '../../shared/calls/runtime.ts';
import type { Processor } from '../processor.ts';

/** An event that overtook an earlier one of its leg waits for it: first in place (WAIT_STEPS x WAIT_MS), then
 *  through BullMQ's retry backoff; after OUT_OF_ORDER_RETRIES attempts it is applied anyway. */
const WAIT_STEPS = 10;
const WAIT_MS = 20;
const OUT_OF_ORDER_RETRIES = 4;

// Carrier progress (ringing, answered, ended per leg) -> the call state machine, one transaction per event.
// Duplicate and late events change nothing; the follow-up carrier work (ring the destination after the staff
// phone answered, bridge, hang up the other leg, release channels) runs after the commit.
export const carrierEvents: Processor<CarrierEvent> = {
  queue: CARRIER_EVENTS_QUEUE,
  concurrency: 100,
  async process(job, deps) {
    const rt = callRuntime(deps, true);
    const force = job.attemptsMade >= OUT_OF_ORDER_RETRIES;
    let applied = await rt.transition(job.data.callId, { type: 'carrier', event: job.data, force });
    for (let i = 0; i < WAIT_STEPS && applied?.step.result === 'out_of_order'; i++) {
      await new Promise((r) => setTimeout(r, WAIT_MS));
      applied = await rt.transition(job.data.callId, { type: 'carrier', event: job.data, force });
    }
    if (!applied) return 'missing';
    if (applied.step.result === 'out_of_order') {
      throw new Error(`carrier event ${job.data.legId} ${job.data.kind} #${job.data.seq} arrived before its predecessor; retrying`);
    }
    if (job.attemptsMade > 0 && applied.step.result !== 'applied') await rt.run(applied.call, pendingEffects(applied.call));
    return applied.step.result;
  },
};
