import { TICKET_CLEANUP_QUEUE, type TicketCleanupJob } from '../../shared/tickets/queue.ts';
import { getTicketState, revokeUnusedTicket } from '../../shared/tickets/tickets.ts';
import type { Processor } from '../processor.ts';

// The five-minute deadline of an unused browser ticket (a delayed job per ticket, job id = call id). A ticket still
// unused is revoked — atomically against redemption: both update the one ticket row only while it is unused — and
// its call is abandoned: CANCELED with call_outcome connection_unconfirmed (not a carrier failure, no talk time),
// its channel released. A ticket that was used, or a call that already ended, is left alone.
export const ticketCleanup: Processor<TicketCleanupJob> = {
  queue: TICKET_CLEANUP_QUEUE,
  concurrency: 20,
  async process(job, deps) {
    const { callId } = job.data;
    const revoked = await revokeUnusedTicket(deps.db, callId, 'ticket_expired',
      { stage: 'setup', reason: 'ticket_expired', at: new Date().toISOString() });
    if (!revoked) {
      // Used, or revoked for another reason: nothing to do. Revoked by an earlier attempt of this job (a crash
      // between the revocation and the transition), or no ticket at all (its insert failed after the call was
      // placed): abandon the call; abandoning an ended call is a no-op, so repeating is safe.
      const t = await getTicketState(deps.db, callId);
      if (t && t.revoke_reason !== 'ticket_expired') return t.used_at ? 'used' : 'revoked';
    }
    const applied = await deps.calls.transition(callId, { type: 'abandon', reason: 'ticket_expired', at: new Date() });
    return applied ? applied.step.result : 'missing';
  },
};
