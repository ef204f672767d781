import type { Config } from '../../config.ts';
import type { QueueRegistry } from '../../queues/registry.ts';
import { delayedJob } from '../queues.ts';

// Review of a submitted Display Identity Record by a branded-calling provider, behind this interface. The sandbox
// approves after SANDBOX_BRAND_REVIEW_MS; then each network goes live SANDBOX_ROLLOUT_STEP_MS after the previous
// one (ATT, then TMOBILE, then VERIZON); every delay is multiplied by SANDBOX_TIME_SCALE.

export interface BrandSubmission { organizationId: string; round: number }
export interface BrandReviewProvider { readonly name: string; submit(s: BrandSubmission): Promise<void> }

export const BRAND_REVIEW_QUEUE = 'brand-review';
export const SANDBOX_BRAND_REVIEW_MS = 5000;
export const SANDBOX_ROLLOUT_STEP_MS = 2000;

export type BrandReviewJob =
  | { kind: 'review'; organizationId: string; round: number }
  | { kind: 'rollout'; organizationId: string; round: number; network: 'ATT' | 'TMOBILE' | 'VERIZON' };

type Cfg = Pick<Config, 'sandboxTimeScale'>;
const queue = (queues: QueueRegistry) => queues.get<BrandReviewJob>(BRAND_REVIEW_QUEUE);

export function sandboxBrandReviewProvider(queues: QueueRegistry, config: Cfg): BrandReviewProvider {
  return {
    name: 'sandbox',
    async submit(s) {
      await queue(queues).add('review', { kind: 'review', ...s },
        delayedJob(`brand-${s.organizationId}-r${s.round}`, SANDBOX_BRAND_REVIEW_MS * config.sandboxTimeScale));
    },
  };
}

/** After the sandbox approved, networks go live one after another: this schedules the first of `networks`; its job,
 *  once that network is live, schedules the next (workers/processors/brand-review.ts), so the order holds however
 *  late a job runs. */
export async function scheduleSandboxRollout(queues: QueueRegistry, config: Cfg, s: BrandSubmission, networks: readonly ('ATT' | 'TMOBILE' | 'VERIZON')[]): Promise<void> {
  const [network] = networks;
  if (!network) return;
  await queue(queues).add('rollout', { kind: 'rollout', ...s, network },
    delayedJob(`brand-${s.organizationId}-r${s.round}-${network}`, SANDBOX_ROLLOUT_STEP_MS * config.sandboxTimeScale));
}

/** The provider DIRs are submitted to: the sandbox (no production branded-calling adapter is configured yet). */
export const brandReviewProvider = (queues: QueueRegistry, config: Cfg): BrandReviewProvider => sandboxBrandReviewProvider(queues, config);
