// Calls queued from a number that leaves its organization. The rule itself is enforced at origination (store.ts
// re-checks, under the call's lock, that the caller ID is still the organization's ACTIVE number); releasing a
// number also cancels its queued calls right away, so their channels free up without waiting for the workers.
import type { CallRuntime } from './runtime.ts';

/** Ends the organization's QUEUED calls from the number (CANCELED, `caller_id_released`); returns how many. Calls
 *  already originated went out while the number was held and run on. */
export async function cancelQueuedCallsFrom(rt: CallRuntime, organizationId: string, phoneNumberId: number): Promise<number> {
  const rows = await rt.deps.db.any<{ id: string }>(
    `SELECT id FROM calls WHERE ended_at IS NULL AND status = 'QUEUED' AND organization_id = $1 AND phone_number_id = $2`,
    [organizationId, phoneNumberId]);
  let canceled = 0;
  for (const { id } of rows) {
    const r = await rt.transition(id, { type: 'caller_id_released', at: new Date() }, { bestEffort: true });
    if (r?.step.result === 'applied') canceled++;
  }
  return canceled;
}
