import { NETWORKS, staleSandboxReviews } from '../../shared/caller-trust/brand/brand.ts';
import { sandboxBrandReviewProvider, SANDBOX_BRAND_REVIEW_MS, SANDBOX_ROLLOUT_STEP_MS, scheduleSandboxRollout } from '../../shared/caller-trust/brand/review.ts';
import { handToProvider, staleSandboxVetting } from '../../shared/caller-trust/enterprise/registrations.ts';
import { SANDBOX_VETTING_MS } from '../../shared/caller-trust/enterprise/vetting.ts';
import { periodic } from '../periodic.ts';
import type { Service } from '../processor.ts';

// The gateway hands a submission to the sandbox provider (a delayed job) right after the commit; if it died in
// between, the registration would stay PENDING_VETTING (or the DIR submitted) for ever. This sweep hands stale ones
// over again: the job ids are per round (and per network), so nothing is decided or rolled out twice.
export const callerTrustSweeper: Service = {
  name: 'caller-trust-sweeper',
  async start(deps) {
    const scale = deps.config.sandboxTimeScale;
    const every = Math.max(1000, Math.round(15_000 * scale));
    const vettingAge = Math.max(1000, Math.round(SANDBOX_VETTING_MS * scale * 5));
    const reviewAge = Math.max(1000, Math.round((SANDBOX_BRAND_REVIEW_MS + SANDBOX_ROLLOUT_STEP_MS * NETWORKS.length) * scale * 5));
    return periodic('caller-trust sweep', every, async () => {
      for (const r of await staleSandboxVetting(deps.db, vettingAge)) await handToProvider(deps, r);
      for (const b of await staleSandboxReviews(deps.db, reviewAge)) {
        const s = { organizationId: b.organization_id, round: b.review_round };
        if (b.status === 'submitted') await sandboxBrandReviewProvider(deps.queues, deps.config).submit(s);
        else await scheduleSandboxRollout(deps.queues, deps.config, s, NETWORKS.filter((n) => b.networks[n]?.status !== 'live'));
      }
    }, { log: deps.log });
  },
};
