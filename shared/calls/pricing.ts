// What a call costs, in one place: billing at the end (machine.ts), the worst case reserved under the daily spend
// cap at admission (place.ts) and the instant a call's reservation runs out (the money-bounded limit) all use
// legCents/legsCents below, so a call can never be billed more than it reserved.
//
// Rule: every answered leg pays per started minute of its own connected time (carrier seconds, rounded);
// a bridge pays for both legs. Its connect leg is answered first and also pays while the destination rings.
import type { CallType, Legs } from './model.ts';

/** Carrier seconds between two instants (the sandbox runs scaled). */
export const carrierSeconds = (from: Date, to: Date, scale: number) =>
  Math.max(0, Math.round((to.getTime() - from.getTime()) / 1000 / scale));

/** One leg: every started minute of its connected time. */
export const legCents = (seconds: number, pricePerMinute: number) => Math.ceil(seconds / 60) * pricePerMinute;

/** Legs billed by a call of this type. */
// A browser call pays for its carrier leg only: the browser's WebRTC leg has no answered_at and costs nothing.
export const BILLED_LEGS: Record<CallType, number> = { bridge: 2, ai: 1, webrtc: 1, room: 1, inbound: 1 };

/** Cost of the call's answered legs if it ended at `endMs` (legs ended earlier count up to their own end). */
export function legsCents(legs: Legs, endMs: number, scale: number, pricePerMinute: number): number {
  let cents = 0;
  for (const leg of Object.values(legs)) {
    if (!leg?.answered_at) continue;
    const answered = Date.parse(leg.answered_at);
    if (answered >= endMs) continue;
    const end = leg.ended_at ? Math.min(Date.parse(leg.ended_at), endMs) : endMs;
    cents += legCents(carrierSeconds(new Date(answered), new Date(end), scale), pricePerMinute);
  }
  return cents;
}

/** The most a call can cost within its call-length limit: the destination talks the whole limit and a bridge's
 *  connect leg, answered first, also pays the destination's ring time. */
export function worstCaseCents(type: CallType, maxDurationSeconds: number, ringTimeoutSeconds: number, pricePerMinute: number): number {
  const talk = legCents(maxDurationSeconds, pricePerMinute);
  return type === 'bridge' ? talk + legCents(maxDurationSeconds + ringTimeoutSeconds, pricePerMinute) : talk;
}

/** The least a call must be able to pay to be admitted: the first minute of every billed leg. */
export const minimumCents = (type: CallType, pricePerMinute: number) => BILLED_LEGS[type] * pricePerMinute;

/** Talk time a reservation buys when every leg answers at once (shown as the call's max_duration_seconds). */
export const reservedTalkSeconds = (type: CallType, reservedCents: number, pricePerMinute: number) =>
  pricePerMinute > 0 ? Math.floor(reservedCents / (BILLED_LEGS[type] * pricePerMinute)) * 60 : Infinity;

export interface Billable {
  legs: Legs;
  time_scale: number;
  price_cents_per_minute: number;
  spend_reserved_cents: number | null;
}

/** The last instant (epoch ms) at which the legs answered so far still cost no more than the call's reservation;
 *  Infinity when the call has no reservation (admitted before reservations existed, or free) or no leg answered. */
export function spendDeadline(c: Billable): number {
  const reserved = c.spend_reserved_cents;
  if (reserved === null || reserved === undefined || c.price_cents_per_minute <= 0) return Infinity;
  const answered = Object.values(c.legs).filter((l) => l?.answered_at).map((l) => Date.parse(l!.answered_at!));
  if (!answered.length) return Infinity;
  const cost = (ms: number) => legsCents(c.legs, ms, c.time_scale, c.price_cents_per_minute);
  // Cost never decreases with time; search the last millisecond at which it is still within the reservation.
  // A leg still up past `hi` has been connected longer than the reservation's minutes.
  let lo = Math.min(...answered);
  let hi = Math.max(...answered) + (Math.floor(reserved / c.price_cents_per_minute) + 1) * 60_000 * c.time_scale + 1;
  if (cost(hi) <= reserved) return Infinity; // legs already ended within the reservation
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (cost(mid) <= reserved) lo = mid; else hi = mid;
  }
  return lo;
}
