import { approveBrand, markNetworkLive, NETWORKS } from '../../shared/caller-trust/brand/brand.ts';
import { BRAND_REVIEW_QUEUE, scheduleSandboxRollout, type BrandReviewJob } from '../../shared/caller-trust/brand/review.ts';
import type { Processor } from '../processor.ts';

// The sandbox branded-calling provider: a review job approves the submitted DIR of its round and schedules the
// per-network rollout; each rollout job turns one network live and schedules the next. Jobs of an older round change nothing.
export const brandReview: Processor<BrandReviewJob> = {
  queue: BRAND_REVIEW_QUEUE,
  concurrency: 5,
  async process(job, deps) {
    const d = job.data;
    if (d.kind === 'review') {
      const row = await approveBrand(deps.db, d.organizationId, d.round);
      if (row) await scheduleSandboxRollout(deps.queues, deps.config, { organizationId: d.organizationId, round: d.round }, NETWORKS);
      return { approved: row !== null };
    }
    const live = await markNetworkLive(deps.db, d.organizationId, d.round, d.network);
    if (live) {
      await scheduleSandboxRollout(deps.queues, deps.config, { organizationId: d.organizationId, round: d.round },
        NETWORKS.slice(NETWORKS.indexOf(d.network) + 1));
    }
    return { live };
  },
};
