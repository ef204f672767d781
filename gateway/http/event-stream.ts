// Call event streams (GET /v1/calls/stream): Server-Sent Events of an organization's call changes. The source is the
// one the softphone sockets already use: every committed insert and transition of a call is PUBLISHed on Redis
// (shared/tickets/progress.ts). This gateway subscribes once (a connection of its own, from the first stream on) and
// writes each message to the open streams of the call's organization (an agent's stream: only the calls its user
// placed). Pub/sub keeps no history and gives no ordered ids, so there is no Last-Event-ID resume: a client that
// reconnects re-lists (GET /v1/calls) and then follows the stream again.
//
// Bounds: at most CALL_STREAMS_PER_ORGANIZATION open streams per organization on this gateway (429 rate_limited
// beyond); a heartbeat comment every CALL_STREAM_HEARTBEAT_SECONDS keeps proxies from closing an idle stream and
// lets a client see a dead one; a client that stops reading is cut off once uWS holds STREAM_BACKLOG_MAX writes it
// could not send; a stream ends when the client goes away (uWS onAborted), when its credential is revoked (key
// revoked, signed out, member removed) or its session reaches its end, and when the gateway stops.
import type { Redis } from 'ioredis';
import type uWS from 'uWebSockets.js';
import { ApiError } from '../../shared/http/error-status.ts';
import type { Keyer } from '../../shared/redis.ts';
import { progressChannel, type CallProgress } from '../../shared/tickets/progress.ts';
import type { GatewayDeps } from './types.ts';

/** What a route handler asks for (Reply.stream): the organization's call events, an agent's only for its user. */
export interface CallStreamSpec {
  organizationId: string;
  /** Only calls this user placed (an agent's credential); null: every call of the organization. */
  onlyUserId: string | null;
  /** The credential (key id or session id) and its user: the stream ends when either is revoked. */
  credentialId: string;
  userId: string | null;
  /** When the credential stops being valid (a session's hard end), ms since the epoch; null: no end of its own. */
  endsAtMs: number | null;
}

/** The response side of the exchange (as file-response.ts's StreamTarget). */
export interface StreamTarget {
  readonly res: uWS.HttpResponse;
  readonly aborted: boolean;
  onAbort: (() => void) | null;
}

/** A stream the pipeline decided to open: start it once the status line and headers are written, or cancel it. */
export interface StreamPlan {
  readonly headers: Record<string, string>;
  /** Writes the stream's first bytes (inside the cork that wrote the headers) and keeps it open. */
  start(target: StreamTarget): void;
  /** The answer was not sent (the client left, or an error answered instead): gives the slot back. */
  cancel(): void;
}

export const STREAM_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
};

/** How long EventSource waits before reconnecting (the stream's `retry:` field). */
export const RECONNECT_MS = 3000;
/** Writes uWS may hold for a stream that does not read before the stream is cut. */
export const STREAM_BACKLOG_MAX = 500;

/** The `data` of an `event: call` message: the call's state after the change. */
export function callStreamEvent(p: CallProgress) {
  return {
    call_id: p.call_id, status: p.status, type: p.type, direction: p.direction, from_number: p.from_number,
    to_number: p.to_number, connect_number: p.connect_number, call_outcome: p.call_outcome, failure_code: p.failure_code,
    failure_category: p.failure_category, disconnection_reason: p.disconnection_reason, duration_seconds: p.duration_seconds,
    issued_by_user_id: p.user_id, created_at: p.created_at, answered_at: p.answered_at, ended_at: p.ended_at,
    updated_at: p.updated_at,
  };
}

class OpenStream {
  target: StreamTarget | null = null;
  backlog = 0;
  closed = false;
  constructor(readonly spec: CallStreamSpec, readonly release: () => void) {}
}

