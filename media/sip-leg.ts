// One SIP carrier leg of a call's router: a PlainTransport on loopback, fed by the leg's RTP relay (the port the
// SDP offer names). Once the far end answered, connect() starts the relay and declares the far end's audio as a
// producer (the codec the answer chose, the relay's SSRC). A bridge (consumeFrom) makes another leg's producer play
// out of this leg: both legs are G.711 and mediasoup never transcodes, so they must share the codec.
import { randomInt } from 'node:crypto';
import type { types } from 'mediasoup';
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
  private producer: types.Producer | null = null;
  private mimeType: G711 | null = null;
  /** What this leg plays to its far end, by the leg it comes from. */
  private readonly consumers = new Map<string, types.Consumer>();
  private farEnd: CarrierLegConnect | null = null;

  private constructor(
    readonly legId: string,
    private readonly transport: types.PlainTransport,
    private readonly relay: RtpRelay,
    private readonly ssrc: number,
    private readonly announcedIp: string,
  ) {}

  static async create(router: types.Router, legId: string, settings: MediaSettings): Promise<SipLeg> {
    const ssrc = randomInt(1, 0xffffffff);
    const relay = await RtpRelay.open({ listenIp: settings.listenIp, minPort: settings.rtcMinPort, maxPort: settings.rtcMaxPort, ssrc });
    try {
      const transport = await router.createPlainTransport({ listenIp: { ip: '127.0.0.1' }, rtcpMux: true, comedia: false });
      await transport.connect(relay.insideAddress);
      return new SipLeg(legId, transport, relay, ssrc, settings.announcedIp ?? settings.listenIp);
    } catch (err) {
      relay.close();
      throw err;
    }
  }

  get codec(): G711 | null { return this.mimeType; }
  get producerId(): string | null { return this.producer?.id ?? null; }

  created(created: boolean): CarrierLegCreated {
    return { legId: this.legId, created, ip: this.announcedIp, port: this.relay.port };
  }

  /** The answer arrived: relay to and from the far end, and produce what it sends. Repeating it with the same far
   *  end is a no-op; with another one a conflict (the relay pins one far end). */
  async connect(far: CarrierLegConnect): Promise<void> {
    if (this.farEnd) {
      if (JSON.stringify(this.farEnd) === JSON.stringify(far)) return;
      throw new ControlError('conflict', `carrier leg ${this.legId} is connected to another far end already`);
    }
    const payloadType = G711_PAYLOAD_TYPES[far.mimeType];
    this.producer = await this.transport.produce({
      kind: 'audio',
      rtpParameters: {
        codecs: [{ mimeType: far.mimeType, payloadType, clockRate: 8000 }],
        encodings: [{ ssrc: this.ssrc }],
        rtcp: { cname: `sip-${this.legId}` },
      },
    });
    this.mimeType = far.mimeType;
    this.farEnd = far;
    const tuple = this.transport.tuple;
    this.relay.connect({ ip: far.ip, port: far.port, rtcpPort: far.rtcpPort ?? far.port + 1, payloadType }, { ip: tuple.localIp, port: tuple.localPort });
  }

  /** Plays `source`'s far end to this leg's far end (one direction of a bridge). Idempotent per source. */
  async consumeFrom(router: types.Router, source: SipLeg): Promise<void> {
    if (this.consumers.has(source.legId)) return;
    if (!source.producer || !this.mimeType) throw new ControlError('conflict', 'both carrier legs must be connected (answered) before they are bridged');
    const caps = capabilitiesOf(this.mimeType);
    if (!router.canConsume({ producerId: source.producer.id, rtpCapabilities: caps })) {
      throw new ControlError('codec_mismatch', `leg ${source.legId} sends ${source.mimeType} and leg ${this.legId} takes ${this.mimeType}: mediasoup does not transcode`);
    }
    this.consumers.set(source.legId, await this.transport.consume({ producerId: source.producer.id, rtpCapabilities: caps }));
  }

  async stats(): Promise<CarrierLegStats> {
    return { legId: this.legId, connected: this.relay.connected, codec: this.mimeType, ...this.relay.counters };
  }

  close(): void {
    this.relay.close();
    if (!this.transport.closed) this.transport.close();
  }
}
