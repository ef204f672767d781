// The per-call state machine, as a pure function: (call, input) -> (next call, effects). It knows nothing of
// Postgres, Redis or carriers; store.ts applies one input per transaction with the call row locked, and
// CallRuntime (runtime.ts: transition/run) carries out the effects after commit. An input that no longer applies (a duplicate or late carrier
// event, a timer after the end, a second hangup) changes nothing and yields no effects, so every transition
// happens at most once.
//
//   QUEUED --originate--> RINGING --destination answered--> ANSWERED --any leg hangs up / hangup / limit--> COMPLETED
//   RINGING --leg fails--> BUSY | NO_ANSWER | VOICEMAIL | FAILED     (first failing leg decides, connect or destination)
//   RINGING --leg answers then reports screening--> COMPLETED (call_outcome screened)
//   QUEUED --hangup (any mode)--> CANCELED      RINGING --hangup--> CANCELED      ANSWERED --hangup--> COMPLETED
//   setup_failed / cancel_setup only act on QUEUED (never interrupt an originated call).
//   QUEUED --caller_id_released (the number left the organization before origination)--> CANCELED, nothing dialed.
//   QUEUED --admission_lost (Redis lost the call's channels or reservation, and the limit has no room for them
//            again)--> CANCELED, nothing dialed.
import type { CarrierEvent, LegRole } from '../carriers/carrier.ts';
import { carrierTraits } from '../carriers/traits.ts';
import { carrierSeconds, legsCents, spendDeadline } from './pricing.ts';
import {
  FAILURES, LEG_RANK, isTerminal, type AsyncFailureCode, type CallOutcome, type CallRow, type CallStatus, type HangupMode,
  type Leg, type LegStatus,
} from './model.ts';

/** The part of a call row the machine reads and writes. */
export type MachineCall = Pick<CallRow,
  'id' | 'type' | 'status' | 'legs' | 'picked_up' | 'answered_at' | 'ended_at' | 'originated_at' | 'call_outcome'
  | 'failure_code' | 'failure_category' | 'disconnection_reason' | 'duration_seconds' | 'time_scale'
  | 'max_duration_seconds' | 'price_cents_per_minute' | 'cost_cents' | 'spend_reserved_cents'>
  /** The carrier's name: what may be assumed of it (shared/carriers/traits.ts). Absent: nothing is assumed.
   *  direction absent: outbound. */
  & Partial<Pick<CallRow, 'carrier' | 'direction'>>;

export type Input =
  | { type: 'originate'; at: Date }
  /** predecessorLost: apply even though the leg's previous numbered event was not applied; only when that event is
   *  known lost (shared/calls/event-order.ts). */
  | { type: 'carrier'; event: CarrierEvent; predecessorLost?: boolean }
  | { type: 'hangup'; mode: HangupMode; at: Date }
  | { type: 'limit'; at: Date }
  | { type: 'force_end'; at: Date }
  /** The call's caller ID is no longer an ACTIVE number of its organization (released, maybe bought by another):
   *  a QUEUED call ends without dialing; an originated call went out while the number was held and runs on. */
  | { type: 'caller_id_released'; at: Date }
  /** The call's admission was lost with Redis's state before it dialed, and admitting it again was refused (the
   *  limit filled up meanwhile): it ends without dialing. shared/calls/admission.ts. */
  | { type: 'admission_lost'; code: AdmissionRefusal; at: Date }
  /** Browser calls: the browser is gone (socket closed, or its ticket never used before the cleanup deadline). */
  | { type: 'abandon'; reason: AbandonReason; at: Date };

export type AdmissionRefusal = 'channel_limit_exceeded' | 'spend_cap_reached';

/** ticket_expired: the ticket was never used in time; setup_abandoned: the socket closed before the answer;
 *  media_lost: the call's media session is gone (the media process died or closed it); signaling_lost: the signaling
 *  process that held the call's SIP dialogs died (signaling/reconciler.ts). */
export type AbandonReason = 'ticket_expired' | 'setup_abandoned' | 'media_lost' | 'signaling_lost';

export type Effect =
  | { kind: 'originate'; role: LegRole }
  /** endRecorded: the leg's end is already recorded (a carrier that hangs up at once): the command only cancels
   *  what the leg still had scheduled, and the carrier reports no end. */
  | { kind: 'hangup'; role: LegRole; endRecorded?: true }
  | { kind: 'bridge'; at: string }
  /** Epoch ms at which the call-length limit ends the call. */
  | { kind: 'schedule_limit'; at: number }
  /** The call ended before its limit: drop the pending timer. */
  | { kind: 'cancel_limit' }
  | { kind: 'release' };

