// The SIP trunk carrier inside a signaling process (CARRIER=sip): the user agent on SIP_LISTEN, the legs this process
// owns, the command queue the workers' SipCarrier (shared/carriers/sip.ts) feeds, and the leg events it publishes.
// It announces itself in SIP_INSTANCES with the signaling heartbeat, so the workers only hand legs to live processes.
// RTP is the media process's: each leg gets a port in the call's `sip` media session, closed when the leg ends; the
// session closes with the call's last leg here.
// Crashes: each answered leg's dialog is recorded in Redis (dialog-record.ts) so that, when this process dies, a
// surviving one ends its calls and sends their BYEs (reconcileSipOrphans in ../reconciler.ts, run here every
// RECONCILE_MS). When the media process is lost, this process ends the calls `media_lost` and hangs their legs up.
// Inbound INVITEs are routed in inbound.ts (this directory).
import { Worker } from 'bullmq';
import type { CarrierEvent, LegEndReason } from '../../shared/carriers/carrier.ts';
import { legId as legIdOf, publishCarrierEvent, type LegRole } from '../../shared/carriers/carrier.ts';
import { SIP_CARRIER, sipCommandQueue, sipInstancesKey, type SipCommand } from '../../shared/carriers/sip.ts';
import { InboundRouter } from './inbound.ts';
import type { InboundHost, InboundLeg } from './inbound-leg.ts';
import type { Answer } from './sdp.ts';
import type { CallRuntime } from '../../shared/calls/runtime.ts';
import { MediaControlError } from '../../shared/media/control-client.ts';
import type { Logger } from '../../shared/log.ts';
import { queuePrefix, type Redis } from '../../shared/redis.ts';
import type { MediaFleet } from '../media-fleet.ts';
import { HEARTBEAT_MS, HEARTBEAT_TTL_MS, RECONCILE_MS, reconcileSipOrphans, type SipOrphanHost } from '../reconciler.ts';
import { forgetDialog, saveDialog, sendRecoveredBye, sendRecoveredCancel, type DialogState } from './dialog-record.ts';
import { OutboundLeg, type LegHost } from './outbound-leg.ts';
import { SipUserAgent } from './user-agent.ts';

/** Ended legs are remembered this long, so a repeated command stays a no-op (the command jobs are kept as long). */
const FORGET_AFTER_MS = 3_600_000;
/** How often ended legs are moved out of `legs` (and forgotten after FORGET_AFTER_MS). */
const SWEEP_MS = 10_000;
/** Every role a leg of a call can have (leg ids are `<call id>-<role>`). */
const LEG_ROLES: LegRole[] = ['connect', 'destination', 'browser'];
/** Attempts at publishing one event while Redis is unreachable. */
const PUBLISH_ATTEMPTS = 6;

export class SipService {
  readonly ua: SipUserAgent;
  private readonly legs = new Map<string, OutboundLeg | InboundLeg>();
  /** Legs that ended, by id: when (ms). The sweep moves ended legs here so a repeated command about them stays a
   *  no-op without keeping each whole leg for an hour (at 200 calls/s that is 1.4 million legs); the SIP work an
   *  ended leg still has (a 487, late retransmissions) lives in the user agent meanwhile. */
  private readonly ended = new Map<string, number>();
  private readonly inbound: InboundRouter;
  private readonly publishing = new Set<Promise<void>>();
  private worker: Worker | null = null;
  private workerConnection: Redis | null = null;
  private timers: NodeJS.Timeout[] = [];
  /** What each leg asks of this process (outbound and inbound legs alike). */
  private readonly host: LegHost & Omit<InboundHost, 'stopRinging'>;
  private readonly allowCidrs: string[];

