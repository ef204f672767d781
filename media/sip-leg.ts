// One SIP carrier leg of a call's router: a PlainTransport whose ports the SDP names. By default the transport listens
// on MEDIA_LISTEN_IP itself and, once the far end answered, hears RTP only from the answer's address and port; our
// patched worker (infra/mediasoup/patches.ts) takes the far end's audio whatever SSRC it sends. With SIP_RTP_LATCHING
// the transport sits on loopback behind an RTP relay (media/rtp-relay.ts) that latches to the first sender inside
// SIP_TRUNK_ALLOW (far ends behind NAT), at the cost of two more loopback crossings per packet.
// Either way connect() declares the far end's audio as a producer (the codec the answer chose, the leg's SSRC). A
// bridge (consumeFrom) makes another leg's producer play out of this leg: both legs are G.711 and mediasoup never
// transcodes, so they must share the codec.
import { randomInt } from 'node:crypto';
import { BlockList } from 'node:net';
import type { types } from 'mediasoup';
import { parseCidr } from '../shared/config.ts';
import type { CarrierLegConnect, CarrierLegCreated, CarrierLegStats, G711 } from '../shared/media/protocol.ts';
import type { MediaSettings } from '../shared/media/settings.ts';
import { ControlError } from './errors.ts';
import { RtpRelay } from './rtp-relay.ts';

/** Static payload types of G.711 (RFC 3551); the router's codecs use them too. */
export const G711_PAYLOAD_TYPES: Record<G711, number> = { 'audio/PCMU': 0, 'audio/PCMA': 8 };

const capabilitiesOf = (mimeType: G711): types.RtpCapabilities => ({
  codecs: [{ kind: 'audio', mimeType, clockRate: 8000, preferredPayloadType: G711_PAYLOAD_TYPES[mimeType], rtcpFeedback: [] }],
  headerExtensions: [],
});

export class SipLeg {
  /** Mutable once: a leg made for a browser before its SIP leg existed takes that leg's id (MediaSession). */
  legId: string;
  private producer: types.Producer | null = null;
  private mimeType: G711 | null = null;
  /** What this leg plays to its far end, by the leg it comes from. */
  private readonly consumers = new Map<string, types.Consumer>();
  private farEnd: CarrierLegConnect | null = null;

  private constructor(
    legId: string,
    private readonly transport: types.PlainTransport,
    /** The latching relay (SIP_RTP_LATCHING), or null when RTP goes straight to the transport. */
    private readonly relay: RtpRelay | null,
    private readonly ssrc: number,
    private readonly announcedIp: string,
  ) { this.legId = legId; }

  static async create(router: types.Router, legId: string, settings: MediaSettings): Promise<SipLeg> {
    const ssrc = randomInt(1, 0xffffffff);
    const announcedIp = settings.announcedIp ?? settings.listenIp;
    if (!settings.sipRtpLatching) {
      // RTCP on a port of its own (a=rtcp): a trunk's far end rarely multiplexes.
      const transport = await router.createPlainTransport({ listenIp: { ip: settings.listenIp }, rtcpMux: false, comedia: false });
      return new SipLeg(legId, transport, null, ssrc, announcedIp);
    }
    const relay = await RtpRelay.open({ listenIp: settings.listenIp, minPort: settings.rtcMinPort, maxPort: settings.rtcMaxPort, ssrc });
    try {
      const transport = await router.createPlainTransport({ listenIp: { ip: '127.0.0.1' }, rtcpMux: true, comedia: false });
      await transport.connect(relay.insideAddress);
      return new SipLeg(legId, transport, relay, ssrc, announcedIp);
    } catch (err) {
      relay.close();
      throw err;
    }
  }

  get codec(): G711 | null { return this.mimeType; }
  get producerId(): string | null { return this.producer?.id ?? null; }

  created(created: boolean): CarrierLegCreated {
    if (this.relay) return { legId: this.legId, created, ip: this.announcedIp, port: this.relay.port };
    return { legId: this.legId, created, ip: this.announcedIp, port: this.transport.tuple.localPort, rtcpPort: this.transport.rtcpTuple!.localPort };
  }