/** What an input did: `applied` changed the call; the others explain why nothing happened. `out_of_order`: a
 *  carrier event arrived before an earlier one of its leg; retry it later (or apply it once that one is lost). */
export type Result = 'applied' | 'ignored' | 'already_ended' | 'already_originated' | 'out_of_order';

export interface Step {
  result: Result;
  call: MachineCall;
  effects: Effect[];
  /** This input ended the call (end events are due). */
  ended: boolean;
}

const STATUS_OF_KIND = { ringing: 'RINGING', answered: 'ANSWERED', ended: 'ENDED' } as const satisfies Record<string, LegStatus>;
const LIVE_LEG: LegStatus[] = ['DIALING', 'RINGING', 'ANSWERED'];

const noop = (call: MachineCall, result: Result = 'ignored'): Step => ({ result, call, effects: [], ended: false });

function clone(call: MachineCall): MachineCall {
  const legs: MachineCall['legs'] = {};
  for (const [role, leg] of Object.entries(call.legs)) legs[role as LegRole] = { ...leg };
  return { ...call, legs };
}

export { carrierSeconds };

/** When the call-length limit ends an answered call (epoch ms): its length limit from the answer, or earlier when
 *  its spend reservation runs out (pricing.ts spendDeadline). */
export const limitDeadline = (c: Pick<MachineCall, 'answered_at' | 'max_duration_seconds' | 'time_scale' | 'legs'
  | 'price_cents_per_minute' | 'spend_reserved_cents'>) =>
  Math.min(c.answered_at!.getTime() + c.max_duration_seconds * 1000 * c.time_scale, spendDeadline(c));

/** Whether an answered call needs a limit timer of its own: not when its carrier's scripts end it first (shared/
 *  carriers/traits.ts), the scripted end being a carrier event already scheduled; an inbound call's caller talks as
 *  long as its request said, so it always gets one. */
export function needsLimitTimer(c: Pick<MachineCall, 'answered_at' | 'max_duration_seconds' | 'time_scale' | 'legs'
  | 'price_cents_per_minute' | 'spend_reserved_cents' | 'carrier' | 'direction'>): boolean {
  if (c.direction === 'inbound') return true;
  const traits = carrierTraits(c.carrier);
  const talk = Math.min(...[c.legs.connect, c.legs.destination].filter((l): l is Leg => !!l).map((l) => traits.talkSeconds(l.number)));
  if (!Number.isFinite(talk)) return true;
  return limitDeadline(c) <= c.answered_at!.getTime() + talk * 1000 * c.time_scale;
}

/** Cost (pricing.ts): every answered leg pays per started minute of its own connected time, never past the
 *  instant its reservation runs out, so a call is never billed more than it reserved. */
export const callCost = (c: MachineCall, endedAt: Date): number =>
  legsCents(c.legs, Math.min(endedAt.getTime(), spendDeadline(c)), c.time_scale, c.price_cents_per_minute);

interface Ending {
  status: CallStatus;
  outcome: CallOutcome;
  reason: string;
  failure?: AsyncFailureCode;
  /** Screening: the call never reached a person; timings are unknown. */
  screened?: boolean;
}

/** Ends the call: final fields, hang up every leg still up, release the channels. */
function end(call: MachineCall, e: Ending, at: Date): Step {
  const hadLimit = call.status === 'ANSWERED';
  const hadTimer = hadLimit && needsLimitTimer(call);
  // An answered call's limit (length or money) came first when the ending is reported past it (a late event).
  if (hadLimit && e.outcome === 'answered' && at.getTime() > limitDeadline(call)) {
    at = new Date(limitDeadline(call));
    e = { ...e, reason: 'max_duration_reached' };
  }
  call.status = e.status;
  call.call_outcome = e.outcome;
  call.disconnection_reason = e.reason;
  call.failure_code = e.failure ?? null;
  call.failure_category = e.failure ? FAILURES[e.failure].category : null;
  call.ended_at = at;
  if (e.screened) {
    call.picked_up = false;
    call.answered_at = null;
    call.duration_seconds = null;
  } else {
    call.duration_seconds = call.answered_at ? carrierSeconds(call.answered_at, at, call.time_scale) : 0;
  }
  call.cost_cents = callCost(call, at);
  const effects: Effect[] = [];
  const atOnce = carrierTraits(call.carrier).hangsUpAtOnce;
  for (const leg of Object.values(call.legs)) {
    if (!leg || !LIVE_LEG.includes(leg.status)) continue;
    // The browser leg is signaling's (its socket), never the carrier's: it ends when signaling reports it.
    if (atOnce && leg.role !== 'browser') {
      endedByUs(leg, at);
      effects.push({ kind: 'hangup', role: leg.role, endRecorded: true });
    } else {
      effects.push({ kind: 'hangup', role: leg.role });
    }
  }
  if (hadTimer) effects.push({ kind: 'cancel_limit' });
  effects.push({ kind: 'release' });
  return { result: 'applied', call, effects, ended: true };
}

