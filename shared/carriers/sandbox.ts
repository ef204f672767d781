// The sandbox carrier (the default): no telephone network, deterministic outcomes chosen by the last four digits
// of the dialed number — the destination and, on a bridge, connect_number alike. Each leg's script is a set of
// BullMQ delayed jobs on the carrier-events queue, so the timers survive process restarts. Script times are
// sandbox seconds; SANDBOX_TIME_SCALE multiplies them (0.01 makes a 10 s conversation last 100 ms).
import type { FlowProducer, Queue } from 'bullmq';
import {
  legId, publishCarrierEvent, publishCarrierEvents, sequencedEventJobId, type BridgeRequest, type Carrier, type CarrierEvent, type CarrierEventKind, type LegEndReason,
  type HangupRef, type LegRef, type LegRole, type OriginateRequest, type ResumedLeg,
} from './carrier.ts';

/** What one answered sandbox leg costs: 1 cent per started minute (a bridge pays for both legs). */
export const SANDBOX_PRICE_CENTS_PER_MINUTE = 1;
export const SANDBOX_RING_SECONDS = 2;
export const SANDBOX_TALK_SECONDS = 10;

/** The sandbox's test numbers (docs/guide/getting-started.md, "The sandbox's test numbers", is this table). */
export const SANDBOX_NUMBERS: { last4: string; outcome: string }[] = [
  { last4: '0001', outcome: 'busy (`busy`)' },
  { last4: '0002', outcome: 'rings out (`no_answer`)' },
  { last4: '0003', outcome: 'answering machine (`voicemail_reached`, status VOICEMAIL)' },
  { last4: '0004', outcome: '`number_unreachable`' },
  { last4: '0005', outcome: '`call_declined`' },
  { last4: '0006', outcome: '`carrier_rejected`' },
  { last4: '0007', outcome: 'answered, then the recipient reports screening (completed, `call_outcome` screened, `picked_up` false, `disconnection_reason` call_screened, unknown timings null)' },
  { last4: '0008', outcome: 'answered and never hangs up (ends only by hangup or the call-length limit)' },
  { last4: '0009', outcome: 'as other; on an AI call the callee asks for an appointment and the agent books the organization\'s next free slot (its transcript says so, `new_appointment` fires; docs/reference/appointments.md)' },
  { last4: 'other', outcome: 'rings 2 s, answered, talks 10 s, remote hangs up: completed' },
];

export type SandboxBehaviour =
  | 'busy' | 'no_answer' | 'voicemail' | 'unreachable' | 'declined' | 'rejected' | 'screened' | 'forever' | 'normal';

const BY_LAST4: Record<string, SandboxBehaviour> = {
  '0001': 'busy', '0002': 'no_answer', '0003': 'voicemail', '0004': 'unreachable', '0005': 'declined',
  '0006': 'rejected', '0007': 'screened', '0008': 'forever',
};

export const sandboxBehaviour = (number: string): SandboxBehaviour => BY_LAST4[number.slice(-4)] ?? 'normal';

export interface ScriptStep { kind: CarrierEventKind; reason?: LegEndReason; at: number }

/** A leg's script in sandbox seconds from origination. A connect leg that answers normally has no end of its
 *  own here: its 10 s of talk start when it is bridged (see bridge()). */
