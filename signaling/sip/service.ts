// The SIP trunk carrier inside a signaling process (CARRIER=sip): the user agent on SIP_LISTEN, the legs this process
// owns, the command queue the workers' SipCarrier (shared/carriers/sip.ts) feeds, and the leg events it publishes.
// It announces itself in SIP_INSTANCES with the signaling heartbeat, so the workers only hand legs to live processes.
// RTP is the media process's: each leg gets a port in the call's `sip` media session, closed when the leg ends; the
// session closes with the call's last leg here.
import { Worker } from 'bullmq';
import type { CarrierEvent, LegEndReason } from '../../shared/carriers/carrier.ts';
import { publishCarrierEvent } from '../../shared/carriers/carrier.ts';
import { SIP_CARRIER, sipCommandQueue, sipInstancesKey, type SipCommand } from '../../shared/carriers/sip.ts';
import type { CallRuntime } from '../../shared/calls/runtime.ts';
import type { Logger } from '../../shared/log.ts';
import type { MediaLink } from '../media.ts';
import { HEARTBEAT_MS, HEARTBEAT_TTL_MS } from '../reconciler.ts';
import { OutboundLeg, type LegHost } from './outbound-leg.ts';
import { SipUserAgent } from './user-agent.ts';

/** Ended legs are remembered this long, so a repeated command stays a no-op (the command jobs are kept as long). */
const FORGET_AFTER_MS = 3_600_000;
/** Attempts at publishing one event while Redis is unreachable. */
const PUBLISH_ATTEMPTS = 6;

export class SipService {
  readonly ua: SipUserAgent;
  private readonly legs = new Map<string, OutboundLeg>();
  private readonly publishing = new Set<Promise<void>>();
  private worker: Worker | null = null;
  private timers: NodeJS.Timeout[] = [];
  /** What each leg asks of this process. */
  private readonly host: LegHost;

  constructor(private readonly rt: CallRuntime, private readonly instance: string, private readonly media: MediaLink, private readonly log: Logger) {
    this.ua = new SipUserAgent(rt.deps.config.sip!, log);
    this.host = {
      ua: this.ua,
      log,
      openMedia: async (leg) => {
        const r = leg.req;
        // The session outlives the longest call (ringing twice on a bridge, then talking) and then closes itself.
        await media.client.createSession(r.callId, { carrier: 'sip', maxDurationMs: (r.maxDurationSeconds + 2 * r.ringTimeoutSeconds + 60) * 1000 });
        const created = await media.client.createCarrierLeg(r.callId, r.legId);
        return { ip: created.ip, port: created.port };
      },
      connectMedia: async (leg, far) => { await media.client.connectCarrierLeg(leg.callId, leg.legId, far); },
      publish: (leg, kind, reason, seq) => this.publish(leg, kind, reason, seq),
      release: (leg) => void this.releaseMedia(leg),
    };
  }

  /** What the ready line says about SIP. */
  get address(): string { return `${this.rt.deps.config.sip!.listen.host}:${this.ua.port}`; }

  async start(): Promise<void> {
    const { redis, config } = this.rt.deps;
    await this.ua.start();
    // The media process lost the call's session (or restarted): its legs have no audio any more.
    this.media.on('session_closed', (callId) => this.hangUpCall(callId, 'media session closed'));
    this.media.on('lost', () => { for (const leg of this.legs.values()) if (leg.live) this.hangUpCall(leg.callId, 'media lost'); });
    this.media.start();
    const announce = () => redis.zadd(sipInstancesKey(this.rt.deps.key), Date.now() + HEARTBEAT_TTL_MS, this.instance);
    await announce();
    this.timers.push(setInterval(() => {
      announce().catch((err) => this.log.warn({ err }, 'SIP heartbeat failed'));
      void redis.zremrangebyscore(sipInstancesKey(this.rt.deps.key), '-inf', Date.now() - HEARTBEAT_TTL_MS).catch(() => undefined);
    }, HEARTBEAT_MS));
    this.timers.push(setInterval(() => this.forgetOldLegs(), 60_000));
    this.worker = new Worker(sipCommandQueue(this.instance), (job) => this.command(job.data as SipCommand), {
      connection: redis.duplicate({ maxRetriesPerRequest: null }), prefix: config.redisPrefix, concurrency: 256,
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
      '# HELP openline_sip_legs_live SIP legs of this process not ended yet.',
      '# TYPE openline_sip_legs_live gauge',
      `openline_sip_legs_live ${live}`,
    ];
  }

  /** Stops taking commands, hangs up every live leg (their ends are published), then closes the user agent. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await this.worker?.close();
    for (const leg of this.legs.values()) leg.hangup();
    await Promise.allSettled([...this.publishing]);
    await this.rt.deps.redis.zrem(sipInstancesKey(this.rt.deps.key), this.instance).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100)); // the CANCELs and BYEs leave the socket
    await this.ua.stop();
    this.media.stop();
  }

  private async command(c: SipCommand): Promise<string> {
    switch (c.kind) {
      case 'originate': {
        if (this.legs.has(c.req.legId)) return 'repeat';
        const leg = new OutboundLeg(c.req, this.host);
        this.legs.set(leg.legId, leg);
        void leg.start();
        return 'originated';
      }
      case 'hangup': {
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
        try {
          await this.media.client.bridge(callId, [connect.legId, destination.legId]);
          return 'bridged';
        } catch (err) {
          // Legs that cannot hear each other (e.g. one answered PCMU, the other PCMA) are not left connected.
          this.log.error({ err, call_id: callId }, 'bridging the SIP legs failed: hanging the call up');
          this.hangUpCall(callId, 'bridge failed');
          return 'failed';
        }
      }
    }
  }

  private hangUpCall(callId: string, why: string): void {
    for (const leg of this.legs.values()) {
      if (leg.callId !== callId || !leg.live) continue;
      this.log.warn({ leg_id: leg.legId, why }, 'hanging up a SIP leg');
      leg.hangup();
    }
  }

  private async releaseMedia(leg: OutboundLeg): Promise<void> {
    const client = this.media.client;
    await client.closeCarrierLeg(leg.callId, leg.legId).catch(() => undefined); // not_found: it never had one
    const others = [...this.legs.values()].some((l) => l !== leg && l.callId === leg.callId && l.live);
    if (!others) await client.closeSession(leg.callId).catch(() => undefined);
  }

  private publish(leg: OutboundLeg, kind: CarrierEvent['kind'], reason?: LegEndReason, seq?: number): void {
    const ev: CarrierEvent = {
      carrier: SIP_CARRIER, callId: leg.callId, legId: leg.legId, role: leg.req.role, kind, reason, at: new Date().toISOString(), seq,
    };
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

  private forgetOldLegs(): void {
    const before = Date.now() - FORGET_AFTER_MS;
    for (const [id, leg] of this.legs) if (leg.endedAt !== null && leg.endedAt < before) this.legs.delete(id);
  }
}