export class CallStreams {
  private subscriber: Redis | null = null;
  private subscribed: Promise<void> | null = null;
  /** Streams per organization, counted from the moment one is granted (before its headers are written). */
  private readonly byOrg = new Map<string, Set<OpenStream>>();
  private heartbeat: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly deps: Pick<GatewayDeps, 'redis' | 'key' | 'log'>, readonly perOrganization: number,
    private readonly heartbeatMs: number) {}

  /** Streams open (or being opened) for an organization on this gateway. */
  openFor(organizationId: string): number { return this.byOrg.get(organizationId)?.size ?? 0; }

  /** Grants a stream (429 when the organization holds its maximum) once this gateway's subscription is in effect,
   *  so a change committed after the client got the headers is never missed. */
  async open(spec: CallStreamSpec): Promise<StreamPlan> {
    if (this.stopped) throw new ApiError('service_unavailable', 'This gateway is stopping; reconnect.', { headers: { 'Retry-After': '1' } });
    let set = this.byOrg.get(spec.organizationId);
    if ((set?.size ?? 0) >= this.perOrganization) {
      throw new ApiError('rate_limited',
        `This organization already has ${this.perOrganization} call streams open on this gateway; close one (or reuse it) before opening another.`,
        { headers: { 'Retry-After': String(Math.ceil(RECONNECT_MS / 1000)) },
          resolutionHint: 'One stream per browser tab or service is enough: it carries every call of the organization. The limit is CALL_STREAMS_PER_ORGANIZATION.' });
    }
    if (!set) this.byOrg.set(spec.organizationId, (set = new Set()));
    const stream = new OpenStream(spec, () => this.remove(stream));
    set.add(stream);
    try {
      await this.subscribe();
    } catch (err) {
      stream.release();
      throw err;
    }
    this.ensureHeartbeat();
    return {
      headers: { ...STREAM_HEADERS },
      start: (target) => this.start(stream, target),
      cancel: () => stream.release(),
    };
  }

  /** Ends the streams of a revoked credential: a key or session id, or every stream of a user (`user:<id>`). */
  revoked(subject: string): void {
    const userId = subject.startsWith('user:') ? subject.slice(5) : null;
    for (const set of this.byOrg.values()) {
      for (const s of set) {
        if (userId !== null ? s.spec.userId === userId : s.spec.credentialId === subject) this.end(s);
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const set of [...this.byOrg.values()]) for (const s of [...set]) this.end(s);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    await this.subscriber?.quit().catch(() => undefined);
    this.subscriber = null;
  }

  private subscribe(): Promise<void> {
    if (!this.subscribed) {
      const sub = this.deps.redis.duplicate({ enableAutoPipelining: false });
      this.subscriber = sub;
      sub.on('error', (err) => this.deps.log.warn({ err }, 'call stream subscriber: redis error'));
      sub.on('message', (_ch: string, msg: string) => this.onMessage(msg));
      this.subscribed = sub.subscribe(progressChannel(this.deps.key as Keyer)).then(() => undefined, (err) => {
        this.subscribed = null;
        this.subscriber = null;
        sub.disconnect();
        throw err;
      });
    }
    return this.subscribed;
  }

  private start(s: OpenStream, target: StreamTarget): void {
    if (s.closed) return;
    s.target = target;
    target.onAbort = () => s.release();
    // uWS is inside the cork that wrote the headers: this is the first chunk of the body.
    this.write(s, `retry: ${RECONNECT_MS}\n: stream open\n\n`, false);
  }

  private onMessage(msg: string): void {
    let p: CallProgress;
    try { p = JSON.parse(msg); } catch { return; }
    const set = this.byOrg.get(p.organization_id);
    if (!set?.size) return;
    const frame = `event: call\ndata: ${JSON.stringify(callStreamEvent(p))}\n\n`;
    for (const s of set) {
      if (s.spec.onlyUserId !== null && s.spec.onlyUserId !== p.user_id) continue;
      this.write(s, frame);
    }
  }

  private ensureHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => {
      const now = Date.now();
      for (const set of [...this.byOrg.values()]) {
        for (const s of [...set]) {
          if (s.spec.endsAtMs !== null && s.spec.endsAtMs <= now) this.end(s);
          else this.write(s, ': heartbeat\n\n');
        }
      }
    }, this.heartbeatMs);
    this.heartbeat.unref();
  }

  /** One chunk to a started stream; cork: false when already inside a cork. */
  private write(s: OpenStream, chunk: string, cork = true): void {
    const t = s.target;
    if (!t || s.closed) return;
    if (t.aborted) return s.release();
    let ok = true;
    const w = () => { ok = t.res.write(chunk); };
    if (cork) t.res.cork(w); else w();
    if (ok) return;
    // uWS keeps what it could not send and sends it when the socket drains; a client that never reads is cut off.
    if (++s.backlog > STREAM_BACKLOG_MAX) {
      this.deps.log.warn({ organization_id: s.spec.organizationId }, 'call stream cut: the client does not read');
      return this.end(s);
    }
    if (s.backlog === 1) t.res.onWritable(() => { s.backlog = 0; return true; });
  }

  /** Ends a stream from the server's side (the client may reconnect). */
  private end(s: OpenStream): void {
    const t = s.target;
    s.release();
    if (t && !t.aborted) {
      t.onAbort = null;
      t.res.cork(() => t.res.end());
    }
  }

  private remove(s: OpenStream): void {
    if (s.closed) return;
    s.closed = true;
    const set = this.byOrg.get(s.spec.organizationId);
    set?.delete(s);
    if (set && set.size === 0) this.byOrg.delete(s.spec.organizationId);
    if (this.byOrg.size === 0 && this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = null;
    }
  }
}
