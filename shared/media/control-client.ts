// Typed client of the media control API (shared/media/protocol.ts), for signaling and the tests. One keep-alive
// connection pool per client; every failure is a MediaControlError carrying the API's code and fields, or code
// `unreachable` when media did not answer at all.
import { EventEmitter } from 'node:events';
import { Agent, request, type IncomingMessage } from 'node:http';
import type {
  BrowserTransportCreated, CarrierLegConnect, DrainStarted, CarrierLegCreated, Consumed, ControlErrorBody, ControlErrorCode,
  FarEndAttached, MediaEvent, MediasoupObject, Produced, SessionCreated, SessionStats, SessionSummary, WorkersInfo,
} from './protocol.ts';
import { paths } from './protocol.ts';

export class MediaControlError extends Error {
  constructor(
    readonly status: number,
    readonly code: ControlErrorCode | 'unreachable',
    message: string,
    readonly fields?: Record<string, string>,
  ) {
    super(message);
    this.name = 'MediaControlError';
  }
}

export interface MediaControlClientOptions {
  /** Base URL of the media process, e.g. http://127.0.0.1:8082 (MediaSettings.controlUrl). */
  url: string;
  /** MEDIA_CONTROL_SECRET. */
  secret: string;
  /** Per-request timeout (default 10 s). */
  timeoutMs?: number;
}

export class MediaControlClient {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });
  private readonly base: string;

  constructor(private readonly options: MediaControlClientOptions) {
    this.base = options.url.replace(/\/+$/, '');
  }

  createSession(callId: string, opts: { maxDurationMs?: number; carrier?: 'sandbox' | 'sip'; record?: boolean } = {}): Promise<SessionCreated> {
    return this.call('POST', paths.sessions, { callId, ...opts });
  }
  listSessions(): Promise<{ sessions: SessionSummary[] }> { return this.call('GET', paths.sessions); }
  getSession(callId: string): Promise<SessionSummary> { return this.call('GET', paths.session(callId)); }
  closeSession(callId: string): Promise<{ callId: string; closed: true }> { return this.call('DELETE', paths.session(callId)); }

  /** The browser's transport: WebRTC by default; `plain` for an RTP endpoint in the browser's place. */
  createBrowserTransport(callId: string, type: 'webrtc'): Promise<Extract<BrowserTransportCreated, { type: 'webrtc' }>>;
  createBrowserTransport(callId: string, type: 'plain'): Promise<Extract<BrowserTransportCreated, { type: 'plain' }>>;
  createBrowserTransport(callId: string, type: 'webrtc' | 'plain' = 'webrtc'): Promise<BrowserTransportCreated> {
    return this.call('POST', paths.browserTransport(callId), { type });
  }
  /** WebRTC: the browser's dtlsParameters. Plain: where the RTP endpoint listens. */
  connectBrowserTransport(callId: string, params: ({ dtlsParameters: MediasoupObject } | { ip: string; port: number }) & { transportId?: string }): Promise<{ connected: true }> {
    return this.call('POST', paths.connectBrowserTransport(callId), params);
  }
  /** `transportId`: the browser transport to produce on (the first one when omitted). */
  produce(callId: string, rtpParameters: MediasoupObject, transportId?: string): Promise<Produced> {
    return this.call('POST', paths.produce(callId), { kind: 'audio', rtpParameters, ...(transportId ? { transportId } : {}) });
  }
  /** `transportId`: the browser transport to consume on (the first one when omitted). */
  consume(callId: string, rtpCapabilities: MediasoupObject, transportId?: string): Promise<Consumed> {
    return this.call('POST', paths.consume(callId), { rtpCapabilities, ...(transportId ? { transportId } : {}) });
  }
  resumeConsumer(callId: string): Promise<{ resumed: true }> { return this.call('POST', paths.resumeConsumer(callId)); }
  /** After answer: the sandbox far end plays a tone, then echoes the browser. */
  attachSandboxFarEnd(callId: string): Promise<FarEndAttached> { return this.call('POST', paths.farEnd(callId), { kind: 'sandbox' }); }
  stats(callId: string): Promise<SessionStats> { return this.call('GET', paths.stats(callId)); }
  /** A SIP leg's RTP port in a `sip` session (idempotent per leg id). */
  createCarrierLeg(callId: string, legId: string): Promise<CarrierLegCreated> { return this.call('POST', paths.carrierLegs(callId), { legId }); }
  /** The leg's far end answered: where it takes RTP and the codec it chose. */
  connectCarrierLeg(callId: string, legId: string, far: CarrierLegConnect): Promise<{ connected: true }> {
    return this.call('POST', paths.connectCarrierLeg(callId, legId), far);
  }
  closeCarrierLeg(callId: string, legId: string): Promise<{ legId: string; closed: true }> { return this.call('DELETE', paths.carrierLeg(callId, legId)); }
  /** Each of the two connected legs hears the other. */
  bridge(callId: string, legs: [string, string]): Promise<{ bridged: true }> { return this.call('POST', paths.bridge(callId), { legs }); }
  workers(): Promise<WorkersInfo> { return this.call('GET', paths.workers); }
  /** Starts draining the media process (a rolling restart): no new sessions; it exits once its last one closed. */
  drain(): Promise<DrainStarted> { return this.call('POST', paths.drain); }

  /** Opens the event stream; see MediaEventStream. */
  watch(): MediaEventStream {
    return new MediaEventStream(this.base + paths.events, this.options.secret);
  }

  close(): void { this.agent.destroy(); }

  /** One request; `path` is relative to the control URL. Public for tools that send what the typed methods do not. */
  call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.secret}` };
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    return new Promise<T>((resolve, reject) => {
      const req = request(this.base + path, { method, headers, agent: this.agent, timeout: this.options.timeoutMs ?? 10_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) { resolve(parsed as T); return; }
          const err = (parsed as ControlErrorBody | undefined)?.error;
          reject(new MediaControlError(status, err?.code ?? 'internal_error', err?.message ?? `media answered ${status}`, err?.fields));
        });
        res.on('error', (e) => reject(new MediaControlError(0, 'unreachable', `media connection failed: ${e.message}`)));
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.options.timeoutMs ?? 10_000} ms`)));
      req.on('error', (e) => reject(new MediaControlError(0, 'unreachable', `media did not answer ${method} ${path}: ${e.message}`)));
      req.end(payload);
    });
  }
}