  constructor(private readonly rt: CallRuntime, private readonly instance: string, private readonly media: MediaFleet, private readonly log: Logger) {
    this.ua = new SipUserAgent(rt.deps.config.sip!, log);
    this.allowCidrs = rt.deps.config.sip!.allow.map((c) => `${c.address}/${c.prefix}`);
    this.host = {
      ua: this.ua,
      log,
      openMedia: async (leg: OutboundLeg | InboundLeg) => {
        const r = leg.req;
        // The session outlives the longest call (ringing twice on a bridge, then talking) and then closes itself.
        await media.createSession(r.callId, { carrier: 'sip', maxDurationMs: (r.maxDurationSeconds + 2 * r.ringTimeoutSeconds + 60) * 1000, record: ('record' in r && r.record) || undefined });
        const created = await (await media.clientOf(r.callId)).createCarrierLeg(r.callId, r.legId);
        return { ip: created.ip, port: created.port, rtcpPort: created.rtcpPort };
      },
      // With SIP_RTP_LATCHING, RTP from anywhere inside SIP_TRUNK_ALLOW latches the leg (media/rtp-relay.ts).
      connectMedia: async (leg: OutboundLeg | InboundLeg, far: Answer) => { await (await media.clientOf(leg.callId)).connectCarrierLeg(leg.callId, leg.legId, { ...far, allow: this.allowCidrs }); },
      publish: (leg: OutboundLeg | InboundLeg, kind: CarrierEvent['kind'], reason?: LegEndReason, seq?: number) => this.publish(leg, kind, reason, seq),
      release: (leg: OutboundLeg | InboundLeg) => void this.releaseMedia(leg),
      recordPending: (leg: OutboundLeg) => this.writeDialog(leg, leg.pendingState(), leg.req.ringTimeoutSeconds + 60),
    };
    this.inbound = new InboundRouter(rt, instance, this.host, this.legs, log);
  }

  /** What the ready line says about SIP. */
  get address(): string { return `${this.rt.deps.config.sip!.listen.host}:${this.ua.port}`; }
  /** Where the TLS listener is (null: the trunk does not speak TLS). */
  get tlsAddress(): string | null { return this.ua.transport.tlsPort ? `${this.rt.deps.config.sip!.listen.host}:${this.ua.transport.tlsPort}` : null; }

  async start(): Promise<void> {
    const { redis, config } = this.rt.deps;
    await this.ua.start();
    await this.inbound.start();
    // The media process lost the call's session (or restarted): its legs have no audio any more.
    this.media.on('session_closed', (callId) => this.mediaLost(callId, 'media session closed'));
    this.media.on('lost', (_reason, carries) => {
      for (const callId of new Set([...this.legs.values()].filter((l) => l.live && carries(l.callId)).map((l) => l.callId))) this.mediaLost(callId, 'media lost');
    });
    const announce = () => redis.zadd(sipInstancesKey(this.rt.deps.key), Date.now() + HEARTBEAT_TTL_MS, this.instance);
    await announce();
    this.timers.push(setInterval(() => {
      announce().catch((err) => this.log.warn({ err }, 'SIP heartbeat failed'));
      void redis.zremrangebyscore(sipInstancesKey(this.rt.deps.key), '-inf', Date.now() - HEARTBEAT_TTL_MS).catch(() => undefined);
    }, HEARTBEAT_MS));
    this.timers.push(setInterval(() => this.sweepLegs(), SWEEP_MS));
    // BullMQ leaves a connection it was handed open: stop() quits it after the Worker closed.
    this.workerConnection = redis.duplicate({ maxRetriesPerRequest: null });
    this.timers.push(setInterval(() => this.sweepOrphans(), RECONCILE_MS));
    this.worker = new Worker(sipCommandQueue(this.instance), (job) => this.command(job.data as SipCommand), {
      connection: this.workerConnection, prefix: queuePrefix(config), concurrency: 256,
    });
    this.worker.on('failed', (job, err) => this.log.warn({ job: job?.id, err: err.message }, 'SIP command failed'));
  }

  /** Prometheus lines of this process's SIP side (signaling /metrics). */
  metrics(): string[] {
    const t = this.ua.transport.counts;
    const live = [...this.legs.values()].filter((l) => l.live).length;
    return [
      '# HELP openline_sip_messages_received_total SIP messages taken by the transport (well-formed, any sender).',
      '# TYPE openline_sip_messages_received_total counter',
      `openline_sip_messages_received_total ${t.received}`,
      '# HELP openline_sip_messages_dropped_total SIP input dropped unanswered: malformed, too large, or a TCP peer outside SIP_TRUNK_ALLOW.',
      '# TYPE openline_sip_messages_dropped_total counter',
      `openline_sip_messages_dropped_total ${t.dropped}`,
      '# HELP openline_sip_requests_refused_total Requests from outside SIP_TRUNK_ALLOW (answered 403).',
      '# TYPE openline_sip_requests_refused_total counter',
      `openline_sip_requests_refused_total ${this.ua.counts.refused}`,
      '# HELP openline_sip_requests_unmatched_total In-dialog requests, BYEs and CANCELs that matched no dialog (answered 481).',
      '# TYPE openline_sip_requests_unmatched_total counter',
      `openline_sip_requests_unmatched_total ${this.ua.counts.unmatched}`,
      '# HELP openline_sip_inbound_invites_total New INVITEs from inside SIP_TRUNK_ALLOW, by how they were answered.',
      '# TYPE openline_sip_inbound_invites_total counter',
      ...Object.entries(this.inbound.counts).map(([answer, n]) => `openline_sip_inbound_invites_total{answer="${answer}"} ${n}`),
      '# HELP openline_sip_legs_live SIP legs of this process not ended yet.',
      '# TYPE openline_sip_legs_live gauge',
      `openline_sip_legs_live ${live}`,
    ];
  }

