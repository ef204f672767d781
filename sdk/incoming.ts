// Incoming calls in the browser: a socket that listens for calls to the numbers of a bounded client token
// (POST /v1/client-tokens), rings the page with `incoming`, and hands the socket to a Softphone for the call the page
// accepts (the server makes the listening socket the call's socket). After an accept it listens again on a new socket,
// where the calls still ringing ring again. Wire names live in protocol.ts only.
import { clientMessages, parseServerMessage, type ServerEvent } from './protocol.ts';
import { Softphone, type SoftphoneOptions } from './softphone.ts';

export interface ListenOptions {
  /** Signaling WebSocket URL (ws:// or wss://). */
  url: string;
  /** A client token (olct_..., voice:webrtc, from_numbers: the numbers to ring for), or a function that mints one:
   *  called for every socket (at start, after an accept, after a lost connection), so a token never runs out. */
  token: string | (() => Promise<string>);
  /** Listen again on a new socket after an accept or a lost connection (default true). */
  relisten?: boolean;
  /** Wait before listening again after a lost connection, doubled up to 30 s while it keeps failing (default 1000 ms). */
  retryMs?: number;
}

/** What an accepted call's Softphone gets (as SoftphoneOptions, without the token and URL). */
export type AcceptOptions = Pick<SoftphoneOptions, 'audio' | 'microphone' | 'hangupTimeoutMs'>;

/** One call ringing this page. */
export interface IncomingCall {
  callId: string;
  /** The caller (E.164, or what the carrier sent, e.g. anonymous). */
  from: string;
  /** The number called (one of the listening numbers). */
  to: string;
  /** How long it rings at most from when it rang here, in seconds (null when the server did not say). */
  ringTimeoutSeconds: number | null;
  /** Takes the call: a Softphone in state `connecting` that runs the call like a dialed one (welcome, media,
   *  `answered`, `ended`); it ends with error `answered_elsewhere` when another browser took it first, `call_ended`
   *  when it stopped ringing. */
  accept(opts?: AcceptOptions): Softphone;
  /** Stops it ringing here (it rings on elsewhere until its ring time runs out). */
  decline(): void;
}

export interface IncomingStopped { callId: string; reason: 'answered_elsewhere' | 'ended' | 'taken' | 'declined' | 'relisten' | string }
export interface ListenError { code: string; message: string }

/** Events (CustomEvent, read `event.detail`): `listening` {numbers}; `incoming` IncomingCall; `stopped`
 *  IncomingStopped (answered_elsewhere: another browser took it; ended: the caller hung up or nobody answered;
 *  declined; relisten: this socket became another call's and the page listens again, where it rings again);
 *  `error` ListenError (a refused token, a lost connection); `closed` {code, reason} when a listening socket closes. */
export class IncomingCalls extends EventTarget {
  private ws: WebSocket | null = null;
  private stopped = true;
  private readonly calls = new Map<string, IncomingCall>();
  /** The call being accepted on this socket and its Softphone (the welcome hands the socket over). */
  private accepting: { callId: string; phone: Softphone } | null = null;
  private numbersNow: string[] = [];
  private retry: ReturnType<typeof setTimeout> | null = null;
  private failures = 0;

  constructor(private readonly opts: ListenOptions) {
    super();
    if (!opts.url) throw new TypeError('IncomingCalls needs the signaling url');
    if (!opts.token) throw new TypeError('IncomingCalls needs a client token (or a function that mints one)');
  }

  /** The numbers listened for (empty until `listening`). */
  get numbers(): string[] { return [...this.numbersNow]; }
  /** Whether a socket listens now. */
  get listening(): boolean { return this.numbersNow.length > 0 && this.ws?.readyState === WebSocket.OPEN; }
  /** The calls ringing here now. */
  get ringing(): IncomingCall[] { return [...this.calls.values()]; }

  /** Starts listening; resolves with the numbers once the server says `listening`, rejects when the token is refused
   *  or the socket cannot open (later losses are retried, see ListenOptions.relisten). */
  start(): Promise<string[]> {
    this.stopped = false;
    return this.connect();
  }

  /** Stops listening: the socket closes, the calls ringing here stop (`stopped`, reason `ended` is not sent: they
   *  simply stop). A call already accepted is not affected. */
  stop(): void {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.calls.clear();
    this.numbersNow = [];
    const ws = this.ws;
    this.ws = null;
    if (ws && !this.accepting && ws.readyState <= WebSocket.OPEN) ws.close(1000, 'stopped listening');
  }

