// The sandbox registration provider (the default): vetting takes SANDBOX_VETTING_MS (times SANDBOX_TIME_SCALE)
// as a delayed BullMQ job, which survives restarts; the workers' texting-vetting processor then applies the
// verdict. The verdict is deterministic and follows what real vetting refuses:
//   - a brand whose EIN starts with 00 (the sandbox cannot match it to the legal name): rejected,
//     reason brand_identity_unverified
//   - a campaign none of whose sample messages tells how to opt out (the word STOP): rejected,
//     reason campaign_opt_out_language_missing
//   - otherwise approved.
import type { Queue } from 'bullmq';
import type { Config } from '../config.ts';
import type { QueueRegistry } from '../queues/registry.ts';
import type { Campaign, Brand, RegistrationRow, TextingRegistrationProvider, Verdict } from './registration.ts';

export const VETTING_QUEUE = 'texting-vetting';
export const SANDBOX_VETTING_MS = 3000;

export interface TextingVettingJob { registrationId: string; submittedAt: string; brand: Brand; campaign: Campaign }

export function sandboxVerdict(brand: Brand, campaign: Campaign): Verdict {
  if (brand.ein.replace(/\D/g, '').startsWith('00')) return { status: 'rejected', reason: 'brand_identity_unverified' };
  if (!campaign.sample_messages.some((m) => /\bstop\b/i.test(m))) return { status: 'rejected', reason: 'campaign_opt_out_language_missing' };
  return { status: 'approved' };
}

export const vettingQueue = (queues: QueueRegistry): Queue<TextingVettingJob> => queues.get<TextingVettingJob>(VETTING_QUEUE);

export class SandboxRegistrationProvider implements TextingRegistrationProvider {
  readonly name = 'sandbox';
  constructor(private readonly queues: QueueRegistry, private readonly config: Pick<Config, 'sandboxTimeScale'>) {}

  async submit(reg: RegistrationRow): Promise<{ providerRef: string }> {
    const submittedAt = reg.submitted_at.toISOString();
    const providerRef = `sbx-reg-${reg.id}-${reg.submitted_at.getTime()}`;
    await vettingQueue(this.queues).add('vet',
      { registrationId: reg.id, submittedAt, brand: reg.brand, campaign: reg.campaign },
      { jobId: providerRef, delay: Math.round(SANDBOX_VETTING_MS * this.config.sandboxTimeScale), attempts: 8,
        backoff: { type: 'exponential', delay: 500 }, removeOnComplete: true, removeOnFail: { age: 7 * 86400 } });
    return { providerRef };
  }
}

/** The configured registration provider (only the sandbox exists so far). */
export const registrationProvider = (queues: QueueRegistry, config: Config): TextingRegistrationProvider =>
  new SandboxRegistrationProvider(queues, config);
