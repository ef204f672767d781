// Calls queued from a number that leaves its organization. The rule itself is enforced at origination (store.ts
// re-checks, under the call's lock, that the caller ID is still the organization's ACTIVE number, or still one of
// its verified caller IDs); releasing a number or removing a caller ID also cancels its queued calls right away, so
// their channels free up without waiting for the workers.
import type { CallRuntime } from './runtime.ts';

/** Ends the organization's QUEUED calls from the number (CANCELED, `caller_id_released`); returns how many. Calls
 *  already originated went out while the number was held and run on. */
export function cancelQueuedCallsFrom(rt: CallRuntime, organizationId: string, phoneNumberId: number): Promise<number> {
  return cancelQueued(rt, 'phone_number_id = $2', [organizationId, phoneNumberId]);
}

/** The same for a removed caller ID: the organization's QUEUED calls from it (calls without a held number). */
export function cancelQueuedCallsFromCallerId(rt: CallRuntime, organizationId: string, number: string): Promise<number> {
  return cancelQueued(rt, 'phone_number_id IS NULL AND from_number = $2', [organizationId, number]);
}

async function cancelQueued(rt: CallRuntime, which: string, params: [string, unknown]): Promise<number> {
  const rows = await rt.deps.db.any<{ id: string }>(
    `SELECT id FROM calls WHERE ended_at IS NULL AND status = 'QUEUED' AND organization_id = $1 AND ${which}`, params);
  let canceled = 0;
  for (const { id } of rows) {
    const r = await rt.transition(id, { type: 'caller_id_released', at: new Date() }, { bestEffort: true });
    if (r?.step.result === 'applied') canceled++;
  }
  return canceled;
}
