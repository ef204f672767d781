// Before a call dials, it must be counted in Redis: its channels held and its spend reserved.
//
// Admission (place.ts) counts a call in Redis before its row commits. When Redis loses its state in between and the
// accounts are rebuilt from PostgreSQL before the row is visible there, the call is live but counted nowhere, and
// the limits would admit others in its place. So every dial first checks that its call is counted (one Redis round
// trip when the job names the organization) and, when it is not, admits it again under the organization's current
// limits; a call they have no room for any more ends without dialing (admission_lost). A call counted when its dial
// starts stays counted: every later rebuild reads its committed row. No channel is ever used past the limit.
import type { DialJob } from './queues.ts';
import { getLimits, spendDay } from './limits.ts';
import type { AdmissionRefusal } from './machine.ts';
import type { CallRuntime } from './runtime.ts';
import { loadCall } from './store.ts';

/** null when the call may dial (counted, or no longer QUEUED: its transition decides); else why it may not. */
export async function confirmAdmission(rt: CallRuntime, job: DialJob): Promise<AdmissionRefusal | null> {
  if (job.organizationId !== undefined && job.spendDay !== undefined) {
    const [channels, spend] = await Promise.all([
      rt.channels.holding(job.organizationId, job.callId),
      job.spendDay === null ? 'held' : rt.spend.holding(job.organizationId, job.spendDay, job.callId),
    ]);
    if (channels === 'held' && spend === 'held') return null;
  }
  const { db } = rt.deps;
  const call = await loadCall(db, job.callId);
  if (!call || call.status !== 'QUEUED') return null;
  const limits = await getLimits(db, call.organization_id);
  if (!limits) return null;
  // Idempotent: a call that still holds is admitted as it is. (A call canceled between the read above and this may
  // take a hold again; the calls reconciler frees holds of ended calls.)
  const channels = await rt.channels.admit(call.organization_id, call.id, call.channels, limits.channel_limit);
  if (!channels.admitted) return 'channel_limit_exceeded';
  const cents = call.spend_reserved_cents;
  if (cents !== null) {
    const spend = await rt.spend.reserve(call.organization_id, spendDay(call.created_at), call.id,
      { worstCents: cents, minimumCents: cents, capCents: limits.daily_spend_cap_cents, now: Date.now() });
    if (!spend.admitted) return 'spend_cap_reached';
  }
  return null;
}