export function sandboxScript(number: string, role: LegRole, ringTimeoutSeconds: number): ScriptStep[] {
  const R = SANDBOX_RING_SECONDS;
  switch (sandboxBehaviour(number)) {
    case 'busy': return [{ kind: 'ended', reason: 'busy', at: 1 }];
    case 'no_answer': return [{ kind: 'ringing', at: 0 }, { kind: 'ended', reason: 'no_answer', at: ringTimeoutSeconds }];
    // The machine picks up after the ring and is detected 3 s later; a machine is not a person answering.
    case 'voicemail': return [{ kind: 'ringing', at: 0 }, { kind: 'ended', reason: 'voicemail_reached', at: R + 3 }];
    case 'unreachable': return [{ kind: 'ended', reason: 'number_unreachable', at: 1 }];
    case 'declined': return [{ kind: 'ringing', at: 0 }, { kind: 'ended', reason: 'call_declined', at: R + 1 }];
    case 'rejected': return [{ kind: 'ended', reason: 'carrier_rejected', at: 0.5 }];
    case 'screened': return [{ kind: 'ringing', at: 0 }, { kind: 'answered', at: R }, { kind: 'ended', reason: 'screened', at: R + 1 }];
    case 'forever': return [{ kind: 'ringing', at: 0 }, { kind: 'answered', at: R }];
    case 'normal':
      return role === 'destination'
        ? [{ kind: 'ringing', at: 0 }, { kind: 'answered', at: R }, { kind: 'ended', reason: 'completed', at: R + SANDBOX_TALK_SECONDS }]
        : [{ kind: 'ringing', at: 0 }, { kind: 'answered', at: R }];
  }
}

/** Whether the leg's script starts by ringing (at 0): every script but the outright failures (busy, unreachable,
 *  rejected). Such a leg is recorded RINGING when it is dialed (shared/carriers/traits.ts), so its ringing is not
 *  published as an event of its own. */
export const sandboxRingsWhenDialed = (number: string): boolean => sandboxScript(number, 'destination', 60)[0]?.kind === 'ringing';

/** Seconds a leg keeps talking once its conversation started (answer for a destination, bridge for a connect
 *  leg) before its own script ends it; Infinity when it never hangs up by itself. */
export function talkSeconds(number: string): number {
  switch (sandboxBehaviour(number)) {
    case 'normal': return SANDBOX_TALK_SECONDS;
    case 'screened': return 1;
    default: return Infinity;
  }
}

/** Job ids of a leg's unnumbered events (a ringing published before ringing was recorded at dialing, our own
 *  hang-up); numbered ones use sequencedEventJobId. A sandbox leg has at most two numbered events: its answer (1)
 *  and its end (2), or just its end (1). */
const jobId = (legId: string, kind: 'ringing' | 'ended') => `sbx-${legId}-${kind}`;

/** The script's answers and ends with their numbers (1, 2); its ringing is recorded at dialing, not published. */
const numbered = (script: ScriptStep[]) =>
  script.filter((step) => step.kind !== 'ringing').map((step, i) => ({ step, seq: i + 1 }));
const MAX_SEQ = 2;
const scriptedJobIds = (legId: string, lastSeq: number) =>
  Array.from({ length: Math.max(0, MAX_SEQ - lastSeq) }, (_, i) => sequencedEventJobId(legId, lastSeq + i + 1));

/** A sandbox leg's event, at `atMs`. */
const sandboxEvent = (leg: LegRef, kind: CarrierEventKind, atMs: number, reason?: LegEndReason, seq?: number): CarrierEvent =>
  ({ carrier: 'sandbox', callId: leg.callId, legId: leg.legId, role: leg.role, kind, reason, at: new Date(atMs).toISOString(), seq });

export class SandboxCarrier implements Carrier {
  readonly name = 'sandbox';
  readonly pricePerMinuteCents = SANDBOX_PRICE_CENTS_PER_MINUTE;

  /** flows: the process's FlowProducer (its queue registry's), which publishes a leg's script in one transaction. */
  constructor(private readonly events: Queue, private readonly flows: FlowProducer, readonly timeScale: number,
    private readonly now: () => number = Date.now) {}

  private ms(sandboxSeconds: number) { return sandboxSeconds * 1000 * this.timeScale; }

