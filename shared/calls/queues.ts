// The queues of call progression. Every queue uses config.redisPrefix, so deployments (and test files) sharing
// a Redis stay apart.
//
//   calls-dial      one job per accepted call (job id = call id): originate the first leg
//   carrier-events  carrier progress (sandbox timers are delayed jobs here): feed the state machine
//   call-timers     the call-length limit of each answered call (job id = limit-<call id>), a delayed job
//   call-commands   carrier work asked for by processes without a carrier (the gateway's hangup)
import type { Queue } from 'bullmq';
import { TurnBatcher } from '../batch.ts';
import { CARRIER_EVENTS_QUEUE } from '../carriers/carrier.ts';
import { DURABLE_JOB_OPTIONS } from '../jobs.ts';
import type { QueueRegistry } from '../queues/registry.ts';

export const DIAL_QUEUE = 'calls-dial';
export const TIMERS_QUEUE = 'call-timers';
export const COMMANDS_QUEUE = 'call-commands';
export { CARRIER_EVENTS_QUEUE };

/** organizationId and spendDay (null: the call reserves no spend) let the dial check in one Redis round trip that
 *  the call is still counted (shared/calls/admission.ts); without them it reads the call first. */
export interface DialJob { callId: string; organizationId?: string; spendDay?: string | null }
export interface TimerJob { callId: string; at: number; deferred?: boolean; deferrals?: number }

/** A limit timer that runs this late (the workers were down) first yields to carrier events that were due
 *  before it: it runs again LATE_TIMER_DEFER_MS later, so a hang-up that happened before the limit wins. While the
 *  carrier still reports such events pending it defers again, at most LATE_TIMER_MAX_DEFERRALS times. */
export const LATE_TIMER_MS = 250;
export const LATE_TIMER_DEFER_MS = 2000;
export const LATE_TIMER_MAX_DEFERRALS = 30;
export interface CommandJob { callId: string }

export class CallQueues {
  readonly dial: Queue;
  readonly timers: Queue;
  readonly commands: Queue;
  readonly carrierEvents: Queue;

  /** The queues come from the process's registry, which closes them when the process stops. */
  constructor(queues: QueueRegistry) {
    this.dial = queues.get(DIAL_QUEUE);
    this.timers = queues.get(TIMERS_QUEUE);
    this.commands = queues.get(COMMANDS_QUEUE);
    this.carrierEvents = queues.get(CARRIER_EVENTS_QUEUE);
  }

  /** Idempotent: one dial job per call. The dial jobs of one event-loop turn are added together (addBulk: one
   *  Redis round trip). */
  enqueueDial(callId: string, counted?: { organizationId: string; spendDay: string | null }): Promise<void> {
    return this.dials.add({ callId, ...counted });
  }

  private readonly dials = new TurnBatcher<DialJob, void>(async (jobs) => {
    await this.dial.addBulk(jobs.map((data) => ({ name: 'dial', data, opts: { ...DURABLE_JOB_OPTIONS, jobId: data.callId } })));
    return [];
  });

  /** Idempotent: one limit timer per call. A deadline already past (the answer itself was applied late) yields
   *  to the carrier events that are still due, as a late timer does. */
  scheduleLimit(callId: string, at: number, now = Date.now()) {
    if (now - at > LATE_TIMER_MS) return this.deferLimit(callId, at);
    return this.timers.add('limit', { callId, at } satisfies TimerJob,
      { ...DURABLE_JOB_OPTIONS, jobId: `limit-${callId}`, delay: Math.max(0, Math.round(at - now)) });
  }

  deferLimit(callId: string, at: number, deferrals = 1) {
    // A new id per deferral: the job that defers is still running, so its own id is taken.
    return this.timers.add('limit', { callId, at, deferred: true, deferrals } satisfies TimerJob,
      { ...DURABLE_JOB_OPTIONS, jobId: deferrals === 1 ? `limit-${callId}-late` : `limit-${callId}-late-${deferrals}`, delay: LATE_TIMER_DEFER_MS });
  }

  /** Drops the limit timer of a call that ended first (a timer that is running right now just finds it ended). */
  async cancelLimit(callId: string): Promise<void> {
    for (const id of [`limit-${callId}`, `limit-${callId}-late`]) {
      try {
        await this.timers.remove(id);
      } catch { /* locked: it is running */ }
    }
  }

  /** Asks the workers to carry out what the call's state calls for (hang up its legs after an API hangup). */
  requestCarrierWork(callId: string) {
    return this.commands.add('settle', { callId } satisfies CommandJob, { ...DURABLE_JOB_OPTIONS, removeOnComplete: true });
  }
}
