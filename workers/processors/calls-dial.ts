import { confirmAdmission } from '../../shared/calls/admission.ts';
import { DIAL_QUEUE, type DialJob } from '../../shared/calls/queues.ts';
import { repeatIfTakenBefore, type Processor } from '../processor.ts';

// One job per accepted call: QUEUED -> RINGING and originate the first leg (a bridge's connect_number, an AI
// call's destination). Origination locks the call row like a hangup does, so a setup cancellation either wins
// (the call is CANCELED and nothing is dialed) or finds the call originated and leaves it running. First the call
// must still be counted in Redis (shared/calls/admission.ts): one whose admission Redis lost, and which the limits
// have no room for again, ends without dialing.
export const callsDial: Processor<DialJob> = {
  queue: DIAL_QUEUE,
  concurrency: 50,
  // A crashed process's dial jobs come back within seconds, not after BullMQ's default 30 s lock.
  workerOptions: { lockDuration: 5000, stalledInterval: 5000 },
  async process(job, deps) {
    const rt = deps.calls;
    const refusal = await confirmAdmission(rt, job.data);
    const applied = await rt.transition(job.data.callId, refusal
      ? { type: 'admission_lost', code: refusal, at: new Date() }
      : { type: 'originate', at: new Date() });
    if (!applied) return 'missing';
    await repeatIfTakenBefore(job, rt, applied);
    return refusal ? `${applied.step.result}: ${refusal}` : applied.step.result;
  },
};
