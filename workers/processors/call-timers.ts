import { pendingEffects } from '../../shared/calls/machine.ts';
import { TIMERS_QUEUE, type TimerJob } from '../../shared/calls/queues.ts';
import { callRuntime } from '../../shared/calls/runtime.ts';
import type { Processor } from '../processor.ts';

// The call-length limit: a delayed job per answered call (it survives restarts); ends the call if it is still up.
export const callTimers: Processor<TimerJob> = {
  queue: TIMERS_QUEUE,
  concurrency: 50,
  async process(job, deps) {
    const rt = callRuntime(deps, true);
    const applied = await rt.transition(job.data.callId, { type: 'limit', at: new Date(Math.min(job.data.at, Date.now())) });
    if (!applied) return 'missing';
    if (job.attemptsMade > 0 && applied.step.result !== 'applied') await rt.run(applied.call, pendingEffects(applied.call));
    return applied.step.result;
  },
};
