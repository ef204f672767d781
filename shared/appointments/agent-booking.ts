// The sandbox voice agent books during a call. An AI call on the sandbox carrier to a number ending in 0009 plays the
// booking script (docs/guide/getting-started.md, "The sandbox's test numbers"): the callee asks for an appointment,
// the agent offers the organization's next free slot and books it when the callee says yes (BOOKED_AT_SECONDS of
// talk). The call's end is one transaction (shared/calls/store.ts applyInput): the booking, its new_appointment event
// and the transcript that says so commit with it, or not at all. A call cut off before the yes books nothing; an
// organization without availability, or without a free slot, hears an apology.
import type { CallRow } from '../calls/model.ts';
import { findAvailability, insertBooking, nextFreeSlot, type Queryable } from './appointments.ts';
import type { AppointmentRow } from './schemas.ts';
import { spokenTime } from './zoned.ts';

export const BOOKING_LAST4 = '0009';
/** Talk time (sandbox seconds) at which the callee says yes and the agent books. */
export const BOOKED_AT_SECONDS = 6;

export type AgentBooking =
  | { outcome: 'booked'; spoken: string; appointment: AppointmentRow }
  /** The slot was offered but the call ended before the callee accepted it. */
  | { outcome: 'offered'; spoken: string }
  | { outcome: 'no_availability' };

/** Whether this call runs the booking script. */
export const runsBookingScript = (c: Pick<CallRow, 'type' | 'carrier' | 'to_number' | 'from_number' | 'direction'>) =>
  c.type === 'ai' && c.carrier === 'sandbox' && (c.direction === 'inbound' ? c.from_number : c.to_number).endsWith(BOOKING_LAST4);

/** Inside the transaction that ends the call: finds the next free slot and books it when the conversation got that
 *  far. Null when the call does not run the booking script or nobody answered. */
export async function bookDuringCall(q: Queryable, c: CallRow, nowMs: number): Promise<AgentBooking | null> {
  if (!runsBookingScript(c) || !c.picked_up || c.duration_seconds === null) return null;
  const rules = await findAvailability(q, c.organization_id);
  // Another booking of the same organization may be taking the same slot: the constraint refuses it and the agent
  // takes the next one (a few tries, then it apologizes).
  for (let attempt = 0; rules && attempt < 5; attempt++) {
    const slot = await nextFreeSlot(q, rules, nowMs);
    if (!slot) break;
    const spoken = spokenTime(rules.time_zone, slot.startMs);
    if (c.duration_seconds < BOOKED_AT_SECONDS) return { outcome: 'offered', spoken };
    const person = c.direction === 'inbound' ? c.from_number : c.to_number;
    const contact = await q.oneOrNone<{ id: string; name: string | null }>(
      'SELECT id, name FROM contacts WHERE organization_id = $1 AND phone_number = $2 AND deleted_at IS NULL', [c.organization_id, person]);
    const appointment = await insertBooking(q, rules, {
      startMs: slot.startMs, source: 'agent', call_id: c.id, contact_id: contact?.id ?? null, phone_number: person,
      name: contact?.name ?? null, notes: `Booked by ${c.agent?.name ?? 'the agent'} during the call.`,
    });
    if (appointment) return { outcome: 'booked', spoken, appointment };
    // Taken meanwhile, or this call already booked (its end applied twice): look again.
    const mine = await q.oneOrNone<AppointmentRow>(`SELECT * FROM appointments WHERE call_id = $1 AND source = 'agent'`, [c.id]);
    if (mine) return { outcome: 'booked', spoken: spokenTime(mine.time_zone, mine.start_at.getTime()), appointment: mine };
  }
  return { outcome: 'no_availability' };
}
