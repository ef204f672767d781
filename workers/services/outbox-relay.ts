import { PgListener } from '../../shared/db-listen.ts';
import { EVENTS_CHANNEL } from '../../shared/events/outbox.ts';
import { DELIVERY_QUEUE } from '../../shared/webhooks/delivery-jobs.ts';
import { redisStateOf } from '../../shared/redis-state.ts';
import { RedisStateChanged, relayBatch } from '../../shared/webhooks/relay.ts';
import type { Service } from '../processor.ts';

// The outbox relay: committed `events` rows -> one webhook-delivery job per matching subscription. Woken by
// NOTIFY ol_events (sent after each commit by wakeRelay) and by a poll every POLL_MS, so a lost notification or a
// dropped LISTEN connection only delays. Batches run back to back while the backlog lasts. Any number of relays
// (replicas) may run: rows are claimed with FOR UPDATE SKIP LOCKED. See shared/webhooks/relay.ts for why a crash
// between enqueue and commit neither loses nor duplicates a delivery, and why a Redis that loses its state meanwhile
// loses none either (the relay waits while the workers re-arm: workers/services/redis-recovery.ts).

export const RELAY_BATCH = 1000;
const POLL_MS = 1000;
const STALLED = 'job stalled more than allowable limit';
const RESCUE_MS = 30_000;

export const outboxRelay: Service = {
  name: 'outbox-relay',
  async start(deps) {
    const log = deps.log.child({ service: 'outbox-relay' });
    const queue = deps.queues.get(DELIVERY_QUEUE);
    const state = redisStateOf(deps);
    let stopped = false;
    let notified = false;
    let wake: (() => void) | null = null;
    const poke = () => { notified = true; wake?.(); };

    const listener = new PgListener(deps.db, EVENTS_CHANNEL, {
      onNotify: poke,
      onUp: poke, // anything committed while not listening
      onDown: (err) => log.warn({ err: err.message }, 'LISTEN connection lost; polling until it is back'),
    }, POLL_MS);
    await listener.start();

    const loop = (async () => {
      while (!stopped) {
        notified = false;
        let full = false;
        try {
          const r = await relayBatch(deps.db, async (jobs) => {
            // A large fan-out is added in slices, so one MULTI never carries an unbounded number of jobs.
            for (let i = 0; i < jobs.length; i += RELAY_BATCH) await queue.addBulk(jobs.slice(i, i + RELAY_BATCH));
            if (deps.config.faults.outboxRelay === 'kill-after-enqueue') process.kill(process.pid, 'SIGKILL');
          }, RELAY_BATCH, deps.config.webhookRetryScale, () => state.epoch());
          if ('waiting' in r) {
            // Redis lost its state: nothing is relayed until the workers have re-armed (a second or so).
            await new Promise((resolve) => setTimeout(resolve, 100));
            continue;
          }
          full = r.events === RELAY_BATCH;
          if (r.events) log.debug({ events: r.events, jobs: r.jobs }, 'relayed');
        } catch (err) {
          if (err instanceof RedisStateChanged) log.warn(err.message);
          else log.error({ err }, 'relay batch failed; retrying');
          await new Promise((r) => setTimeout(r, POLL_MS));
          continue;
        }
        if (full || notified || stopped) continue;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, POLL_MS);
          wake = () => { clearTimeout(t); resolve(); };
        });
        wake = null;
      }
    })();

    // BullMQ fails a job whose worker died under it a second time ("stalled more than allowable limit"; the
    // workers process uses the default maxStalledCount of 1). Such a delivery was never answered for: put it back.
    const rescue = setInterval(() => {
      void (async () => {
        for (const job of await queue.getFailed(0, 199)) {
          if (job.failedReason === STALLED) await job.retry('failed').catch(() => undefined);
        }
      })().catch((err) => log.warn({ err: (err as Error).message }, 'stalled-delivery rescue failed'));
    }, RESCUE_MS);

    return {
      stop: async () => {
        stopped = true;
        clearInterval(rescue);
        wake?.();
        await loop;
        await listener.stop();
      },
    };
  },
};
