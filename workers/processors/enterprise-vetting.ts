import { decideVetting } from '../../shared/caller-trust/enterprise/registrations.ts';
import { ENTERPRISE_VETTING_QUEUE, sandboxVettingDecision, type EnterpriseVettingJob } from '../../shared/caller-trust/enterprise/vetting.ts';
import type { Processor } from '../processor.ts';

// The sandbox vetting provider's answer (the job's delay was the vetting time): the registration of that round is
// APPROVED or REJECTED by the sandbox's EIN rule. A round decided meanwhile (an operator, a resubmission) is left
// alone, so a late or repeated job changes nothing.
export const enterpriseVetting: Processor<EnterpriseVettingJob> = {
  queue: ENTERPRISE_VETTING_QUEUE,
  concurrency: 5,
  async process(job, deps) {
    const reg = await deps.db.oneOrNone<{ ein: string }>('SELECT ein FROM enterprise_registrations WHERE id = $1', [job.data.registrationId]);
    if (!reg) return { decided: false };
    const row = await decideVetting(deps.db, job.data.registrationId, job.data.round, sandboxVettingDecision(reg.ein));
    return { decided: row !== null, status: row?.status };
  },
};
