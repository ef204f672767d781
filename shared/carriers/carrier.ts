// The carrier interface: how the platform reaches the public telephone network for calls.
//
// A carrier does three things on command — originate a leg, hang up a leg, bridge two legs — and reports what
// happens to each leg as CarrierEvents on one BullMQ queue (CARRIER_EVENTS_QUEUE). The workers' carrier-events
// processor feeds those events to the call state machine (shared/calls/machine.ts); nothing else reads them.
//
// Contract for implementations:
//  - Commands are idempotent per leg id: the workers may repeat a command after a crash or a retry, and a repeat
//    must not place a second leg, nor fail because the first one already happened. Hanging up a leg that already
//    ended is a no-op.
//  - Commands return when the carrier accepted them; progress is asynchronous, through events only.
//  - Events may arrive late, twice, or after the call ended; the state machine ignores what no longer applies.
//    Each leg reports at most: ringing, answered, ended (with a reason). A leg that ends before answering says why
//    with one of the reference's asynchronous outcome codes; after answering it ends 'completed' (the far party
//    hung up), 'screened' (the recipient reported screening) or 'local_hangup' (we hung it up).
//  - `at` is when it happened at the carrier (ISO 8601), which may differ from when the event is processed.
//
// Implementations: sandbox.ts (the default; deterministic outcomes from the dialed number, timers as delayed
// jobs). A `livekit` carrier satisfies the same interface with SipClient.createSipParticipant (originate: one SIP
// participant per leg in a room named after the call, participant identity = leg id; hangup: remove the
// participant; bridge: both participants share the call's room) and maps LiveKit webhooks to CarrierEvents with
// publishCarrierEvent().
import type { FlowProducer, Queue } from 'bullmq';
import { DURABLE_JOB_OPTIONS } from '../jobs.ts';
import type { Agent } from '../agents/agents.ts';

export const CARRIER_EVENTS_QUEUE = 'carrier-events';

/** A bridge rings the staff phone (`connect`) and then the called party (`destination`); an AI call has only a
 *  destination leg, which talks to the agent. A browser call adds a `browser` leg (the softphone's WebSocket),
 *  which signaling owns: the carrier never sees it. */
export type LegRole = 'connect' | 'destination' | 'browser';

/** The reference's asynchronous call outcomes (failure_code on the call and phone_call.ended). */
export type AsyncFailureCode =
  | 'busy' | 'no_answer' | 'number_unreachable' | 'call_declined' | 'carrier_rejected' | 'voicemail_reached';
export const ASYNC_FAILURE_CODES: AsyncFailureCode[] =
  ['busy', 'no_answer', 'number_unreachable', 'call_declined', 'carrier_rejected', 'voicemail_reached'];

export type LegEndReason = 'completed' | 'screened' | 'local_hangup' | AsyncFailureCode;

/** Stable id of a leg: the call id and the leg's role. */
export const legId = (callId: string, role: LegRole) => `${callId}-${role}`;

export interface LegRef {
  callId: string;
  role: LegRole;
  /** legId(callId, role). */
  legId: string;
  /** The number this leg dials (E.164). */
  number: string;
}


export interface HangupRef extends LegRef {
  endRecorded?: boolean;
  /** The highest numbered event of the leg already applied (those are history: nothing to cancel). */
  lastSeq?: number;
}

export interface OriginateRequest extends LegRef {
  /** Caller ID presented to the called phone; on a bridge both legs present the organization's from_number, so
   *  the called party only ever sees from_number. */
  from: string;
  /** Give up after ringing this long (the leg then ends with no_answer). */
  ringTimeoutSeconds: number;
  /** Upper bound the carrier may also enforce (the platform ends the call itself at the limit). */
  maxDurationSeconds: number;
  record: boolean;
  /** AI calls: the agent to connect when the leg answers. */
  agent?: Agent;
}

/** A live leg as PostgreSQL recorded it, for Carrier.resume. */
export interface ResumedLeg extends LegRef {
  status: 'DIALING' | 'RINGING' | 'ANSWERED';
  /** When it was originated (ISO 8601). */
  originatedAt: string;
  /** The highest numbered event of the leg already applied (0: none). */
  lastSeq: number;
  ringTimeoutSeconds: number;
  /** The caller's leg of an inbound call (role destination): when the call was created and answered, and the talk
   *  time a sandbox call rung in browsers was given (shared/carriers/sandbox.ts). */
  inbound?: { createdAt: string; answeredAt: string | null; talkSeconds: number | null };
}

