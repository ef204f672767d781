import { rearmCalls } from '../../shared/calls/rearm.ts';
import { redisStateOf } from '../../shared/redis-state.ts';
import { DELIVERY_QUEUE } from '../../shared/webhooks/delivery-jobs.ts';
import { rearmDeliveries } from '../../shared/webhooks/rearm.ts';
import { periodic } from '../periodic.ts';
import type { Service } from '../processor.ts';

// Notices that Redis lost its state (shared/redis-state.ts: `repaired` is gone) and rebuilds from PostgreSQL, one
// workers process at a time (a lock): a new epoch first (relay batches in flight will not commit), the channel
// accounts (admission waits for them), then the work Redis held: calls' dial jobs, timers and carrier progress
// (shared/calls/rearm.ts) and the webhook deliveries still owed (shared/webhooks/rearm.ts). Spend days are seeded
// by admission and by the calls reconciler. Checked every CHECK_MS and as soon as the connection is ready again.
// On a new deployment's first start the same pass runs and finds nothing to re-arm.
const CHECK_MS = 1000;

export const redisRecovery: Service = {
  name: 'redis-recovery',
  async start(deps) {
    const log = deps.log.child({ service: 'redis-recovery' });
    const state = redisStateOf(deps);
    const deliveries = deps.queues.get(DELIVERY_QUEUE);
    const check = async () => {
      if (await state.repaired()) return;
      const lock = await state.lock();
      if (!lock) return;
      try {
        const started = Date.now();
        await state.begin();
        await deps.calls.channels.rebuild();
        const calls = await rearmCalls(deps.calls);
        const webhooks = await rearmDeliveries(deps.db, (jobs) => deliveries.addBulk(jobs), deps.config.webhookRetryScale,
          { onPage: () => state.extend(lock) });
        await state.finish();
        const anything = calls.dials + calls.legs + calls.limits + calls.tickets + calls.hangups + webhooks.jobs > 0;
        log[anything ? 'warn' : 'info']({ calls, deliveries: webhooks.jobs, ms: Date.now() - started },
          'Redis had no state of ours: rebuilt the channel accounts and re-armed from PostgreSQL');
      } finally {
        await state.unlock(lock).catch(() => undefined);
      }
    };
    const loop = periodic('redis state check', CHECK_MS, check, { log });
    // After a reconnect, check at once rather than at the next tick (a check already running makes this one wait).
    let kick: Promise<void> = Promise.resolve();
    const onReady = () => { kick = kick.then(check).catch((err) => log.warn({ err: (err as Error).message }, 'redis state check failed')); };
    deps.redis.on('ready', onReady);
    return {
      stop: async () => {
        deps.redis.off('ready', onReady);
        await loop.stop();
        await kick;
      },
    };
  },
};