/** A leg we hung up, recorded as its carrier would have reported it. */
function endedByUs(leg: Leg, at: Date): void {
  leg.status = 'ENDED';
  leg.ended_at = at.toISOString();
  leg.reason = 'local_hangup';
}

function dial(call: MachineCall, role: LegRole, at: Date): Effect {
  const leg = call.legs[role]!;
  leg.status = carrierTraits(call.carrier).ringsWhenDialed(leg.number) ? 'RINGING' : 'DIALING';
  leg.originated_at = at.toISOString();
  return { kind: 'originate', role };
}

export function step(current: MachineCall, input: Input): Step {
  const call = clone(current);
  switch (input.type) {
    case 'originate': {
      if (call.status !== 'QUEUED') return noop(current, isTerminal(call.status) ? 'already_ended' : 'already_originated');
      call.status = 'RINGING';
      call.originated_at = input.at;
      return { result: 'applied', call, effects: [dial(call, call.type === 'bridge' ? 'connect' : 'destination', input.at)], ended: false };
    }
    case 'hangup': {
      if (isTerminal(call.status)) return noop(current, 'already_ended');
      if (input.mode !== 'hangup') {
        if (call.status !== 'QUEUED') return noop(current, 'already_originated');
        return end(call, { status: 'CANCELED', outcome: 'connection_unconfirmed',
          reason: input.mode === 'setup_failed' ? 'setup_failed' : 'setup_canceled' }, input.at);
      }
      if (call.status === 'ANSWERED') return end(call, { status: 'COMPLETED', outcome: 'answered', reason: 'api_hangup' }, input.at);
      return end(call, { status: 'CANCELED', outcome: 'canceled', reason: 'api_hangup' }, input.at);
    }
    case 'limit': {
      if (call.status !== 'ANSWERED') return noop(current, isTerminal(call.status) ? 'already_ended' : 'ignored');
      return end(call, { status: 'COMPLETED', outcome: 'answered', reason: 'max_duration_reached' }, input.at);
    }
    case 'force_end': {
      if (isTerminal(call.status)) return noop(current, 'already_ended');
      if (call.status === 'ANSWERED') return end(call, { status: 'COMPLETED', outcome: 'answered', reason: 'max_duration_reached' }, input.at);
      return end(call, { status: 'FAILED', outcome: 'failed', reason: 'setup_timeout' }, input.at);
    }
    case 'caller_id_released': {
      if (call.status !== 'QUEUED') return noop(current, isTerminal(call.status) ? 'already_ended' : 'already_originated');
      return end(call, { status: 'CANCELED', outcome: 'connection_unconfirmed', reason: 'caller_id_released' }, input.at);
    }
    case 'admission_lost': {
      if (call.status !== 'QUEUED') return noop(current, isTerminal(call.status) ? 'already_ended' : 'already_originated');
      return end(call, { status: 'CANCELED', outcome: 'connection_unconfirmed', reason: input.code }, input.at);
    }
    case 'abandon': {
      // Before the answer an abandoned setup (not a carrier failure, no talk time); after it a normal end.
      if (isTerminal(call.status)) return noop(current, 'already_ended');
      if (call.status === 'ANSWERED') {
        const lost = input.reason === 'media_lost' || input.reason === 'signaling_lost';
        return end(call, { status: 'COMPLETED', outcome: 'answered', reason: lost ? input.reason : 'browser_hangup' }, input.at);
      }
      return end(call, { status: 'CANCELED', outcome: 'connection_unconfirmed', reason: input.reason }, input.at);
    }
    case 'carrier': return carrierStep(current, call, input.event, input.predecessorLost === true);
  }
}

