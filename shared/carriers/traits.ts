// What the call machine may assume about a carrier without asking it, looked up by the carrier name a call row
// records (calls.carrier). Each trait saves a carrier event — a BullMQ job and a PostgreSQL transaction — that
// would only confirm what the platform already knows when it commits.
import { sandboxRingsWhenDialed, talkSeconds } from './sandbox.ts';

export interface CarrierTraits {
  /** The leg rings the instant it is dialed: the transaction that dials it records RINGING, and the carrier
   *  reports no ringing of its own. */
  ringsWhenDialed(number: string): boolean;
  /** A hang-up the platform asks for takes effect at once and the carrier confirms none: the transaction that ends
   *  the call records its carrier legs ENDED (local_hangup), and the hang-up command only cancels what such a leg
   *  still had scheduled. */
  hangsUpAtOnce: boolean;
  /** Carrier seconds an answered outbound leg talks before the carrier itself ends it (a bridge's staff phone: from
   *  the bridge, which is the answer); Infinity when that is not known. A call its legs' scripts end before its
   *  limit needs no limit timer of its own. */
  talkSeconds(number: string): number;
}

/** A real network: every leg's ringing and every hang-up is reported by the carrier. */
const REPORTED: CarrierTraits = { ringsWhenDialed: () => false, hangsUpAtOnce: false, talkSeconds: () => Infinity };

/** The sandbox decides everything itself: a leg whose script rings starts ringing when dialed, a hang-up is the
 *  removal of the leg's scripted events, and its scripts say when an answered leg hangs up. */
const SANDBOX: CarrierTraits = { ringsWhenDialed: sandboxRingsWhenDialed, hangsUpAtOnce: true, talkSeconds };

export const carrierTraits = (carrier: string | undefined): CarrierTraits => carrier === 'sandbox' ? SANDBOX : REPORTED;
