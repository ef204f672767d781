import type { CarrierEvent } from '../../shared/carriers/carrier.ts';
import { pendingEffects } from '../../shared/calls/machine.ts';
import { CARRIER_EVENTS_QUEUE } from '../../shared/calls/queues.ts';
import { callRuntime } from '../../shared/calls/runtime.ts';
import type { Processor } from '../processor.ts';

// Carrier progress (ringing, answered, ended per leg) -> the call state machine, one transaction per event.
// Duplicate and late events change nothing; the follow-up carrier work (ring the destination after the staff
// phone answered, bridge, hang up the other leg, release channels) runs after the commit.
export const carrierEvents: Processor<CarrierEvent> = {
  queue: CARRIER_EVENTS_QUEUE,
  concurrency: 100,
  async process(job, deps) {
    const rt = callRuntime(deps, true);
    const applied = await rt.transition(job.data.callId, { type: 'carrier', event: job.data });
    if (!applied) return 'missing';
    if (job.attemptsMade > 0 && applied.step.result !== 'applied') await rt.run(applied.call, pendingEffects(applied.call));
    return applied.step.result;
  },
};
