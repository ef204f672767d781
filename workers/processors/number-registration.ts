import { DelayedError, type Job } from 'bullmq';
import { numberRegistrationProvider } from '../../shared/number-registration/provider.ts';
import { decideRegistration, NUMBER_REGISTRATION_QUEUE, type NumberRegistrationJob } from '../../shared/number-registration/registration.ts';
import type { Processor } from '../processor.ts';

// Number registration with the call-analytics providers (shared/number-registration): a 'register' job asks the
// provider about one submission (the sandbox job's delay is the registry's processing time) and records its verdict,
// registered or rejected, with number_registration.status_changed; a provider that has not decided is asked again
// later; a job queued before its submission committed is retried. A 'withdraw' job tells the provider a released
// number's registration is withdrawn.
export const numberRegistration: Processor<NumberRegistrationJob> = {
  queue: NUMBER_REGISTRATION_QUEUE,
  concurrency: 10,
  async process(job: Job<NumberRegistrationJob>, deps, token) {
    const provider = numberRegistrationProvider(deps.config.numberRegistration);
    const d = job.data;
    if (d.kind === 'withdraw') {
      await provider.withdraw(d.phoneNumber);
      return { outcome: 'withdrawn' };
    }
    const outcome = await decideRegistration(deps.db, provider, d);
    if (outcome === 'not_committed_yet') throw new Error('the registration has not committed yet; retried');
    if (typeof outcome === 'object') {
      await job.moveToDelayed(Date.now() + outcome.retryInMs, token);
      throw new DelayedError();
    }
    return { outcome };
  },
};
