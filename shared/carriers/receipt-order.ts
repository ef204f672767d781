// Ordering for carriers that do not number their events themselves (LiveKit webhooks carry no per-participant
// sequence): the gateway numbers a leg's answer and end in the order it receives them, so the workers apply them
// in that order whatever order their jobs are taken in. Ringing stays unnumbered (a late ringing is moot).
import type { Redis } from 'ioredis';
import type { Keyer } from '../redis.ts';
import { defineScript, script } from '../redis-scripts.ts';
import type { CarrierEvent } from './carrier.ts';

/** Counters outlive any call (the longest is 3 hours). */
const KEEP_SECONDS = 86_400;

export async function sequenceAtReceipt(redis: Redis, key: Keyer, ev: CarrierEvent, deliveryId: string): Promise<CarrierEvent> {
  if (ev.kind === 'ringing' || ev.seq !== undefined) return ev;
  defineScript(redis, 'olCarrierReceiptSeq', new URL('./receipt-seq.lua', import.meta.url), 2);
  const n = await script(redis, 'olCarrierReceiptSeq')(key('carrier', 'seq', ev.legId), key('carrier', 'delivery', deliveryId), KEEP_SECONDS);
  return { ...ev, seq: Number(n) };
}