interface StreamEvents {
  /** Every line media sends, hello and heartbeats included. */
  event: [MediaEvent];
  /**
   * The stream ended, once: `shutdown` when media said it is stopping; `lost` when the connection broke, could not
   * be opened, or went silent for three heartbeats. In both cases media's sessions are gone (or must be treated
   * as gone): end their calls.
   */
  end: [{ reason: 'shutdown' | 'lost'; error?: Error }];
}

/** The control connection signaling holds open to notice session endings and the media process's death. */
export class MediaEventStream extends EventEmitter<StreamEvents> {
  private response: IncomingMessage | null = null;
  private silenceTimer: NodeJS.Timeout | null = null;
  private heartbeatMs = 5000;
  private ended = false;
  private sawShutdown = false;
  private readonly req;

  constructor(url: string, secret: string) {
    super();
    this.req = request(url, { method: 'GET', headers: { authorization: `Bearer ${secret}` }, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        this.finish(new Error(`media answered ${res.statusCode} to the event stream`));
        return;
      }
      this.response = res;
      res.setEncoding('utf8');
      let buffered = '';
      res.on('data', (chunk: string) => {
        buffered += chunk;
        let i: number;
        while ((i = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, i);
          buffered = buffered.slice(i + 1);
          if (line) this.onLine(line);
        }
      });
      res.on('end', () => this.finish());
      res.on('error', (e) => this.finish(e));
      res.on('close', () => this.finish());
    });
    this.req.on('error', (e) => this.finish(e));
    this.req.end();
  }

  /** Stops watching (no `end` event). */
  close(): void {
    this.ended = true;
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.req.destroy();
    this.response?.destroy();
  }

  private onLine(line: string): void {
    let event: MediaEvent;
    try { event = JSON.parse(line) as MediaEvent; } catch { return; }
    if (event.type === 'hello') this.heartbeatMs = event.heartbeatMs;
    if (event.type === 'shutdown') this.sawShutdown = true;
    this.armSilenceTimer();
    this.emit('event', event);
  }

  private armSilenceTimer(): void {
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.silenceTimer = setTimeout(() => {
      this.finish(new Error(`no heartbeat from media for ${3 * this.heartbeatMs} ms`));
      this.req.destroy();
      this.response?.destroy();
    }, 3 * this.heartbeatMs);
    this.silenceTimer.unref();
  }

  private finish(error?: Error): void {
    if (this.ended) return;
    this.ended = true;
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.emit('end', this.sawShutdown ? { reason: 'shutdown' } : { reason: 'lost', error });
  }
}