export interface BridgeRequest {
  callId: string;
  connect: LegRef;
  destination: LegRef;
  /** When the platform decided to bridge (ISO 8601). */
  at: string;
}

export type CarrierEventKind = 'ringing' | 'answered' | 'ended';

export interface CarrierEvent {
  carrier: string;
  callId: string;
  legId: string;
  role: LegRole;
  kind: CarrierEventKind;
  /** For kind 'ended'. */
  reason?: LegEndReason;
  /** When it happened at the carrier (ISO 8601). */
  at: string;
  /** Optional: this event's position among the leg's events (1, 2, 3, ...). The workers apply event n only once
   *  n-1 was applied or is known lost (its job, `sequencedEventJobId(legId, n-1)`, no longer exists or failed for
   *  good), however long that takes: queued events can be taken out of order, e.g. after a crash left the
   *  predecessor's job locked by a dead process. Events without seq are applied as they come. */
  seq?: number;
}

export interface Carrier {
  readonly name: string;
  /** Real seconds per carrier second: the sandbox's SANDBOX_TIME_SCALE, 1 for a real network. Call durations are
   *  reported in carrier seconds. */
  readonly timeScale: number;
  /** Price of one started minute of one answered leg, in cents. */
  readonly pricePerMinuteCents: number;
  originate(req: OriginateRequest): Promise<void>;
  /** endRecorded: the platform already recorded the leg ended (only carriers whose traits say they hang up at
   *  once, shared/carriers/traits.ts): cancel what the leg still has scheduled, report no end. */
  hangup(leg: HangupRef): Promise<void>;
  bridge(req: BridgeRequest): Promise<void>;
  /** Whether events of these legs that happened at or before `atMs` are still waiting to be applied (a backlog
   *  after the workers were down). A late call-length timer yields to them so the call ends the way it really did.
   *  Optional: carriers that cannot tell are given a fixed grace period instead. */
  hasPendingEventsBefore?(legIds: string[], atMs: number): Promise<boolean>;
  /** After Redis lost its state: queues again what the carrier still has to report for a live leg, timed as first
   *  scheduled and under the same job ids (so an event still queued is not doubled). Optional: a carrier whose legs
   *  live outside Redis (a real network) keeps reporting on its own; the workers then repeat the originate command
   *  of a leg still dialing instead (commands are idempotent per leg). */
  resume?(leg: ResumedLeg): Promise<void>;
}

/** The job id of a leg's numbered event: deterministic, so the workers can look its predecessor's job up. */
export const sequencedEventJobId = (legId: string, seq: number) => `ev-${legId}-${seq}`;

/** Puts one carrier event on the queue, now or after `delayMs`. A numbered event (seq) always gets
 *  sequencedEventJobId as its job id (a repeat is a no-op); `dedupId` (no ':' allowed) does that for the others. */
export async function publishCarrierEvent(queue: Queue, ev: CarrierEvent, opts: { delayMs?: number; dedupId?: string } = {}) {
  await queue.add(ev.kind, ev, carrierEventJobOpts(ev, opts));
}

function carrierEventJobOpts(ev: CarrierEvent, opts: { delayMs?: number; dedupId?: string }) {
  return {
    ...DURABLE_JOB_OPTIONS,
    delay: opts.delayMs && opts.delayMs > 0 ? Math.round(opts.delayMs) : undefined,
    jobId: ev.seq !== undefined ? sequencedEventJobId(ev.legId, ev.seq) : opts.dedupId,
  };
}

/** Puts several carrier events on the queue in one Redis transaction (MULTI): all of them or none, even when the
 *  process dies mid-call. A leg's scripted answer must never be published without its scripted end: the end is
 *  what a late call-length timer waits for, and a repeat of the command (after a crash) would time the missing
 *  events from the repeat instead of the original. Job ids and options are those of publishCarrierEvent. */
export async function publishCarrierEvents(flows: FlowProducer, queue: Queue, events: { ev: CarrierEvent; delayMs?: number; dedupId?: string }[]) {
  if (!events.length) return;
  await flows.addBulk(events.map(({ ev, ...opts }) => ({
    name: ev.kind, queueName: queue.name, prefix: queue.opts.prefix, data: ev, opts: carrierEventJobOpts(ev, opts),
  })));
}
