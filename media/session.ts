// One call's media: a mediasoup router with two legs.
//   browser leg: a WebRtcTransport (or, for tests and tools, a PlainTransport) carrying the browser's microphone
//                (browser producer) and what it hears (browser consumer);
//   carrier leg: a PlainTransport carrying RTP to and from the carrier's far end (carrier producer: what the far
//                end says; carrier consumer: the browser's audio on its way to the far end).
// The carrier side is the telephone network, which speaks G.711: the far end sends and receives audio/PCMU, and
// since mediasoup forwards and never transcodes, the browser must produce PCMU too for its audio to reach a
// carrier leg (the router lists PCMU first, so mediasoup-client picks it by default).
// A `sip` session has no sandbox far end: its far ends are its SIP legs. With a browser in it (paths A and B) the
// browser's far end is the session's SIP leg: the browser's producer plays out of that leg and the leg's producer
// (pinned to PCMU before the answer, since the browser consumes at once) is what the browser consumes. When the
// browser consumes before the workers placed the leg, the leg's port is made then and the leg takes it over.
// A recorded `sip` session (media/recorder.ts) mixes every producer into a WAV.
// Closing the session closes the router, which closes every transport, producer and consumer in it.
import { randomInt } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { types } from 'mediasoup';
import type {
  BrowserTransportCreated, CarrierLegConnect, CarrierLegCreated, Consumed, FarEndAttached, MediasoupObject, Produced,
  SessionCloseReason, SessionStats, SessionSummary,
} from '../shared/media/protocol.ts';
import { PCMU_PAYLOAD_TYPE } from '../shared/media/rtp.ts';
import type { MediaSettings } from '../shared/media/settings.ts';
import { sipRecordingFile } from '../shared/calls/recording-store.ts';
import type { Logger } from '../shared/log.ts';
import { ControlError } from './errors.ts';
import { CallRecorder } from './recorder.ts';
import { SandboxFarEnd } from './sandbox-far-end.ts';
import { SipLeg } from './sip-leg.ts';
import type { MediaWorkerPool } from './worker-pool.ts';

export const MEDIA_CODECS: types.RtpCodecCapability[] = [
  { kind: 'audio', mimeType: 'audio/PCMU', clockRate: 8000, preferredPayloadType: PCMU_PAYLOAD_TYPE },
  { kind: 'audio', mimeType: 'audio/opus', clockRate: 48000, channels: 2 },
];

/** A `sip` session's router: G.711 both ways for the carrier legs (PCMU first, as for the browser). */
export const SIP_MEDIA_CODECS: types.RtpCodecCapability[] = [
  ...MEDIA_CODECS.slice(0, 1),
  { kind: 'audio', mimeType: 'audio/PCMA', clockRate: 8000, preferredPayloadType: 8 },
  ...MEDIA_CODECS.slice(1),
];

/** What the carrier's far end can receive: G.711 μ-law and nothing else. */
const FAR_END_RTP_CAPABILITIES: types.RtpCapabilities = {
  codecs: [{ kind: 'audio', mimeType: 'audio/PCMU', clockRate: 8000, preferredPayloadType: PCMU_PAYLOAD_TYPE, rtcpFeedback: [] }],
  headerExtensions: [],
};

/** The carrier leg listens on loopback: its only peer today is the in-process sandbox far end. */
const CARRIER_LISTEN_IP = '127.0.0.1';

type BrowserTransport = (
  | { type: 'webrtc'; transport: types.WebRtcTransport }
  | { type: 'plain'; transport: types.PlainTransport }
) & { connected: boolean };

/** A browser (mediasoup-client) runs one RTCPeerConnection per direction: a send and a recv WebRtcTransport. */
const MAX_WEBRTC_TRANSPORTS = 2;

interface SessionEvents {
  closed: [SessionCloseReason];
}

