import { submitPendingCnam } from '../../shared/cnam/registration.ts';
import { activateNumber } from '../../shared/numbers/lifecycle.ts';
import { PROVISIONING_QUEUE, type ProvisioningJob } from '../../shared/numbers/provisioning.ts';
import type { Processor } from '../processor.ts';

// The sandbox carrier's provisioning finished (the job's delay was the provisioning time): the number turns
// ACTIVE and number_purchased is written to the outbox in the same transaction. Idempotent.
export const numberProvisioning: Processor<ProvisioningJob> = {
  queue: PROVISIONING_QUEUE,
  concurrency: 10,
  async process(job, deps) {
    const row = await activateNumber(deps.db, job.data.phoneId);
    // Its caller name (from the organization's name) is registered once it is active; also on a retry after a crash.
    await submitPendingCnam(deps.db, deps.queues, deps.config, job.data.phoneId);
    return { activated: row !== null };
  },
};
