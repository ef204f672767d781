import { pendingEffects } from '../../shared/calls/machine.ts';
import { LATE_TIMER_MS, TIMERS_QUEUE, type TimerJob } from '../../shared/calls/queues.ts';
import { callRuntime } from '../../shared/calls/runtime.ts';
import type { Processor } from '../processor.ts';

// The call-length limit: a delayed job per answered call (it survives restarts); ends the call if it is still up.
// A timer that runs late (the workers were down when it was due) first gives the carrier events that were due
// before it a moment to be applied, so a call that really ended before its limit is not recorded as cut off.
export const callTimers: Processor<TimerJob> = {
  queue: TIMERS_QUEUE,
  concurrency: 50,
  async process(job, deps) {
    const rt = callRuntime(deps, true);
    if (!job.data.deferred && Date.now() - job.data.at > LATE_TIMER_MS) {
      await rt.queues.deferLimit(job.data.callId, job.data.at);
      return 'deferred';
    }
    const applied = await rt.transition(job.data.callId, { type: 'limit', at: new Date(Math.min(job.data.at, Date.now())) });
    if (!applied) return 'missing';
    if (job.attemptsMade > 0 && applied.step.result !== 'applied') await rt.run(applied.call, pendingEffects(applied.call));
    return applied.step.result;
  },
};
