import { DelayedError, type Job } from 'bullmq';
import { cnamProvider } from '../../shared/cnam/configured.ts';
import { CNAM_QUEUE, registerCnam, type CnamJob } from '../../shared/cnam/registration.ts';
import type { Processor } from '../processor.ts';

// The CNAM provider's answer on a display name (the sandbox job's delay is the provider's processing time): the
// number's cnam_status turns registered or rejected. A job queued before its change committed is retried; a
// provider that has not decided yet is asked again later.
export const cnamRegistration: Processor<CnamJob> = {
  queue: CNAM_QUEUE,
  concurrency: 10,
  async process(job: Job<CnamJob>, deps, token) {
    const outcome = await registerCnam(deps.db, cnamProvider(deps.config.cnam), job.data);
    if (outcome === 'not_committed_yet') throw new Error('the CNAM change has not committed yet; retried');
    if (typeof outcome === 'object') {
      await job.moveToDelayed(Date.now() + outcome.retryInMs, token);
      throw new DelayedError();
    }
    return { outcome };
  },
};
