// After Redis lost its state (workers/services/redis-recovery.ts): the work Redis held for calls is queued again from
// PostgreSQL, the truth. Every job keeps its deterministic id, so a job that survived is not doubled.
//   - QUEUED calls: their dial job (a browser call of path A only once its ticket was redeemed);
//   - live legs: what the carrier still had to report (Carrier.resume: the sandbox's scripted progress, its ring
//     time-outs included, and a rung inbound call's ring timeout or hang-up); a carrier that cannot resume gets the
//     originate command of a leg still dialing again;
//   - answered calls: the call-length limit timer, and a bridge's bridge command (idempotent);
//   - unused browser tickets: their cleanup job, due at the ticket's deadline;
//   - calls that ended shortly before with legs still up (their hang-up commands were queued in Redis): the hang-ups
//     and the release, as the call's ended state calls for.
import { legId } from '../carriers/carrier.ts';
import { scheduleTicketCleanup } from '../tickets/queue.ts';
import { pendingEffects, type Effect } from './machine.ts';
import type { CallRow, Leg } from './model.ts';
import type { CallRuntime } from './runtime.ts';
import { spendDay } from './limits.ts';

export interface CallsRearmed { dials: number; legs: number; limits: number; tickets: number; hangups: number; failed: number }

/** Calls that ended this long ago or less may still have legs up whose hang-up Redis lost. */
const ENDED_WINDOW_MS = 3600_000;
/** A call lasts at most its 180-minute limit plus its ring time: one that ended within ENDED_WINDOW_MS was created
 *  within this long. */
const CREATED_WINDOW_MS = ENDED_WINDOW_MS + 4 * 3600_000;

const LIVE_LEG: Leg['status'][] = ['DIALING', 'RINGING', 'ANSWERED'];
const carrierLegs = (c: CallRow) =>
  Object.values(c.legs).filter((l): l is Leg => !!l && l.role !== 'browser' && LIVE_LEG.includes(l.status));

/** The smallest UUIDv7 of a millisecond: call ids (UUIDv7) at or above it were made then or later. */
function uuidv7Floor(ms: number): string {
  const h = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8)}-0000-0000-000000000000`;
}

export async function rearmCalls(rt: CallRuntime, now = Date.now()): Promise<CallsRearmed> {
  const { db } = rt.deps;
  const out: CallsRearmed = { dials: 0, legs: 0, limits: 0, tickets: 0, hangups: 0, failed: 0 };
  // One call that cannot be re-armed (say, a carrier command failing) does not hold up the others; the calls
  // reconciler re-issues the work of calls that stop moving.
  const each = async (call: CallRow, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      out.failed++;
      rt.deps.log.error({ err, call_id: call.id }, 'call not re-armed after Redis lost its state');
    }
  };

  const live = await db.any<CallRow & { dialable: boolean }>(
    `SELECT c.*, (c.type <> 'webrtc' OR EXISTS (SELECT 1 FROM call_tickets t WHERE t.call_id = c.id AND t.used_at IS NOT NULL)) AS dialable
       FROM calls c WHERE c.ended_at IS NULL`);
  for (const call of live) {
    await each(call, async () => {
      if (call.status === 'QUEUED') {
        if (!call.dialable) return;
        await rt.queues.enqueueDial(call.id,
          { organizationId: call.organization_id, spendDay: call.spend_reserved_cents === null ? null : spendDay(call.created_at) });
        out.dials++;
        return;
      }
      const resume = rt.carrier?.resume?.bind(rt.carrier);
      const effects: Effect[] = pendingEffects(call).filter((e) => e.kind !== 'originate' || !resume);
      await rt.run(call, effects);
      if (effects.some((e) => e.kind === 'schedule_limit')) out.limits++;
      if (!resume) return;
      for (const leg of carrierLegs(call)) {
        await resume({
          callId: call.id, role: leg.role, legId: legId(call.id, leg.role), number: leg.number,
          status: leg.status as 'DIALING' | 'RINGING' | 'ANSWERED', originatedAt: leg.originated_at ?? call.originated_at!.toISOString(),
          lastSeq: leg.last_seq ?? 0, ringTimeoutSeconds: call.ring_timeout_seconds,
          ...(call.type === 'inbound' ? { inbound: { createdAt: call.created_at.toISOString(), answeredAt: leg.answered_at, talkSeconds: leg.talk_seconds ?? null } } : {}),
        });
        out.legs++;
      }
    });
  }

  const tickets = await db.any<{ call_id: string; expires_at: Date }>(
    `SELECT t.call_id, t.expires_at FROM call_tickets t JOIN calls c ON c.id = t.call_id
      WHERE c.ended_at IS NULL AND t.used_at IS NULL AND t.revoked_at IS NULL`);
  for (const t of tickets) {
    await scheduleTicketCleanup(rt.deps.queues, t.call_id, t.expires_at.getTime() - now);
    out.tickets++;
  }

  const ended = await db.any<CallRow>(
    `SELECT * FROM calls WHERE id >= $1::uuid AND ended_at > $2
        AND EXISTS (SELECT 1 FROM jsonb_each(legs) l WHERE l.key <> 'browser' AND l.value->>'status' IN ('DIALING', 'RINGING', 'ANSWERED'))`,
    [uuidv7Floor(now - CREATED_WINDOW_MS), new Date(now - ENDED_WINDOW_MS)]);
  for (const call of ended) {
    await each(call, async () => {
      await rt.run(call, pendingEffects(call));
      out.hangups++;
    });
  }
  return out;
}