  /** Schedules the leg's script, all of it or nothing (one Redis transaction): a process killed half-way through
   *  used to leave the answer scheduled without the hang-up, so the call looked endless (a late limit timer found
   *  no earlier event pending and cut it off) and the repeated command timed the hang-up from the repeat.
   *  Repeating it for the same leg id adds nothing (BullMQ drops duplicate job ids while the first jobs exist;
   *  they are kept an hour after completion). */
  async originate(req: OriginateRequest): Promise<void> {
    const t0 = this.now();
    // Answers and ends are numbered (an end must not overtake its answer). The ringing at 0 is not published: the
    // platform records it when it dials the leg (sandboxRingsWhenDialed).
    await publishCarrierEvents(this.flows, this.events, numbered(sandboxScript(req.number, req.role, req.ringTimeoutSeconds)).map(({ step, seq }) => {
      const at = t0 + this.ms(step.at);
      return { ev: sandboxEvent(req, step.kind, at, step.reason, seq), delayMs: at - t0 };
    }));
  }

  /** The leg's script from its origination on, less what it already reported: the numbered events after its last
   *  applied one (numbered as originate() numbered them). */
  async resume(leg: ResumedLeg): Promise<void> {
    if (leg.inbound) return resumeSandboxInbound(this.events, leg, this.timeScale, this.now());
    const t0 = Date.parse(leg.originatedAt);
    const now = this.now();
    const due = numbered(sandboxScript(leg.number, leg.role, leg.ringTimeoutSeconds)).filter(({ seq }) => seq > leg.lastSeq).map(({ step, seq }) => {
      const at = t0 + this.ms(step.at);
      return { ev: sandboxEvent(leg, step.kind, at, step.reason, seq), delayMs: at - now };
    });
    await publishCarrierEvents(this.flows, this.events, due);
  }

  /** Cancels what is still scheduled for the leg and, unless the platform already recorded its end, reports it
   *  ended by us. */
  async hangup(leg: HangupRef): Promise<void> {
    // A removed numbered event counts as lost: an event after it no longer waits for it. Events already applied
    // are history (their jobs age out); a ringing job exists only for a leg dialed before ringing was recorded at
    // dialing, and is harmless (a leg's ringing after its end changes nothing).
    for (const id of scriptedJobIds(leg.legId, leg.lastSeq ?? 0)) {
      try {
        await this.events.remove(id);
      } catch { /* running right now: its event arrives and is harmless */ }
    }
    if (leg.endRecorded) return;
    await publishCarrierEvent(this.events, sandboxEvent(leg, 'ended', this.now(), 'local_hangup'),
      { dedupId: jobId(leg.legId, 'ended') });
  }

  /** Looks the legs' scripted events up by their deterministic job ids. */
  async hasPendingEventsBefore(legIds: string[], atMs: number): Promise<boolean> {
    for (const id of legIds) {
      for (let seq = 1; seq <= MAX_SEQ; seq++) {
        const job = await this.events.getJob(sequencedEventJobId(id, seq));
        if (!job || Date.parse((job.data as CarrierEvent).at) > atMs) continue;
        const state = await job.getState();
        if (state !== 'completed' && state !== 'failed' && state !== 'unknown') return true;
      }
    }
    return false;
  }

  /** Conversation starts: the staff phone talks for its scripted time from here. When both parties would hang up
   *  at the same moment the called party goes first, so only a connect leg that outlasts the destination's script
   *  schedules its own hang-up. */
  async bridge(req: BridgeRequest): Promise<void> {
    const connectTalk = talkSeconds(req.connect.number);
    if (!(connectTalk < talkSeconds(req.destination.number))) return;
    const at = Date.parse(req.at) + this.ms(connectTalk);
    // After the connect leg's scripted answer (1).
    await publishCarrierEvent(this.events, sandboxEvent(req.connect, 'ended', at, 'completed', 2), { delayMs: at - this.now() });
  }
}