function carrierStep(current: MachineCall, call: MachineCall, ev: CarrierEvent, predecessorLost: boolean): Step {
  const leg: Leg | undefined = call.legs[ev.role];
  if (!leg) return noop(current);
  const next = STATUS_OF_KIND[ev.kind];
  if (leg.status === 'ENDED' || LEG_RANK[next] <= LEG_RANK[leg.status]) return noop(current);
  if (ev.seq !== undefined && ev.seq > (leg.last_seq ?? 0) + 1 && !predecessorLost && leg.status !== 'PENDING') return noop(current, 'out_of_order');
  const wasAnswered = leg.status === 'ANSWERED';
  leg.status = next;
  if (ev.seq !== undefined) leg.last_seq = Math.max(leg.last_seq ?? 0, ev.seq);
  if (ev.kind === 'answered') leg.answered_at = ev.at;
  if (ev.kind === 'ended') {
    leg.ended_at = ev.at;
    leg.reason = ev.reason ?? 'completed';
  }
  const at = new Date(ev.at);

  // After the end only the leg's record changes; a leg that comes up after the end is hung up.
  if (isTerminal(call.status)) {
    return { result: 'applied', call, effects: ev.kind === 'ended' ? [] : [{ kind: 'hangup', role: ev.role }], ended: false };
  }

  if (ev.kind === 'ringing') return { result: 'applied', call, effects: [], ended: false };

  if (ev.kind === 'answered') {
    if (ev.role === 'connect') {
      // The staff phone answered: now ring the called party.
      const dest = call.legs.destination;
      const effects: Effect[] = dest && dest.status === 'PENDING' ? [dial(call, 'destination', at)] : [];
      return { result: 'applied', call, effects, ended: false };
    }
    call.status = 'ANSWERED';
    call.answered_at = at;
    call.picked_up = true;
    const effects: Effect[] = [];
    if (call.type === 'bridge') effects.push({ kind: 'bridge', at: ev.at });
    if (needsLimitTimer(call)) effects.push({ kind: 'schedule_limit', at: limitDeadline(call) });
    return { result: 'applied', call, effects, ended: false };
  }

  // ended
  const reason = leg.reason!;
  if (reason === 'screened') {
    return end(call, { status: 'COMPLETED', outcome: 'screened', reason: 'call_screened', screened: true }, at);
  }
  if (reason in FAILURES && !wasAnswered) {
    const f = FAILURES[reason as AsyncFailureCode];
    return end(call, { status: f.status, outcome: f.outcome, reason, failure: reason as AsyncFailureCode }, at);
  }
  if (call.status === 'ANSWERED') {
    const who = ev.role === 'destination' ? 'remote_hangup' : 'connect_hangup';
    return end(call, { status: 'COMPLETED', outcome: 'answered', reason: reason === 'local_hangup' ? 'local_hangup' : who }, at);
  }
  // A leg hung up before the called party answered (the staff phone gave up, or the carrier dropped it).
  return end(call, { status: 'CANCELED', outcome: 'canceled', reason: ev.role === 'connect' ? 'connect_hangup' : 'remote_hangup' }, at);
}

/** Level-triggered repair: the effects the call's current state calls for, for the reconciler to re-issue when a
 *  process died between a commit and its effects. Every effect is idempotent. */
export function pendingEffects(call: MachineCall): Effect[] {
  const effects: Effect[] = [];
  const legs = Object.values(call.legs).filter((l): l is Leg => !!l);
  const traits = carrierTraits(call.carrier);
  if (isTerminal(call.status)) {
    for (const leg of legs) {
      if (LIVE_LEG.includes(leg.status)) effects.push({ kind: 'hangup', role: leg.role });
      // A leg the end recorded hung up may still have scripted events to cancel.
      else if (traits.hangsUpAtOnce && leg.role !== 'browser' && leg.reason === 'local_hangup') effects.push({ kind: 'hangup', role: leg.role, endRecorded: true });
    }
    effects.push({ kind: 'release' });
    return effects;
  }
  for (const leg of legs) {
    // A leg recorded ringing when it was dialed, which has reported nothing since, may never have been dialed (a
    // process died between the commit and the command): dialing it again is harmless (commands are idempotent).
    // (An inbound call's caller was never dialed by us.)
    const unconfirmed = call.direction !== 'inbound' && leg.status === 'RINGING' && !leg.last_seq && leg.role !== 'browser'
      && traits.ringsWhenDialed(leg.number);
    if (leg.status === 'DIALING' || unconfirmed) effects.push({ kind: 'originate', role: leg.role });
  }
  if (call.status === 'ANSWERED') {
    if (call.type === 'bridge') effects.push({ kind: 'bridge', at: call.answered_at!.toISOString() });
    if (needsLimitTimer(call)) effects.push({ kind: 'schedule_limit', at: limitDeadline(call) });
  }
  return effects;
}