  private async connect(): Promise<string[]> {
    const token = typeof this.opts.token === 'string' ? this.opts.token : await this.opts.token();
    if (this.stopped) return [];
    const ws = new WebSocket(this.opts.url);
    this.ws = ws;
    return new Promise<string[]>((resolve, reject) => {
      let settled = false;
      const settle = (err: ListenError | null) => {
        if (settled) return;
        settled = true;
        if (err) reject(Object.assign(new Error(err.message), { code: err.code }));
        else resolve(this.numbers);
      };
      ws.onopen = () => ws.send(clientMessages.listen(token));
      ws.onmessage = (ev) => {
        let m: ServerEvent;
        try {
          m = parseServerMessage(String(ev.data));
        } catch {
          return;
        }
        if (m.kind === 'listening') {
          this.failures = 0;
          this.numbersNow = m.numbers;
          this.emit('listening', { numbers: m.numbers });
          settle(null);
          return;
        }
        this.onMessage(ws, m, String(ev.data));
        if (m.kind === 'error') settle({ code: m.code, message: m.message });
      };
      ws.onclose = (ev) => {
        if (this.ws === ws) this.lost(ev);
        settle({ code: 'connection_lost', message: `signaling closed (${ev.code}${ev.reason ? ` ${ev.reason}` : ''})` });
      };
    });
  }

  private onMessage(ws: WebSocket, m: ServerEvent, text: string) {
    switch (m.kind) {
      case 'incoming': {
        if (this.calls.has(m.callId) || this.accepting) return;
        const call: IncomingCall = {
          callId: m.callId, from: m.from, to: m.to, ringTimeoutSeconds: m.ringTimeoutSeconds,
          accept: (o) => this.accept(ws, call, o),
          decline: () => this.decline(ws, call),
        };
        this.calls.set(m.callId, call);
        this.emit('incoming', call);
        return;
      }
      case 'incoming_stopped': {
        if (this.accepting?.callId === m.callId) {
          // The accept lost (taken, ended): the socket still listens.
          const { phone } = this.accepting;
          this.accepting = null;
          phone.notTaken(m.reason);
        }
        if (this.calls.delete(m.callId)) this.emit('stopped', { callId: m.callId, reason: m.reason });
        return;
      }
      case 'welcome': {
        const a = this.accepting;
        if (!a || a.callId !== m.callId) return;
        // The socket is the call's now: the page listens again on a new one, where the calls still ringing ring again.
        this.accepting = null;
        this.ws = null;
        this.numbersNow = [];
        this.calls.delete(m.callId);
        for (const c of this.calls.values()) this.emit('stopped', { callId: c.callId, reason: 'relisten' });
        this.calls.clear();
        a.phone.takeSocket(ws, text);
        this.again(0);
        return;
      }
      case 'error':
        this.emit('error', { code: m.code, message: m.message });
        return;
      default:
    }
  }

  private accept(ws: WebSocket, call: IncomingCall, o: AcceptOptions = {}): Softphone {
    if (this.accepting) throw new Error('another incoming call is being accepted');
    if (this.ws !== ws || ws.readyState !== WebSocket.OPEN || !this.calls.has(call.callId)) {
      throw new Error('this call no longer rings here');
    }
    const phone = new Softphone({ ...o, url: this.opts.url, token: `incoming:${call.callId}` });
    phone.beginAccept(call.callId);
    this.accepting = { callId: call.callId, phone };
    ws.send(clientMessages.accept(call.callId));
    return phone;
  }

  private decline(ws: WebSocket, call: IncomingCall) {
    if (!this.calls.has(call.callId)) return;
    if (this.ws === ws && ws.readyState === WebSocket.OPEN) ws.send(clientMessages.decline(call.callId));
    else {
      this.calls.delete(call.callId);
      this.emit('stopped', { callId: call.callId, reason: 'declined' });
    }
  }

  /** A listening socket closed: its calls stop; it listens again unless stopped (or the token itself was refused). */
  private lost(ev: CloseEvent) {
    this.ws = null;
    this.numbersNow = [];
    for (const c of this.calls.values()) this.emit('stopped', { callId: c.callId, reason: 'ended' });
    this.calls.clear();
    if (this.accepting) {
      const { phone } = this.accepting;
      this.accepting = null;
      phone.notTaken('ended');
    }
    this.emit('closed', { code: ev.code, reason: ev.reason });
    // A refused string token (4401) would be refused again; a minting function gets a new token.
    if (ev.code === 4401 && typeof this.opts.token === 'string') return;
    this.failures++;
    this.again(Math.min(30_000, (this.opts.retryMs ?? 1000) * 2 ** Math.min(this.failures - 1, 5)));
  }

  private again(delayMs: number) {
    if (this.stopped || this.opts.relisten === false || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      if (this.stopped || this.ws) return;
      // A failure was reported already (`error` for a refusal, `closed` for a lost socket, which retries by itself).
      this.connect().catch(() => undefined);
    }, delayMs);
  }

  private emit(type: string, detail: unknown) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}