// --- Inbound calls that ring browsers (POST /v1/sandbox/calls/inbound with ring: true; shared/calls/inbound.ts) ---
// The caller is the call's `destination` leg, as on the SIP trunk. Its events are numbered like any sandbox leg's:
//   ringing   ended no_answer (1), a delayed job due at the call's ring time (real seconds, not scaled: browsers
//             ring in real time, as with SIP_INBOUND_RING_SECONDS);
//   accepted  a browser took it: that job is withdrawn, then answered (1) now and ended completed (2) talk_seconds
//             (sandbox seconds, scaled) later, in one transaction. A hang-up meanwhile removes them (hangup()).

/** Sandbox seconds the caller talks after a browser accepted, unless the request says (talk_seconds, 1..3600). */
export const SANDBOX_INBOUND_TALK_SECONDS = 10;
export const SANDBOX_INBOUND_TALK_MAX = 3600;

export interface SandboxInboundCall {
  id: string;
  carrier: string;
  created_at: Date;
  ring_timeout_seconds: number;
  time_scale: number;
  legs: { destination?: { number: string; talk_seconds?: number } };
}

const callerRef = (call: SandboxInboundCall): LegRef =>
  ({ callId: call.id, role: 'destination', legId: legId(call.id, 'destination'), number: call.legs.destination!.number });

/** The ring timeout of a rung sandbox inbound call: its caller's `ended no_answer` (1) at its ring time. Repeating it
 *  adds nothing (its job id is sequencedEventJobId(leg, 1)). */
export async function scheduleSandboxRingTimeout(events: Queue, call: SandboxInboundCall, now = Date.now()): Promise<void> {
  const at = call.created_at.getTime() + call.ring_timeout_seconds * 1000;
  await publishCarrierEvent(events, sandboxEvent(callerRef(call), 'ended', at, 'no_answer', 1), { delayMs: at - now });
}

/** After Redis lost its state: the caller leg of a rung inbound call gets its pending event again, timed as first
 *  scheduled and under the same job id: its no_answer (1) while it rings, its hang-up (2) once answered. */
async function resumeSandboxInbound(events: Queue, leg: ResumedLeg, timeScale: number, now: number): Promise<void> {
  const i = leg.inbound!;
  if (leg.status !== 'ANSWERED' && leg.lastSeq < 1) {
    const at = Date.parse(i.createdAt) + leg.ringTimeoutSeconds * 1000;
    await publishCarrierEvent(events, sandboxEvent(leg, 'ended', at, 'no_answer', 1), { delayMs: at - now });
  } else if (leg.status === 'ANSWERED' && leg.lastSeq < 2 && i.answeredAt) {
    const at = Date.parse(i.answeredAt) + (i.talkSeconds ?? SANDBOX_INBOUND_TALK_SECONDS) * 1000 * timeScale;
    await publishCarrierEvent(events, sandboxEvent(leg, 'ended', at, 'completed', 2), { delayMs: at - now });
  }
}

/** A browser accepted the rung sandbox inbound call: its no_answer is withdrawn, then the caller answers (1) and
 *  hangs up (2) after its talk time. False when the no_answer could not be withdrawn (it is being applied right now,
 *  or was: the call ends NO_ANSWER, and nothing is published). */
export async function answerSandboxInbound(events: Queue, flows: FlowProducer, call: SandboxInboundCall, now = Date.now()): Promise<boolean> {
  const leg = callerRef(call);
  let removed: number;
  try {
    removed = await events.remove(sequencedEventJobId(leg.legId, 1));
  } catch {
    return false; // locked by a worker applying it
  }
  if (removed !== 1) return false;
  const talk = call.legs.destination?.talk_seconds ?? SANDBOX_INBOUND_TALK_SECONDS;
  const end = now + talk * 1000 * call.time_scale;
  await publishCarrierEvents(flows, events, [
    { ev: sandboxEvent(leg, 'answered', now, undefined, 1) },
    { ev: sandboxEvent(leg, 'ended', end, 'completed', 2), delayMs: end - now },
  ]);
  return true;
}
