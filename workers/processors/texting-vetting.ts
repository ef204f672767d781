import { decideRegistration } from '../../shared/sms/registration.ts';
import { sandboxVerdict, VETTING_QUEUE, type TextingVettingJob } from '../../shared/sms/sandbox-registration.ts';
import type { Processor } from '../processor.ts';

// The sandbox registration provider finished vetting (the job's delay was the vetting time): the registration
// becomes approved or rejected, with TEXTING_REGISTRATION_STATUS_CHANGED in the same transaction. Idempotent.
export const textingVetting: Processor<TextingVettingJob> = {
  queue: VETTING_QUEUE,
  concurrency: 5,
  async process(job, deps) {
    const d = job.data;
    const row = await decideRegistration(deps.db, d.registrationId, d.submittedAt, sandboxVerdict(d.brand, d.campaign));
    return { decided: row?.status ?? null };
  },
};
