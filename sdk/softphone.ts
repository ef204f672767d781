// The browser SDK: one Softphone is one call. It opens the signaling WebSocket, redeems the ticket or room token,
// sends the microphone through a mediasoup send transport, plays the far end from a recv transport, and reports
// progress. Wire names live in protocol.ts only.
import { Device, type types } from 'mediasoup-client';
import {
  clientMessages, parseServerMessage, ProtocolError, signalingUrlFromToken,
  type EndSummary, type RequestId, type ServerEvent, type TransportInfo,
} from './protocol.ts';

export type CallState = 'idle' | 'connecting' | 'ringing' | 'answered' | 'ended';

export interface SoftphoneOptions {
  /** Signaling WebSocket URL (ws:// or wss://). Optional when the token is a room token naming its room_url. */
  url?: string;
  /** The browser call ticket (POST /v1/webrtc-token) or room token (POST /v1/room-token). */
  token: string;
  /** Where the far end plays; a detached autoplaying <audio> element is made when omitted. */
  audio?: HTMLAudioElement;
  /** A microphone track to send instead of asking getUserMedia for one. */
  microphone?: MediaStreamTrack;
  /** How long hangup() waits for the server's end report before closing anyway (default 5000 ms). */
  hangupTimeoutMs?: number;
}

export interface SoftphoneError { code: string; message: string }

/** Detail of the `ended` event: the server's end report (all null when the call ended without one) and the error
 *  that ended it, if any. */
export interface EndedDetail extends EndSummary { error: SoftphoneError | null }

export interface ProgressDetail { stage: string; message: string; at: string }

/** RTP counters and quality of the call's audio. jitter and roundTripTime are in seconds, null until measured;
 *  packetsLost counts what the far end's packets missed on the way in (inbound loss). */
export interface AudioStats {
  packetsSent: number; packetsReceived: number; bytesReceived: number;
  packetsLost: number; jitter: number | null; roundTripTime: number | null;
}

/** Events: `state` ({state}), `progress` (ProgressDetail), `ended` (EndedDetail), `error` (SoftphoneError). All are
 *  CustomEvents; read `event.detail`. */
export class Softphone extends EventTarget {
  private currentState: CallState = 'idle';
  private id: string | null = null;
  private ws: WebSocket | null = null;
  private device: Device | null = null;
  private sendTransport: types.Transport | null = null;
  private recvTransport: types.Transport | null = null;
  private producer: types.Producer | null = null;
  private consumer: types.Consumer | null = null;
  private mic: MediaStreamTrack | null = null;
  private ownsMic = false;
  private isMuted = false;
  private readonly audio: HTMLAudioElement;
  private readonly url: string;
  /** Media requests waiting for their reply, by request id. */
  private readonly pending = new Map<RequestId, { resolve(m: ServerEvent): void; reject(e: Error): void }>();
  private nextRequestId = 1;
  private endedReport: EndedDetail | null = null;
  private readonly endedWaiters: Array<() => void> = [];

  constructor(private readonly opts: SoftphoneOptions) {
    super();
    if (!opts.token) throw new TypeError('Softphone needs a token');
    const url = opts.url ?? signalingUrlFromToken(opts.token);
    if (!url) throw new TypeError('Softphone needs a signaling url (or a room token that names one)');
    this.url = url;
    this.audio = opts.audio ?? Object.assign(document.createElement('audio'), { autoplay: true });
  }

  get state(): CallState { return this.currentState; }
  get callId(): string | null { return this.id; }
  /** How the call ended (null until it has). */
  get ended(): EndedDetail | null { return this.endedReport; }
  /** Whether the microphone is muted (setMuted). */
  get muted(): boolean { return this.isMuted; }

  /** Mutes or unmutes the microphone: the track is disabled, so silence is sent (the media path stays up). Works
   *  before the microphone is open too: it opens muted. */
  setMuted(muted: boolean): void {
    this.isMuted = muted;
    if (this.mic) this.mic.enabled = !muted;
    this.emit('mute', { muted });
  }

