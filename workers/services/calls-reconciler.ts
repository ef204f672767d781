import { reconcileOnce } from '../../shared/calls/reconcile.ts';
import { periodic } from '../periodic.ts';
import type { Service } from '../processor.ts';

// Runs the calls reconciler (shared/calls/reconcile.ts) every RECONCILE_MS: frees channels of calls that ended
// while a process was down, re-enqueues lost dial jobs, re-issues carrier work of stuck calls, ends overdue ones.
export const RECONCILE_MS = 1000;
/** Spend reservations are checked against PostgreSQL every this many passes. */
const SPEND_HOLDS_EVERY = 5;

export const callsReconciler: Service = {
  name: 'calls-reconciler',
  async start(deps) {
    const log = deps.log.child({ service: 'calls-reconciler' });
    const rt = deps.calls;
    const nudged = new Map<string, number>();
    let pass = 0;
    return periodic('calls reconcile pass', RECONCILE_MS, async () => {
      const r = await reconcileOnce(rt, nudged, Date.now(), { spendHolds: pass++ % SPEND_HOLDS_EVERY === 0 });
      if (r.released || r.recounted || r.requeued || r.forced || r.spend_settled || r.spend_recounted || r.spend_seeded) log.info(r, 'calls reconciled');
    }, { log });
  },
};
