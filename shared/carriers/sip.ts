// The SIP trunk carrier (CARRIER=sip), workers' side. SIP dialogs live in the signaling processes (signaling/sip/):
// this carrier only hands each command to the signaling process that owns the leg.
//
//  - Owner: the first command about a leg records its owner in Redis (sipOwnerKey, SET NX, so concurrent commands
//    agree): the owner of the call's other leg when it is alive (both legs of a bridge share one process and one media
//    session), else a live SIP-capable signaling process picked at random from SIP_INSTANCES (each one refreshes its
//    own entry with its heartbeat). A hang-up that comes before any originate records the tombstone NO_LEG instead:
//    the leg is reported ended (local_hangup) here, and a late originate finds the tombstone and dials nothing.
//  - Delivery: one BullMQ queue per signaling process (sipCommandQueue), with deterministic job ids, so a repeated
//    command is dropped by BullMQ while the first one is kept; the owner applies each command idempotently anyway.
//  - Events: the owner publishes the leg's events (ringing; answered and ended numbered 1, 2) on the carrier-events
//    queue. See docs/reference/sip-trunking.md.
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { SipSettings } from '../config.ts';
import type { QueueRegistry } from '../queues/registry.ts';
import type { Keyer } from '../redis.ts';
import {
  CARRIER_EVENTS_QUEUE, legId as legIdOf, publishCarrierEvent, type AsyncFailureCode, type BridgeRequest, type Carrier, type LegRef,
  type LegRole, type OriginateRequest,
} from './carrier.ts';

export const SIP_CARRIER = 'sip';

/** The owner key's value for a leg hung up before it was ever originated. */
export const NO_LEG = '-';
/** Owner records outlive any call (the longest is 3 hours). */
const OWNER_TTL_SECONDS = 86_400;

/** Sorted set of the live SIP-capable signaling processes: member = instance id, score = when its entry lapses (ms). */
export const sipInstancesKey = (key: Keyer) => key('sip', 'instances');
export const sipOwnerKey = (key: Keyer, legId: string) => key('sip', 'owner', legId);
/** The command queue of one signaling process. */
export const sipCommandQueue = (instance: string) => `sip-commands-${instance}`;

export type SipCommand =
  | { kind: 'originate'; req: OriginateRequest }
  | { kind: 'hangup'; leg: LegRef }
  | { kind: 'bridge'; req: BridgeRequest };

/** Deterministic job id of a command: a repeat while the first is kept is a no-op. */
export const sipCommandJobId = (c: SipCommand) =>
  c.kind === 'originate' ? `originate-${c.req.legId}` : c.kind === 'hangup' ? `hangup-${c.leg.legId}` : `bridge-${c.req.callId}`;

const COMMAND_JOB_OPTIONS = { attempts: 1, removeOnComplete: { age: 3600, count: 50_000 }, removeOnFail: { age: 86_400 } };

/** SIP final responses to the reference's asynchronous outcomes (docs/reference/sip-trunking.md). */
export function sipFailureOutcome(status: number): AsyncFailureCode {
  if (status === 486 || status === 600) return 'busy';
  if (status === 408 || status === 480 || status === 487) return 'no_answer';
  if (status === 403 || status === 603) return 'call_declined';
  if (status === 404 || status === 410 || status === 484 || status === 604) return 'number_unreachable';
  return 'carrier_rejected';
}

/** A number as the trunk wants it in SIP user parts (SIP_USER_FORMAT). */
export const sipUser = (e164: string, format: SipSettings['userFormat']) => (format === 'digits' ? e164.replace(/^\+/, '') : e164);

export class SipCarrier implements Carrier {
  readonly name = SIP_CARRIER;
  readonly timeScale = 1;
  readonly pricePerMinuteCents: number;
  /** queues: the process's registry, which holds (and closes) one command queue per signaling process. */
  private readonly events: Queue;

  constructor(private readonly redis: Redis, private readonly key: Keyer, private readonly queues: QueueRegistry, settings: SipSettings) {
    this.events = queues.get(CARRIER_EVENTS_QUEUE);
    this.pricePerMinuteCents = settings.pricePerMinuteCents;
  }

  async originate(req: OriginateRequest): Promise<void> {
    const owner = await this.claimOwner(req.callId, req.legId, req.role);
    if (owner === NO_LEG) return; // hung up before it was dialed
    await this.deliver(owner, { kind: 'originate', req });
  }

  async hangup(leg: LegRef): Promise<void> {
    const claimed = await this.redis.set(sipOwnerKey(this.key, leg.legId), NO_LEG, 'EX', OWNER_TTL_SECONDS, 'NX');
    if (claimed === 'OK') {
      // Never handed to a signaling process: nothing rings; its only event is this end.
      await publishCarrierEvent(this.events, {
        carrier: this.name, callId: leg.callId, legId: leg.legId, role: leg.role, kind: 'ended', reason: 'local_hangup',
        at: new Date().toISOString(), seq: 1,
      });
      return;
    }
    const owner = await this.redis.get(sipOwnerKey(this.key, leg.legId));
    if (owner && owner !== NO_LEG) await this.deliver(owner, { kind: 'hangup', leg });
  }

  /** The destination leg's owner joins the legs' audio in the call's media session. */
  async bridge(req: BridgeRequest): Promise<void> {
    const owner = await this.redis.get(sipOwnerKey(this.key, req.destination.legId));
    if (!owner || owner === NO_LEG) throw new Error(`bridge of call ${req.callId}: its destination leg has no owner`);
    await this.deliver(owner, { kind: 'bridge', req });
  }

  /** The leg's owner: the recorded one, else the other leg's when alive, else a live SIP signaling process. */
  private async claimOwner(callId: string, legId: string, role: LegRole): Promise<string> {
    const ownerKey = sipOwnerKey(this.key, legId);
    const recorded = await this.redis.get(ownerKey);
    if (recorded) return recorded;
    const live = await this.redis.zrangebyscore(sipInstancesKey(this.key), Date.now(), '+inf');
    if (!live.length) throw new Error('no live signaling process runs the SIP user agent');
    const other = role === 'connect' ? 'destination' : 'connect';
    const sibling = await this.redis.get(sipOwnerKey(this.key, legIdOf(callId, other)));
    const candidate = sibling && live.includes(sibling) ? sibling : live[Math.floor(Math.random() * live.length)];
    if ((await this.redis.set(ownerKey, candidate, 'EX', OWNER_TTL_SECONDS, 'NX')) === 'OK') return candidate;
    return (await this.redis.get(ownerKey)) ?? candidate;
  }

  private async deliver(instance: string, command: SipCommand): Promise<void> {
    await this.queues.get<SipCommand>(sipCommandQueue(instance)).add(command.kind, command, { ...COMMAND_JOB_OPTIONS, jobId: sipCommandJobId(command) });
  }
}