  /** Dials: resolves once the signaling socket is open and the ticket is on its way; progress follows as events. */
  async start(): Promise<void> {
    if (this.currentState !== 'idle' || this.incomingCallId !== null) throw new Error(`start() in state ${this.currentState}`);
    this.setState('connecting');
    this.progress('connecting', `connecting to ${this.url}`);
    // The microphone prompt and the socket handshake run side by side.
    const mic = this.openMicrophone();
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.url);
    } catch (e) {
      this.fail({ code: 'connection_failed', message: String((e as Error).message ?? e) });
      return;
    }
    this.wire(ws, mic);
    await new Promise<void>((resolve) => {
      ws.onopen = () => {
        this.progress('signaling', 'signaling connected');
        ws.send(clientMessages.hello(this.opts.token));
        resolve();
      };
      ws.onerror = () => resolve(); // onclose follows and ends the call
    });
  }

  /** The microphone (opts.microphone, else getUserMedia), kept for the call once it opens. */
  private openMicrophone(): Promise<MediaStreamTrack> {
    const mic = this.opts.microphone
      ? Promise.resolve(this.opts.microphone)
      : navigator.mediaDevices.getUserMedia({ audio: true, video: false }).then((s) => {
        this.ownsMic = true;
        return s.getAudioTracks()[0];
      });
    mic.then((t) => {
      this.mic = t;
      if (this.isMuted) t.enabled = false;
      if (this.currentState === 'ended' && this.ownsMic) t.stop(); // the call ended while the prompt was open
    }, () => undefined);
    return mic;
  }

  /** The call's socket: its frames drive the call, its close ends it. */
  private wire(ws: WebSocket, mic: Promise<MediaStreamTrack>) {
    this.ws = ws;
    ws.onmessage = (ev) => { void this.onMessage(ev.data, mic); };
    ws.onclose = (ev) => {
      if (this.currentState !== 'ended') {
        this.fail({ code: 'connection_lost', message: `signaling closed (${ev.code}${ev.reason ? ` ${ev.reason}` : ''})` });
      }
    };
  }

  /** An incoming call being accepted (IncomingCalls.accept): connecting, the microphone opening, until the server's
   *  welcome hands this call the listening socket (takeSocket) or says the call stopped ringing (notTaken). */
  private incomingCallId: string | null = null;
  private incomingMic: Promise<MediaStreamTrack> | null = null;

  /** @internal IncomingCalls: this Softphone is the call `callId` being accepted. */
  beginAccept(callId: string): void {
    this.incomingCallId = callId;
    this.id = callId;
    this.setState('connecting');
    this.progress('accepting', `accepting incoming call ${callId}`);
    this.incomingMic = this.openMicrophone();
  }

  /** @internal IncomingCalls: the server's welcome for the accepted call: the socket is this call's from now on. */
  takeSocket(ws: WebSocket, welcome: string): void {
    if (this.currentState === 'ended') {
      // Hung up while the accept was on its way: the call is ours, so it is hung up (the server then closes the socket).
      if (ws.readyState === WebSocket.OPEN) ws.send(clientMessages.hangup());
      return;
    }
    this.progress('signaling', 'incoming call accepted');
    this.wire(ws, this.incomingMic!);
    void this.onMessage(welcome, this.incomingMic!);
  }

  /** @internal IncomingCalls: the accepted call stopped ringing before it was ours (another browser took it, or it ended). */
  notTaken(reason: string): void {
    this.fail(reason === 'answered_elsewhere' || reason === 'taken'
      ? { code: 'answered_elsewhere', message: 'another browser took the call first' }
      : { code: 'call_ended', message: `the call stopped ringing (${reason})` });
  }

  /** Hangs up and resolves once the call has ended (the server confirmed, or the wait ran out). */
  async hangup(): Promise<void> {
    if (this.currentState === 'ended') return;
    if (this.currentState === 'idle' || !this.ws) return this.finish(null, null);
    this.progress('hangup', 'hanging up');
    if (this.ws?.readyState === WebSocket.OPEN) {
      this.ws.send(clientMessages.hangup());
      const waited = new Promise<void>((r) => this.endedWaiters.push(r));
      const timeout = new Promise<void>((r) => setTimeout(r, this.opts.hangupTimeoutMs ?? 5000));
      await Promise.race([waited, timeout]);
    }
    this.finish(null, null); // no-op when the server's end report arrived
  }

  /** Drops the call without a hangup (the page is going away): the server sees the socket close, which before the
   *  answer abandons the setup (CANCELED, connection_unconfirmed) and after it ends the call normally. */
  leave(): void {
    this.finish(null, null);
  }

  /** RTP counters of this call's audio, from the peer connections' getStats() (zeros before media flows). */
  async stats(): Promise<AudioStats> {
    const out: AudioStats = { packetsSent: 0, packetsReceived: 0, bytesReceived: 0, packetsLost: 0, jitter: null, roundTripTime: null };
    const [sent, received] = await Promise.all([
      this.producer && !this.producer.closed ? this.producer.getStats() : null,
      this.consumer && !this.consumer.closed ? this.consumer.getStats() : null,
    ]);
    sent?.forEach((s: any) => {
      if (s.type === 'outbound-rtp' && (s.kind ?? s.mediaType) === 'audio') out.packetsSent += s.packetsSent ?? 0;
      // The far side's reports about what we send (RTCP receiver reports), else the ICE pair's STUN round trip.
      if (s.type === 'remote-inbound-rtp' && typeof s.roundTripTime === 'number') out.roundTripTime = s.roundTripTime;
      if (s.type === 'candidate-pair' && s.nominated && out.roundTripTime === null && typeof s.currentRoundTripTime === 'number') {
        out.roundTripTime = s.currentRoundTripTime;
      }
    });
    received?.forEach((s: any) => {
      if (s.type === 'inbound-rtp' && (s.kind ?? s.mediaType) === 'audio') {
        out.packetsReceived += s.packetsReceived ?? 0;
        out.bytesReceived += s.bytesReceived ?? 0;
        out.packetsLost += Math.max(0, s.packetsLost ?? 0);
        if (typeof s.jitter === 'number') out.jitter = s.jitter;
      }
    });
    return out;
  }

  private async onMessage(data: unknown, mic: Promise<MediaStreamTrack>): Promise<void> {
    if (this.currentState === 'ended') return;
    let msg: ServerEvent;
    try {
      if (typeof data !== 'string') throw new ProtocolError('binary frame');
      msg = parseServerMessage(data);
    } catch (e) {
      return this.fail({ code: 'protocol_error', message: (e as Error).message }, true);
    }
    try {
      switch (msg.kind) {
        case 'welcome': return await this.onWelcome(msg, mic);
        case 'transport_created': case 'connected': case 'produced': case 'consumed': case 'resumed':
          return this.settle(msg.requestId, msg);
        case 'progress':
          this.progress(msg.state, msg.state);
          // Progress never goes backwards (a late "ringing" after "answered" is ignored).
          if (msg.state === 'answered' || this.currentState === 'connecting') this.setState(msg.state);
          return;
        case 'ended': return this.finish(msg.summary, null);
        case 'error':
          if (msg.requestId !== null && this.pending.has(msg.requestId)) {
            return this.settle(msg.requestId, Object.assign(new Error(msg.message), { code: msg.code }));
          }
          return this.fail({ code: msg.code, message: msg.message });
        case 'unknown': case 'listening': case 'incoming': case 'incoming_stopped': return;
      }
    } catch (e) {
      const err = e as Error & { code?: string };
      this.fail({ code: err.code ?? 'media_error', message: err.message ?? String(e) }, true);
    }
  }

  /** Media negotiation (mediasoup-client): load the device from the router's capabilities, create a recv and a
   *  send transport on the server, consume the far end (it speaks once the call is answered), send the microphone. */
  private async onWelcome(w: Extract<ServerEvent, { kind: 'welcome' }>, mic: Promise<MediaStreamTrack>) {
    this.id = w.callId;
    this.progress('welcome', `call ${w.callId}`);
    if (!w.routerRtpCapabilities) {
      this.progress('media', 'the server carries no media for this call (signaling only)');
      return;
    }
    const device = (this.device = new Device());
    await device.load({ routerRtpCapabilities: w.routerRtpCapabilities });
    if (!device.canProduce('audio')) throw Object.assign(new Error('this browser cannot send audio to the server'), { code: 'unsupported_browser' });

    // Both directions at once: the far end may be offered only once the microphone flows (and vice versa).
    await Promise.all([this.receive(device), this.sendMicrophone(device, mic)]);
  }

  /** The recv transport and the far end's audio, played through `audio`. */
  private async receive(device: Device) {
    const recvInfo = await this.transportInfo('recv');
    if (this.isEnded()) return;
    const recv = (this.recvTransport = this.transport(device.createRecvTransport(transportOptions(recvInfo))));
    const consumed = await this.request((id) => clientMessages.consume(id, recv.id, device.rtpCapabilities));
    if (consumed.kind !== 'consumed' || this.isEnded()) return;
    const c = consumed.consumer;
    const consumer = await recv.consume({ id: c.id, producerId: c.producerId, kind: c.kind, rtpParameters: c.rtpParameters });
    this.consumer = consumer;
    this.audio.srcObject = new MediaStream([consumer.track]);
    this.audio.play().catch((e) => this.progress('audio', `audio blocked until the page is clicked (${e.message})`));
    await this.request((id) => clientMessages.resume(id, consumer.id));
    this.progress('receiving', 'far end audio consumed');
  }

  /** The send transport and the microphone, as PCMU when the router offers it. */
  private async sendMicrophone(device: Device, mic: Promise<MediaStreamTrack>) {
    const sendInfo = await this.transportInfo('send');
    if (this.isEnded()) return;
    const send = (this.sendTransport = this.transport(device.createSendTransport(transportOptions(sendInfo))));
    send.on('produce', ({ kind, rtpParameters }, ok, bad) => {
      if (kind !== 'audio') return bad(new Error('only audio is sent'));
      this.request((id) => clientMessages.produce(id, send.id, 'audio', rtpParameters)).then(
        (m) => (m.kind === 'produced' ? ok({ id: m.producerId }) : bad(new Error('unexpected reply to produce'))),
        bad,
      );
    });

    let track: MediaStreamTrack;
    try {
      track = await mic;
    } catch (e) {
      throw Object.assign(new Error(`microphone unavailable: ${(e as Error).message}`), { code: 'microphone_unavailable' });
    }
    if (this.isEnded()) return;
    // The carrier side prefers G.711 μ-law: send PCMU when the router offers it, else the router's first choice.
    const codec = device.rtpCapabilities.codecs?.find((c) => c.mimeType.toLowerCase() === 'audio/pcmu');
    this.producer = await send.produce({ track, codec, stopTracks: false });
    this.progress('sending', `microphone sent (${this.producer.rtpParameters.codecs[0]?.mimeType ?? 'audio'})`);
  }

  /** A method, so TypeScript does not narrow the state across awaits. */
  private isEnded(): boolean { return this.currentState === 'ended'; }

  private async transportInfo(direction: 'send' | 'recv'): Promise<TransportInfo> {
    const m = await this.request((id) => clientMessages.transport(id, direction));
    if (m.kind !== 'transport_created') throw new ProtocolError('unexpected reply to transport');
    return m.transport;
  }

  /** Sends a media request and resolves with its reply (an `error` about it rejects). */
  private request(frame: (id: RequestId) => string): Promise<ServerEvent> {
    const id = this.nextRequestId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      try {
        this.send(frame(id));
      } catch (e) {
        this.pending.delete(id);
        reject(e as Error);
      }
    });
  }

  private settle(id: RequestId | null, outcome: ServerEvent | Error) {
    const p = id === null ? undefined : this.pending.get(id);
    if (!p) return;
    this.pending.delete(id!);
    if (outcome instanceof Error) p.reject(Object.assign(outcome, { code: (outcome as Error & { code?: string }).code ?? 'media_error' }));
    else p.resolve(outcome);
  }

  /** Wires a transport's DTLS connect to the signaling socket. */
  private transport(t: types.Transport): types.Transport {
    t.on('connect', ({ dtlsParameters }, ok, bad) => {
      this.request((id) => clientMessages.connect(id, t.id, dtlsParameters)).then(() => ok(), bad);
    });
    t.on('connectionstatechange', (s) => {
      this.progress('media', `${t.direction} transport ${s}`);
      if (s === 'failed') this.fail({ code: 'media_failed', message: `${t.direction} transport failed` }, true);
    });
    return t;
  }

  private send(text: string) {
    if (this.ws?.readyState !== WebSocket.OPEN) throw new Error('signaling is not connected');
    this.ws.send(text);
  }

  /** Ends the call because of an error; when the fault is ours, the server hears a hangup first. */
  private fail(err: SoftphoneError, tellServer = false) {
    if (this.currentState === 'ended') return;
    if (tellServer && this.ws?.readyState === WebSocket.OPEN) this.ws.send(clientMessages.hangup());
    this.progress('error', `${err.code}: ${err.message}`);
    this.emit('error', err);
    this.finish(null, err);
  }

  private finish(summary: EndSummary | null, error: SoftphoneError | null) {
    if (this.currentState === 'ended') return;
    this.endedReport = {
      status: null, callOutcome: null, failureCode: null, failureCategory: null, disconnectionReason: null,
      durationSeconds: null, ...summary, error,
    };
    for (const p of this.pending.values()) p.reject(new Error('call ended'));
    this.pending.clear();
    this.producer?.close();
    this.consumer?.close();
    this.sendTransport?.close();
    this.recvTransport?.close();
    if (this.ownsMic) this.mic?.stop();
    this.audio.srcObject = null;
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) this.ws.close(1000, 'ended');
    if (summary) this.progress('ended', `ended: ${[summary.status, summary.callOutcome, summary.failureCode].filter(Boolean).join(', ')}`);
    this.setState('ended');
    this.emit('ended', this.endedReport);
    for (const w of this.endedWaiters.splice(0)) w();
  }

  private setState(s: CallState) {
    if (s === this.currentState) return;
    this.currentState = s;
    this.emit('state', { state: s });
  }

  private progress(stage: string, message: string) {
    this.emit('progress', { stage, message, at: new Date().toISOString() } satisfies ProgressDetail);
  }

  private emit(type: string, detail: unknown) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}

function transportOptions(t: TransportInfo): types.TransportOptions {
  return { id: t.id, iceParameters: t.iceParameters, iceCandidates: t.iceCandidates, dtlsParameters: t.dtlsParameters };
}