  /** The answer arrived: relay to and from the far end, and produce what it sends. Repeating it with the same far
   *  end is a no-op; with another one a conflict (the relay pins one far end). */
  async connect(far: CarrierLegConnect): Promise<void> {
    if (far.allow && !far.allow.every((c) => parseCidr(c))) throw new ControlError('validation_error', 'allow must list addresses or CIDR networks');
    if (this.farEnd) {
      if (JSON.stringify(this.farEnd) === JSON.stringify(far)) return;
      throw new ControlError('conflict', `carrier leg ${this.legId} is connected to another far end already`);
    }
    await this.pin(far.mimeType);
    this.farEnd = far;
    if (!this.relay) {
      await this.transport.connect({ ip: far.ip, port: far.port, rtcpPort: far.rtcpPort ?? far.port + 1 });
      return;
    }
    const tuple = this.transport.tuple;
    const allow = far.allow ? allowList(far.allow) : null;
    this.relay.connect({ ip: far.ip, port: far.port, rtcpPort: far.rtcpPort ?? far.port + 1, payloadType: G711_PAYLOAD_TYPES[far.mimeType], allow }, { ip: tuple.localIp, port: tuple.localPort });
  }

  /** Declares the far end's audio as a producer of this codec before the answer (a browser consumes it from the
   *  start); the answer must then choose the same codec. Idempotent per codec. */
  async pin(mimeType: G711): Promise<void> {
    if (this.producer) {
      if (this.mimeType !== mimeType) throw new ControlError('codec_mismatch', `carrier leg ${this.legId} carries ${this.mimeType}, not ${mimeType}: mediasoup does not transcode`);
      return;
    }
    this.producer = await this.transport.produce({
      kind: 'audio',
      rtpParameters: {
        codecs: [{ mimeType, payloadType: G711_PAYLOAD_TYPES[mimeType], clockRate: 8000 }],
        encodings: [{ ssrc: this.ssrc }],
        rtcp: { cname: `sip-${this.legId}` },
      },
    });
    this.mimeType = mimeType;
  }

  /** Plays `source`'s far end to this leg's far end (one direction of a bridge). Idempotent per source. */
  async consumeFrom(router: types.Router, source: SipLeg): Promise<void> {
    if (!source.producer) throw new ControlError('conflict', 'both carrier legs must be connected (answered) before they are bridged');
    await this.consumeProducer(router, source.legId, source.producer.id, source.mimeType!);
  }

  /** Plays a producer of the router (another leg's, or a browser's under `key`) to this leg's far end. */
  async consumeProducer(router: types.Router, key: string, producerId: string, sourceMimeType: string): Promise<void> {
    if (this.consumers.has(key)) return;
    if (!this.mimeType) throw new ControlError('conflict', 'both carrier legs must be connected (answered) before they are bridged');
    const caps = capabilitiesOf(this.mimeType);
    if (!router.canConsume({ producerId, rtpCapabilities: caps })) {
      throw new ControlError('codec_mismatch', `${key} sends ${sourceMimeType} and leg ${this.legId} takes ${this.mimeType}: mediasoup does not transcode`);
    }
    this.consumers.set(key, await this.transport.consume({ producerId, rtpCapabilities: caps }));
  }

  async stats(): Promise<CarrierLegStats> {
    if (this.relay) return { legId: this.legId, connected: this.relay.connected, codec: this.mimeType, ...this.relay.counters, latched: this.relay.latched };
    const [heard, played] = await Promise.all([
      this.producer?.getStats() ?? [],
      Promise.all([...this.consumers.values()].map((c) => c.getStats())),
    ]);
    const packets = (s: { type: string; packetCount?: number }[], type: string) => s.filter((x) => x.type === type).reduce((n, x) => n + (x.packetCount ?? 0), 0);
    return {
      legId: this.legId,
      connected: this.farEnd !== null,
      codec: this.mimeType,
      fromFarEnd: packets(heard, 'inbound-rtp'),
      toFarEnd: played.reduce((n, s) => n + packets(s, 'outbound-rtp'), 0),
      dropped: null,
      refused: null,
      latched: null,
    };
  }

  close(): void {
    this.relay?.close();
    if (!this.transport.closed) this.transport.close();
  }
}

/** SIP_TRUNK_ALLOW's networks as a BlockList (checked: connect() refuses a list that does not parse). */
function allowList(cidrs: string[]): BlockList {
  const list = new BlockList();
  for (const s of cidrs) {
    const c = parseCidr(s)!;
    list.addSubnet(c.address, c.prefix, c.family);
  }
  return list;
}
