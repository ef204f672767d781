// The ordering rule of numbered carrier events (CarrierEvent.seq): event n of a leg is applied only after event n-1
// was applied or is known lost. "Known lost" means its job provably no longer exists: it is missing from the queue
// (never published, removed by a hang-up, or removed after completing) or failed for good. A predecessor that is
// waiting, delayed, or active — including active under the lock of a process that died, until BullMQ's stalled
// check hands it back — is not lost, so its successor waits however long recovery takes.
import type { Queue } from 'bullmq';
import { sequencedEventJobId, type CarrierEvent } from '../carriers/carrier.ts';

const GONE_STATES = new Set(['completed', 'failed', 'unknown']);

/** Whether the event's predecessor may still be applied (its job exists and has not finished). */
export async function predecessorPending(events: Queue, ev: CarrierEvent): Promise<boolean> {
  if (ev.seq === undefined || ev.seq <= 1) return false;
  const job = await events.getJob(sequencedEventJobId(ev.legId, ev.seq - 1));
  if (!job) return false;
  return !GONE_STATES.has(await job.getState());
}

/** How long an event that waits for its predecessor sleeps before it looks again: short at first, then up to 2 s
 *  (a crashed process's locked jobs come back after the carrier-events worker's stalled interval). */
export function orderWaitMs(ev: CarrierEvent, now = Date.now()): number {
  const waited = now - Date.parse(ev.at);
  return Math.min(2000, Math.max(100, Math.round((Number.isFinite(waited) ? waited : 0) / 4)));
}