  /** Stops taking commands, hangs up every live leg (their ends are published), then closes the user agent. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await this.worker?.close();
    await this.workerConnection?.quit().catch(() => this.workerConnection?.disconnect());
    for (const leg of this.legs.values()) leg.hangup();
    await Promise.allSettled([...this.publishing]);
    await this.rt.deps.redis.zrem(sipInstancesKey(this.rt.deps.key), this.instance).catch(() => undefined);
    await this.inbound.stop();
    await new Promise((r) => setTimeout(r, 100)); // the CANCELs and BYEs leave the socket
    await this.ua.stop();
  }

  private async command(c: SipCommand): Promise<string> {
    switch (c.kind) {
      case 'originate': {
        if (this.legs.has(c.req.legId) || this.ended.has(c.req.legId)) return 'repeat';
        const leg = new OutboundLeg(c.req, this.host);
        this.legs.set(leg.legId, leg);
        void leg.start();
        return 'originated';
      }
      case 'hangup': {
        if (this.ended.has(c.leg.legId)) return 'hung_up';
        const leg = this.legs.get(c.leg.legId);
        if (leg) { leg.hangup(); return 'hung_up'; }
        // The hang-up overtook its originate: remember the leg as over, so the originate dials nothing.
        const tombstone = new OutboundLeg({ ...c.leg, from: '', ringTimeoutSeconds: 0, maxDurationSeconds: 0, record: false }, this.host);
        this.legs.set(tombstone.legId, tombstone);
        tombstone.tombstone();
        return 'tombstone';
      }
      case 'bridge': {
        const { callId, connect, destination } = c.req;
        // A leg ended before the command arrived (e.g. a far-end BYE right after answering): nothing to join.
        if (![connect, destination].every((l) => this.legs.get(l.legId)?.live)) return 'ended';
        try {
          await (await this.media.clientOf(callId)).bridge(callId, [connect.legId, destination.legId]);
          return 'bridged';
        } catch (err) {
          // The media process is gone (it died between the answer and this command): the call ends media_lost.
          if (err instanceof MediaControlError && (err.code === 'unreachable' || err.code === 'not_found')) {
            this.mediaLost(callId, `bridge failed: ${err.code}`);
            return 'media_lost';
          }
          // Legs that cannot hear each other (e.g. one answered PCMU, the other PCMA) are not left connected.
          this.log.error({ err, call_id: callId }, 'bridging the SIP legs failed: hanging the call up');
          this.hangUpCall(callId, 'bridge failed');
          return 'failed';
        }
      }
    }
  }

  /** The call's media is gone: the call ends `media_lost` (before its legs' own ends would say local_hangup), then
   *  its legs are hung up (BYE / CANCEL). */
  private mediaLost(callId: string, why: string): void {
    if (!this.legsOf(callId).some((l) => l.live)) return;
    void this.rt.transition(callId, { type: 'abandon', reason: 'media_lost', at: new Date() }, { bestEffort: true })
      .catch((err) => this.log.error({ err, call_id: callId }, 'ending a call whose media is lost failed'))
      .finally(() => this.hangUpCall(callId, why));
  }

