import { legId } from '../../shared/carriers/carrier.ts';
import { LATE_TIMER_MAX_DEFERRALS, LATE_TIMER_MS, TIMERS_QUEUE, type TimerJob } from '../../shared/calls/queues.ts';
import { repeatIfTakenBefore, type Processor } from '../processor.ts';

const LEG_ROLES = ['connect', 'destination'] as const;

// The call-length limit: a delayed job per answered call (it survives restarts); ends the call if it is still up.
// A timer that runs late (the workers were down when it was due) first gives the carrier events that were due
// before it a moment to be applied, so a call that really ended before its limit is not recorded as cut off; it
// keeps deferring while the carrier reports such events still queued.
export const callTimers: Processor<TimerJob> = {
  queue: TIMERS_QUEUE,
  concurrency: 50,
  async process(job, deps) {
    const rt = deps.calls;
    if (!job.data.deferred && Date.now() - job.data.at > LATE_TIMER_MS) {
      await rt.queues.deferLimit(job.data.callId, job.data.at);
      return 'deferred';
    }
    const deferrals = job.data.deferrals ?? 0;
    if (job.data.deferred && deferrals < LATE_TIMER_MAX_DEFERRALS
      && await rt.carrier?.hasPendingEventsBefore?.(LEG_ROLES.map((r) => legId(job.data.callId, r)), job.data.at)) {
      await rt.queues.deferLimit(job.data.callId, job.data.at, deferrals + 1);
      return 'deferred again';
    }
    const applied = await rt.transition(job.data.callId, { type: 'limit', at: new Date(Math.min(job.data.at, Date.now())) });
    if (!applied) return 'missing';
    await repeatIfTakenBefore(job, rt, applied);
    return applied.step.result;
  },
};