export class MediaSession extends EventEmitter<SessionEvents> {
  readonly createdAt = new Date();
  closed = false;
  /** The browser's transports, in creation order: one plain, or up to two WebRTC (send and recv). */
  private browsers: BrowserTransport[] = [];
  private browserProducer: types.Producer | null = null;
  private browserConsumer: types.Consumer | null = null;
  private carrierConsumer: types.Consumer | null = null;
  private farEnd: SandboxFarEnd | null = null;
  /** A `sip` session's carrier legs, by leg id. */
  private readonly sipLegs = new Map<string, SipLeg>();
  /** The browser's far end made before the SIP leg existed (no leg id yet): the session's first leg takes it. */
  private pendingLeg: SipLeg | null = null;
  private recorder: CallRecorder | null = null;
  /** Settles once the session's recording (if any) is complete on disk after close(). */
  finished: Promise<void> = Promise.resolve();
  private readonly maxDurationTimer: NodeJS.Timeout;
  /** Requests on one session run one at a time: each checks the state the previous one left. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly callId: string,
    readonly workerPid: number,
    private readonly router: types.Router,
    /** The sandbox far end's side; null in a `sip` session, whose far ends are its SIP legs. */
    private readonly carrierTransport: types.PlainTransport | null,
    private readonly carrierProducer: types.Producer | null,
    private readonly carrierSsrc: number,
    private readonly settings: MediaSettings,
    maxDurationMs: number,
  ) {
    super();
    router.once('workerclose', () => this.close('worker_died'));
    this.maxDurationTimer = setTimeout(() => this.close('max_duration'), maxDurationMs);
    this.maxDurationTimer.unref();
  }

  static async create(pool: MediaWorkerPool, callId: string, settings: MediaSettings, maxDurationMs: number, carrier: 'sandbox' | 'sip' = 'sandbox'): Promise<MediaSession> {
    const { router, workerPid } = await pool.createRouter(carrier === 'sip' ? SIP_MEDIA_CODECS : MEDIA_CODECS);
    if (carrier === 'sip') {
      if (router.closed) throw new ControlError('unavailable', 'the mediasoup worker closed while the session was created');
      return new MediaSession(callId, workerPid, router, null, null, 0, settings, Math.min(maxDurationMs, settings.sessionMaxMs));
    }
    try {
      const carrierTransport = await router.createPlainTransport({ listenIp: { ip: CARRIER_LISTEN_IP }, rtcpMux: true, comedia: false });
      const carrierSsrc = randomInt(1, 0xffffffff);
      const carrierProducer = await carrierTransport.produce({
        kind: 'audio',
        rtpParameters: {
          codecs: [{ mimeType: 'audio/PCMU', payloadType: PCMU_PAYLOAD_TYPE, clockRate: 8000 }],
          encodings: [{ ssrc: carrierSsrc }],
          rtcp: { cname: `carrier-${callId}` },
        },
      });
      // The worker may have died while this was built; the router's workerclose has then fired already.
      if (router.closed) throw new ControlError('unavailable', 'the mediasoup worker closed while the session was created');
      return new MediaSession(callId, workerPid, router, carrierTransport, carrierProducer, carrierSsrc, settings, Math.min(maxDurationMs, settings.sessionMaxMs));
    } catch (err) {
      router.close();
      throw err;
    }
  }

  get routerId(): string { return this.router.id; }
  get carrier(): 'sandbox' | 'sip' { return this.carrierTransport ? 'sandbox' : 'sip'; }
  get rtpCapabilities(): MediasoupObject { return this.router.rtpCapabilities as unknown as MediasoupObject; }

  createBrowserTransport(type: 'webrtc' | 'plain'): Promise<BrowserTransportCreated> {
    return this.serial(async () => {
      const first = this.browsers[0];
      if (first && (type === 'plain' || first.type === 'plain' || this.browsers.length >= MAX_WEBRTC_TRANSPORTS)) {
        throw new ControlError('conflict', this.browsers.length >= MAX_WEBRTC_TRANSPORTS || first.type === 'webrtc'
          ? 'the session already has its browser transports (one plain, or a send and a recv WebRTC transport)'
          : 'the session already has a browser transport');
      }
      const listenIp = { ip: this.settings.listenIp, announcedIp: this.settings.announcedIp ?? undefined };
      if (type === 'webrtc') {
        const transport = await this.router.createWebRtcTransport({ listenIps: [listenIp], enableUdp: true, enableTcp: true, preferUdp: true });
        this.browsers.push({ type, transport, connected: false });
        return {
          type, id: transport.id,
          iceParameters: transport.iceParameters as unknown as MediasoupObject,
          iceCandidates: transport.iceCandidates as unknown as MediasoupObject[],
          dtlsParameters: transport.dtlsParameters as unknown as MediasoupObject,
        };
      }
      const transport = await this.router.createPlainTransport({ listenIp, rtcpMux: true, comedia: false });
      this.browsers.push({ type, transport, connected: false });
      return { type, id: transport.id, ip: this.settings.announcedIp ?? transport.tuple.localIp, port: transport.tuple.localPort };
    });
  }

  connectBrowserTransport(params: ({ dtlsParameters: unknown } | { ip: string; port: number }) & { transportId?: string }): Promise<void> {
    return this.serial(async () => {
      const browser = this.requireBrowser(params.transportId);
      if (browser.connected) throw new ControlError('conflict', 'the browser transport is connected already');
      if (browser.type === 'webrtc') {
        if (!('dtlsParameters' in params)) throw new ControlError('validation_error', 'a webrtc transport connects with dtlsParameters', { dtlsParameters: 'is required' });
        await browser.transport.connect({ dtlsParameters: params.dtlsParameters as types.DtlsParameters });
      } else {
        if (!('ip' in params)) throw new ControlError('validation_error', 'a plain transport connects with ip and port', { ip: 'is required', port: 'is required' });
        await browser.transport.connect({ ip: params.ip, port: params.port });
      }
      browser.connected = true;
    });
  }

  produce(rtpParameters: unknown, transportId?: string): Promise<Produced> {
    return this.serial(async () => {
      const browser = this.requireBrowser(transportId);
      if (this.browserProducer) throw new ControlError('conflict', 'the browser already produces audio in this session');
      this.browserProducer = await browser.transport.produce({ kind: 'audio', rtpParameters: rtpParameters as types.RtpParameters });
      try {
        await this.connectCarrierConsumer();
        await this.linkBrowserToSipLeg();
        await this.recorder?.add(this.browserProducer.id, 'audio/PCMU');
      } catch (err) {
        this.browserProducer.close();
        this.browserProducer = null;
        throw err;
      }
      return { producerId: this.browserProducer.id };
    });
  }

  consume(rtpCapabilities: unknown, transportId?: string): Promise<Consumed> {
    return this.serial(async () => {
      const browser = this.requireBrowser(transportId);
      if (this.browserConsumer) throw new ControlError('conflict', 'the browser already consumes the far end in this session');
      const farProducerId = this.carrierProducer?.id ?? await this.browserSipLegProducer();
      const caps = rtpCapabilities as types.RtpCapabilities;
      if (!this.router.canConsume({ producerId: farProducerId, rtpCapabilities: caps })) {
        throw new ControlError('codec_mismatch', 'the far end sends audio/PCMU, which these rtpCapabilities cannot receive', { rtpCapabilities: 'must include audio/PCMU' });
      }
      const consumer = await browser.transport.consume({ producerId: farProducerId, rtpCapabilities: caps, paused: true });
      this.browserConsumer = consumer;
      return { id: consumer.id, producerId: farProducerId, kind: 'audio', rtpParameters: consumer.rtpParameters as unknown as MediasoupObject, paused: consumer.paused };
    });
  }

  resumeConsumer(): Promise<void> {
    return this.serial(async () => {
      if (!this.browserConsumer) throw new ControlError('conflict', 'the browser has no consumer to resume: consume first');
      await this.browserConsumer.resume();
    });
  }

  /** The sandbox far end answers: tone, then echo. The carrier leg connects to it. */
  attachSandboxFarEnd(): Promise<FarEndAttached> {
    return this.serial(async () => {
      const carrierTransport = this.carrierTransport;
      if (!carrierTransport) throw new ControlError('conflict', 'a sip session has no sandbox far end: its far ends are its carrier legs');
      if (this.farEnd) throw new ControlError('conflict', 'the session already has a far end');
      // Checked before the carrier transport connects: it connects once, so a refused attach must not touch it.
      if (this.browserProducer) this.assertCarrierCanCarry(this.browserProducer);
      const farEnd = await SandboxFarEnd.open({
        listenIp: CARRIER_LISTEN_IP, ssrc: this.carrierSsrc, payloadType: PCMU_PAYLOAD_TYPE, toneMs: this.settings.sandboxToneMs,
      });
      if (this.closed) { farEnd.close(); throw new ControlError('not_found', 'the session closed'); }
      this.farEnd = farEnd;
      try {
        await carrierTransport.connect({ ip: farEnd.address.ip, port: farEnd.address.port });
        await this.connectCarrierConsumer();
      } catch (err) {
        this.farEnd = null;
        farEnd.close();
        throw err;
      }
      const tuple = carrierTransport.tuple;
      farEnd.start({ ip: tuple.localIp, port: tuple.localPort });
      return { kind: 'sandbox', phase: farEnd.phase, toneMs: this.settings.sandboxToneMs };
    });
  }

  summary(): SessionSummary {
    const b = this.browsers[0];
    return {
      callId: this.callId,
      carrier: this.carrier,
      carrierLegs: [...this.sipLegs.keys()],
      routerId: this.router.id,
      workerPid: this.workerPid,
      createdAt: this.createdAt.toISOString(),
      browserTransport: b && {
        type: b.type,
        id: b.transport.id,
        state: b.type === 'webrtc'
          ? `ice:${b.transport.iceState} dtls:${b.transport.dtlsState}`
          : b.transport.tuple.remotePort ? 'connected' : 'new',
      },
      browserProducerId: this.browserProducer?.id ?? null,
      browserConsumerId: this.browserConsumer?.id ?? null,
      farEnd: this.farEnd && { kind: 'sandbox', phase: this.farEnd.phase },
    };
  }

  async stats(): Promise<SessionStats> {
    const [browserIn, browserOut, carrierIn, carrierOut] = await Promise.all([
      streamStats(this.browserProducer, 'inbound-rtp'),
      streamStats(this.browserConsumer, 'outbound-rtp'),
      streamStats(this.carrierProducer, 'inbound-rtp'),
      streamStats(this.carrierConsumer, 'outbound-rtp'),
    ]);
    const f = this.farEnd;
    return {
      callId: this.callId,
      browser: { in: browserIn, out: { packets: browserOut.packets, bytes: browserOut.bytes } },
      carrier: { in: carrierIn, out: { packets: carrierOut.packets, bytes: carrierOut.bytes } },
      farEnd: f && { phase: f.phase, tonePacketsSent: f.tonePacketsSent, echoPacketsSent: f.echoPacketsSent, packetsReceived: f.packetsReceived },
      carrierLegs: await Promise.all([...this.sipLegs.values()].map((l) => l.stats())),
    };
  }

  /** A SIP carrier leg's RTP port (idempotent per leg id: a repeat answers the same port). */
  createCarrierLeg(legId: string): Promise<CarrierLegCreated> {
    return this.serial(async () => {
      if (this.carrierTransport) throw new ControlError('conflict', 'carrier legs belong to sip sessions (create the session with carrier "sip")');
      const existing = this.sipLegs.get(legId);
      if (existing) return existing.created(false);
      if (this.pendingLeg) {
        const leg = this.pendingLeg;
        this.pendingLeg = null;
        leg.legId = legId;
        this.sipLegs.set(legId, leg);
        return leg.created(true);
      }
      const leg = await SipLeg.create(this.router, legId, this.settings);
      if (this.closed) { leg.close(); throw new ControlError('not_found', 'the session closed'); }
      this.sipLegs.set(legId, leg);
      await this.linkBrowserToSipLeg();
      return leg.created(true);
    });
  }

  /** The far end answered: relay and produce its audio. */
  connectCarrierLeg(legId: string, far: CarrierLegConnect): Promise<void> {
    return this.serial(async () => {
      const leg = this.requireSipLeg(legId);
      await leg.connect(far);
      await this.recorder?.add(leg.producerId!, leg.codec!);
    });
  }

  /** Closes one carrier leg (its port is freed); a leg already gone is not an error. */
  closeCarrierLeg(legId: string): Promise<void> {
    return this.serial(async () => {
      this.sipLegs.get(legId)?.close();
      this.sipLegs.delete(legId);
    });
  }

  /** Each leg's far end hears the other's (both connected, same G.711 codec). Idempotent. */
  bridge(a: string, b: string): Promise<void> {
    return this.serial(async () => {
      if (a === b) throw new ControlError('validation_error', 'a bridge joins two different legs', { legs: 'must name two different legs' });
      const [legA, legB] = [this.requireSipLeg(a), this.requireSipLeg(b)];
      await legB.consumeFrom(this.router, legA);
      await legA.consumeFrom(this.router, legB);
    });
  }

  private requireSipLeg(legId: string): SipLeg {
    const leg = this.sipLegs.get(legId);
    if (!leg) throw new ControlError('not_found', `no carrier leg ${legId} in session ${this.callId}`);
    return leg;
  }

  close(reason: SessionCloseReason): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.maxDurationTimer);
    this.farEnd?.close();
    this.pendingLeg?.close();
    if (this.recorder) this.finished = this.recorder.close();
    for (const leg of this.sipLegs.values()) leg.close();
    this.sipLegs.clear();
    if (!this.router.closed) this.router.close();
    this.emit('closed', reason);
  }

  /** Starts recording a `sip` session (idempotent): what is already produced, then every producer to come. */
  startRecording(log: Logger): Promise<void> {
    return this.serial(async () => {
      if (this.recorder) return;
      if (this.carrierTransport) throw new ControlError('conflict', 'only sip sessions record their RTP (sandbox recordings are rendered by the gateway)');
      const recorder = await CallRecorder.open(this.router, sipRecordingFile(this.settings.recordingsDir, this.callId), log);
      if (this.closed) { await recorder.close(); throw new ControlError('not_found', 'the session closed'); }
      this.recorder = recorder;
      for (const leg of this.sipLegs.values()) if (leg.producerId) await recorder.add(leg.producerId, leg.codec!);
      if (this.browserProducer) await recorder.add(this.browserProducer.id, 'audio/PCMU');
    });
  }

  /** The SIP leg a browser talks through: the session's first leg, or the one made for it before the leg existed. */
  private browserSipLeg(): SipLeg | null {
    return this.sipLegs.values().next().value ?? this.pendingLeg;
  }

  /** The browser's far end's producer in a `sip` session: its SIP leg's, pinned to PCMU (the browser's codec). */
  private async browserSipLegProducer(): Promise<string> {
    let leg = this.browserSipLeg();
    if (!leg) {
      leg = await SipLeg.create(this.router, `pending-${this.callId}`, this.settings);
      if (this.closed) { leg.close(); throw new ControlError('not_found', 'the session closed'); }
      this.pendingLeg = leg;
    }
    await leg.pin('audio/PCMU');
    await this.recorder?.add(leg.producerId!, 'audio/PCMU');
    return leg.producerId!;
  }

  /** Once a browser produces and its SIP leg exists, the browser's audio plays out of that leg. */
  private async linkBrowserToSipLeg(): Promise<void> {
    const leg = this.browserSipLeg();
    if (!leg || !this.browserProducer || this.carrierTransport) return;
    this.assertCarrierCanCarry(this.browserProducer);
    await leg.pin('audio/PCMU');
    await this.recorder?.add(leg.producerId!, 'audio/PCMU');
    await leg.consumeProducer(this.router, 'browser', this.browserProducer.id, 'audio/PCMU');
  }

  /** Once the browser produces and the far end is attached, the browser's audio flows to the far end. */
  private async connectCarrierConsumer(): Promise<void> {
    if (this.carrierConsumer || !this.browserProducer || !this.farEnd || !this.carrierTransport) return;
    this.assertCarrierCanCarry(this.browserProducer);
    this.carrierConsumer = await this.carrierTransport.consume({ producerId: this.browserProducer.id, rtpCapabilities: FAR_END_RTP_CAPABILITIES });
  }

  private assertCarrierCanCarry(producer: types.Producer): void {
    if (!this.router.canConsume({ producerId: producer.id, rtpCapabilities: FAR_END_RTP_CAPABILITIES })) {
      throw new ControlError('codec_mismatch', 'the carrier leg carries audio/PCMU only: the browser must produce audio/PCMU', { rtpParameters: 'must use audio/PCMU for a carrier leg' });
    }
  }

  /** The browser transport named by id, or the first one when none is named. */
  private requireBrowser(transportId?: string): BrowserTransport {
    if (!this.browsers.length) throw new ControlError('conflict', 'the session has no browser transport yet: create it first');
    if (transportId === undefined) return this.browsers[0];
    const found = this.browsers.find((b) => b.transport.id === transportId);
    if (!found) throw new ControlError('validation_error', 'no browser transport of this session has this id', { transportId: 'is not a browser transport of this session' });
    return found;
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const run = this.queue.then(() => {
      if (this.closed) throw new ControlError('not_found', `session ${this.callId} is closed`);
      return op();
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}

async function streamStats(entity: types.Producer | types.Consumer | null, type: 'inbound-rtp' | 'outbound-rtp') {
  const out = { packets: 0, bytes: 0, packetsLost: 0, jitter: 0 };
  if (!entity || entity.closed) return out;
  const stats = (await entity.getStats()) as { type: string; packetCount: number; byteCount: number; packetsLost: number; jitter: number }[];
  for (const s of stats) {
    if (s.type !== type) continue;
    out.packets += s.packetCount;
    out.bytes += s.byteCount;
    out.packetsLost += s.packetsLost;
    out.jitter = Math.max(out.jitter, s.jitter);
  }
  return out;
}