  private sweeping = false;
  private readonly orphanHost: SipOrphanHost = {
    hangUp: (rec) => {
      const { pendingInvite } = rec;
      const [sent, what] = pendingInvite ? [sendRecoveredCancel(this.ua, { ...rec, pendingInvite }), 'CANCEL'] : [sendRecoveredBye(this.ua, rec), 'BYE'];
      void sent.then((status) =>
        this.log.warn({ leg_id: rec.legId, owner: rec.owner, status }, `sent the ${what} of a SIP leg whose signaling process died`));
    },
    closeMedia: async (callId) => { await this.media.closeSession(callId); },
  };

  private sweepOrphans(): void {
    if (this.sweeping) return;
    this.sweeping = true;
    reconcileSipOrphans(this.rt, this.orphanHost)
      .then((r) => { if (r?.legs) this.log.warn(r, 'ended the SIP legs of a signaling process that is gone'); })
      .catch((err) => this.log.error({ err }, 'SIP orphan sweep failed'))
      .finally(() => { this.sweeping = false; });
  }

  /** The call's legs this process runs, looked up by leg id (no scan of `legs`, which holds every leg of the
   *  last SWEEP_MS: at hundreds of calls per second a scan per leg end adds up). */
  private legsOf(callId: string): (OutboundLeg | InboundLeg)[] {
    return LEG_ROLES.map((role) => this.legs.get(legIdOf(callId, role))).filter((l): l is OutboundLeg | InboundLeg => !!l);
  }

  private hangUpCall(callId: string, why: string): void {
    for (const leg of this.legsOf(callId)) {
      if (!leg.live) continue;
      this.log.warn({ leg_id: leg.legId, why }, 'hanging up a SIP leg');
      leg.hangup();
    }
  }

  private async releaseMedia(leg: OutboundLeg | InboundLeg): Promise<void> {
    await this.media.clientOf(leg.callId).then((client) => client.closeCarrierLeg(leg.callId, leg.legId)).catch(() => undefined); // not_found: it never had one
    const others = this.legsOf(leg.callId).some((l) => l !== leg && l.live);
    if (!others) await this.media.closeSession(leg.callId).catch(() => undefined);
  }

  private publish(leg: OutboundLeg | InboundLeg, kind: CarrierEvent['kind'], reason?: LegEndReason, seq?: number): void {
    const ev: CarrierEvent = {
      carrier: SIP_CARRIER, callId: leg.callId, legId: leg.legId, role: leg.req.role, kind, reason, at: new Date().toISOString(), seq,
    };
    this.recordDialog(leg, kind);
    const queue = this.rt.queues.carrierEvents;
    const run = (async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          await publishCarrierEvent(queue, ev, kind === 'ringing' ? { dedupId: `sip-${leg.legId}-ringing` } : {});
          return;
        } catch (err) {
          if (attempt >= PUBLISH_ATTEMPTS) { this.log.error({ err, ev }, 'a SIP leg event could not be published'); return; }
          await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
        }
      }
    })();
    this.publishing.add(run);
    void run.finally(() => this.publishing.delete(run));
  }

  /** Answered: the dialog goes to Redis for a survivor (replacing the pending INVITE's record); ended: it goes away. */
  private recordDialog(leg: OutboundLeg | InboundLeg, kind: CarrierEvent['kind']): void {
    if (kind === 'answered') this.writeDialog(leg, leg.dialogState(), leg.req.maxDurationSeconds + 2 * leg.req.ringTimeoutSeconds + 60);
    else if (kind === 'ended') this.writeDialog(leg, null, 0);
  }

  /** Writes (state) or deletes (null) the leg's record for a surviving process (dialog-record.ts). */
  private writeDialog(leg: OutboundLeg | InboundLeg, state: DialogState | null, ttlSeconds: number): void {
    const { redis, key } = this.rt.deps;
    const write = state
      ? saveDialog(redis, key, { callId: leg.callId, legId: leg.legId, role: leg.req.role, owner: this.instance, ...state }, ttlSeconds)
      : forgetDialog(redis, key, leg.legId);
    write.catch((err) => this.log.warn({ err, leg_id: leg.legId }, 'SIP dialog record not written'));
  }

  private sweepLegs(): void {
    for (const [id, leg] of this.legs) if (leg.endedAt !== null) { this.legs.delete(id); this.ended.set(id, leg.endedAt); }
    // `ended` is (nearly) in order of ending: stop at the first one still to keep.
    const before = Date.now() - FORGET_AFTER_MS;
    for (const [id, at] of this.ended) { if (at >= before) break; this.ended.delete(id); }
  }
}
