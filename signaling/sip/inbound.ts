// Inbound routing of the SIP user agent (docs/reference/sip-trunking.md, "Inbound routing"). A new INVITE from inside
// SIP_TRUNK_ALLOW (the user agent answered 403 to any other, writing nothing) gets 100 Trying, then:
//   488  the offer has no usable SDP (no PCMU/PCMA over RTP/AVP), or its RTP address is outside SIP_TRUNK_ALLOW
//   404  the Request-URI's number is no ACTIVE number of any organization
//   480  the number's inbound setting is reject, or the organization's daily spend cap has no room
//   486  the organization's channels are all in use
//   503  the database or Redis failed
//   180  a ringing inbound call (shared/calls/inbound.ts): its leg (inbound-leg.ts) is owned by this process (its
//        owner key, so the workers' hang-ups reach it) and every signaling process rings the browsers listening for
//        the number (`ring` on <prefix>:calls:incoming). A browser's `taken` there makes this process answer.
// Nothing is written for any answer but 180. A CANCEL that arrives while the call is being routed is answered at
// once (200, then 487); a call routed meanwhile ends CANCELED.
import type { Redis } from 'ioredis';
import sip from 'sip';
import { legId } from '../../shared/carriers/carrier.ts';
import { sipOwnerKey } from '../../shared/carriers/sip.ts';
import { callerNumber, routeInbound } from '../../shared/calls/inbound.ts';
import type { CallRuntime } from '../../shared/calls/runtime.ts';
import type { Logger } from '../../shared/log.ts';
import { incomingChannel, publishIncoming, type IncomingNotice } from '../../shared/calls/incoming-notice.ts';
import { InboundLeg, type InboundHost } from './inbound-leg.ts';
import type { OutboundLeg } from './outbound-leg.ts';
import { readAnswer } from './sdp.ts';
import type { Remote } from './transport.ts';
import type { DialogHandler, Responder } from './user-agent.ts';

/** Owner records outlive any call (as shared/carriers/sip.ts keeps them). */
const OWNER_TTL_SECONDS = 86_400;

export class InboundRouter {
  readonly counts = { ringing: 0, unknown: 0, rejected: 0, refused: 0, unusable: 0 };
  private readonly host: InboundHost;
  private subscriber: Redis | null = null;

  constructor(private readonly rt: CallRuntime, private readonly instance: string, base: Omit<InboundHost, 'stopRinging'>,
    private readonly legs: Map<string, OutboundLeg | InboundLeg>, private readonly log: Logger) {
    const { redis, key } = rt.deps;
    this.host = {
      ...base,
      stopRinging: (leg) => void publishIncoming(redis, key, { kind: 'over', call_id: leg.callId, organization_id: leg.organizationId })
        .catch((err) => log.warn({ err, call_id: leg.callId }, 'browsers could not be told to stop ringing')),
    };
  }

  async start(): Promise<void> {
    const { redis, key } = this.rt.deps;
    this.subscriber = redis.duplicate({ enableAutoPipelining: false });
    this.subscriber.on('message', (_ch, text: string) => this.onNotice(text));
    await this.subscriber.subscribe(incomingChannel(key));
    this.host.ua.onInvite = (rq, respond, remote) => {
      this.onInvite(rq, respond, remote).catch((err) => {
        this.log.error({ err }, 'routing an inbound INVITE failed');
        respond(503, 'Service Unavailable');
      });
    };
  }

  async stop(): Promise<void> {
    this.host.ua.onInvite = null;
    await this.subscriber?.quit().catch(() => undefined);
  }

  /** A browser took a call: the leg's owner (this process, when it holds the leg) answers the caller. */
  private onNotice(text: string): void {
    let n: IncomingNotice;
    try { n = JSON.parse(text); } catch { return; }
    if (n.kind !== 'taken') return;
    const leg = this.legs.get(legId(n.call_id, 'destination'));
    if (leg instanceof InboundLeg) void leg.answer();
  }

  private async onInvite(rq: sip.Message, respond: Responder, remote: Remote): Promise<void> {
    respond(100, 'Trying');
    const ua = this.host.ua;
    // PCMU when offered: the browser that takes the call sends and receives PCMU (mediasoup does not transcode).
    const offer = readAnswer(rq.content, 'audio/PCMU');
    if ('error' in offer || !ua.allows(offer.ip)) {
      this.counts.unusable++;
      respond(488, 'Not Acceptable Here', { headers: { warning: `399 openline "${'error' in offer ? offer.error : `the RTP address ${offer.ip} is outside SIP_TRUNK_ALLOW`}"` } });
      return;
    }
    const to = dialed(rq.uri);
    if (!to) { this.counts.unknown++; respond(404, 'Not Found'); return; }
    const from = callerNumber(rq.headers.from ? sip.parseUri(rq.headers.from.uri)?.user : undefined);

    // A CANCEL while the call is routed: answered here, and the call (if one is made) ends at once.
    const sipCallId = rq.headers['call-id']!;
    let cancelled = false;
    const pending: DialogHandler = {
      matches: () => false, onRequest: () => undefined, onStray2xx: () => undefined,
      onCancel: (_c, respondCancel) => {
        respondCancel(200, 'OK');
        if (cancelled) return;
        cancelled = true;
        respond(487, 'Request Terminated');
      },
    };
    ua.register(sipCallId, pending);
    const { redis, key, config } = this.rt.deps;
    let route: Awaited<ReturnType<typeof routeInbound>>;
    try {
      route = await routeInbound(this.rt, {
        to, from, ringSeconds: config.sip!.inboundRingSeconds,
        claim: async (callId) => { await redis.set(sipOwnerKey(key, legId(callId, 'destination')), this.instance, 'EX', OWNER_TTL_SECONDS); },
      });
    } finally {
      ua.unregister(sipCallId, pending);
    }
    if (route.kind !== 'ringing') {
      if (cancelled) return;
      if (route.kind === 'unknown') { this.counts.unknown++; respond(404, 'Not Found'); return; }
      if (route.kind === 'reject') { this.counts.rejected++; respond(480, 'Temporarily Unavailable'); return; }
      this.counts.refused++;
      if (route.code === 'channel_limit_exceeded') respond(486, 'Busy Here');
      else respond(480, 'Temporarily Unavailable', { headers: { warning: '399 openline "daily spend cap reached"' } });
      return;
    }
    const call = route.call;
    const leg = new InboundLeg({
      callId: call.id, legId: legId(call.id, 'destination'), organizationId: call.organization_id,
      ringTimeoutSeconds: call.ring_timeout_seconds, maxDurationSeconds: call.max_duration_seconds,
    }, rq, respond, remote, offer, this.host);
    this.legs.set(leg.legId, leg);
    this.counts.ringing++;
    if (cancelled) { leg.cancelledEarly(); return; }
    leg.start();
    await publishIncoming(redis, key, {
      kind: 'ring', call_id: call.id, organization_id: call.organization_id, to_number: call.to_number, from_number: call.from_number,
      ring_timeout_seconds: call.ring_timeout_seconds,
    }).catch((err) => this.log.error({ err, call_id: call.id }, 'the inbound call could not ring the browsers: it rings until its timeout'));
  }
}

/** The number an INVITE's Request-URI dials (E.164; digits get a +), or null. */
function dialed(uri: string | sip.SipUri | undefined): string | null {
  const user = uri ? sip.parseUri(uri)?.user : undefined;
  const n = callerNumber(user);
  return n.startsWith('+') ? n : null;
}
