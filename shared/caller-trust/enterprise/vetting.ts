import type { Config } from '../../config.ts';
import type { QueueRegistry } from '../../queues/registry.ts';
import { delayedJob } from '../queues.ts';

// Vetting of an enterprise registration (EIN, legal name and signed LOA) is done by a provider behind this
// interface. The provider is handed a submission after the registration moved to PENDING_VETTING; its decision comes
// back through decideVetting (registrations.ts), which only applies to the round it was made for. An operator can
// decide by hand with the admin CLI whatever the provider.

export interface VettingSubmission { registrationId: string; organizationId: string; round: number; ein: string; legalName: string }
export interface VettingDecision { status: 'APPROVED' | 'REJECTED'; reasons: string[] }

export interface VettingProvider {
  readonly name: string;
  submit(s: VettingSubmission): Promise<void>;
}

export const ENTERPRISE_VETTING_QUEUE = 'enterprise-vetting';
/** The sandbox's vetting time before SANDBOX_TIME_SCALE. */
export const SANDBOX_VETTING_MS = 5000;

export interface EnterpriseVettingJob { registrationId: string; round: number }

/** The sandbox's rule: an EIN ending in 9 is rejected (with the reasons a real vetting answer carries), any other
 *  EIN is approved. */
export function sandboxVettingDecision(ein: string): VettingDecision {
  if (ein.endsWith('9')) {
    return {
      status: 'REJECTED',
      reasons: [
        'ein_mismatch: the EIN does not match IRS records for the legal business name',
        'loa_unverified: the LOA signer could not be confirmed as authorized for the business',
      ],
    };
  }
  return { status: 'APPROVED', reasons: [] };
}

/** The sandbox provider: a delayed BullMQ job (SANDBOX_VETTING_MS x SANDBOX_TIME_SCALE) that the workers'
 *  enterprise-vetting processor decides with sandboxVettingDecision. One job per registration and round. */
export function sandboxVettingProvider(queues: QueueRegistry, config: Pick<Config, 'sandboxTimeScale'>): VettingProvider {
  return {
    name: 'sandbox',
    async submit(s) {
      await queues.get<EnterpriseVettingJob>(ENTERPRISE_VETTING_QUEUE).add('vet',
        { registrationId: s.registrationId, round: s.round },
        delayedJob(`enterprise-${s.registrationId}-r${s.round}`, SANDBOX_VETTING_MS * config.sandboxTimeScale));
    },
  };
}

/** The provider registrations are submitted to: the sandbox (no production vetting adapter is configured yet). */
export const vettingProvider = (queues: QueueRegistry, config: Pick<Config, 'sandboxTimeScale'>): VettingProvider =>
  sandboxVettingProvider(queues, config);
