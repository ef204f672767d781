// The softphone WebSocket (/v1/softphone): one socket per browser call. The browser says hello with its ticket
// (path A) or room token (path B); the ticket is redeemed atomically in Postgres (any signaling process may get the
// socket; a ticket redeemed on one is refused on every other); path A then asks the workers to originate the carrier
// leg, path B attaches to the leg already placed. Call progress committed anywhere arrives on Redis pub/sub and is
// pushed as ringing / answered / ended frames. A socket that closes before the answer abandons the setup
// (CANCELED, connection_unconfirmed); after the answer the call ends normally.
import uWS from 'uWebSockets.js';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { LegAccounts } from '../shared/channels/legs.ts';
import type { CallRuntime } from '../shared/calls/runtime.ts';
import { isTerminal, type CallRow } from '../shared/calls/model.ts';
import { loadCall } from '../shared/calls/store.ts';
import { progressChannel, progressOf, type CallProgress } from '../shared/tickets/progress.ts';
import { TurnBatcher } from '../shared/batch.ts';
import { endBrowserLeg, redeemTickets, type RedeemRequest, type Redeemed, type TicketKind } from '../shared/tickets/tickets.ts';
import { verifyRoomToken } from '../shared/tokens/room-token.ts';
import { MediaControlError } from '../shared/media/control-client.ts';
import type { MediasoupObject } from '../shared/media/protocol.ts';
import type { MediaFleet } from './media-fleet.ts';
import { IncomingCalls } from './incoming.ts';
import { incomingChannel } from '../shared/calls/incoming-notice.ts';
import { ERRORS, MEDIA_MESSAGES, PROTOCOL_VERSION, errorFrame, parseMessage, type ClientMessage, type ErrorCode } from './protocol.ts';

export const SOFTPHONE_PATH = '/v1/softphone';
const HELLO_TIMEOUT_MS = 10_000;
const RANK: Record<string, number> = { QUEUED: 0, RINGING: 1, ANSWERED: 2 };
const rank = (status: string) => RANK[status] ?? 3;

interface Session {
  ws: uWS.WebSocket<object>;
  open: boolean;
  /** listening: hello with a client token, waiting for incoming calls (signaling/incoming.ts). */
  state: 'hello' | 'redeeming' | 'attached' | 'listening';
  callId: string | null;
  organizationId: string | null;
  /** Rank of the last progress frame sent (frames never go backwards; duplicates are dropped). */
  sent: number;
  /** welcome went out; until then ringing/answered are held (held: the furthest one), so they never precede it. */
  welcomed: boolean;
  held: CallProgress | null;
  answered: boolean;
  helloTimer: NodeJS.Timeout | null;
  /** The call's media session exists on the media process (created at redemption, until the call ends). */
  media: boolean;
  /** The browser's transports on the media process, by id: their direction. */
  transports: Map<string, 'send' | 'recv'>;
  /** The sandbox far end was asked to answer (once, after the call is answered). */
  farEnd: boolean;
}

export interface SoftphoneStats { sockets: number; redeemed: number; refused: Map<string, number> }

/** How long and how many unclaimed progress messages are kept (see Softphone.unclaimed). */
const UNCLAIMED_MS = 10_000;
const UNCLAIMED_MAX = 20_000;

export class Softphone {
  private readonly sessions = new Map<uWS.WebSocket<object>, Session>();
  private readonly byCall = new Map<string, Session>();
  private subscriber: Redis | null = null;
  /** Progress of calls no socket of ours holds, kept a few seconds: a redemption finds what was published between
   *  its commit and its subscription (byCall) here, without reading the call back. */
  private readonly unclaimed = new Map<string, { p: CallProgress; at: number }>();
  readonly legs: LegAccounts;
  /** The hellos of one event-loop turn are redeemed in one statement (their dial jobs are added together too:
   *  CallQueues.enqueueDial). */
  private readonly redemptions: TurnBatcher<RedeemRequest, Redeemed>;
  readonly stats: SoftphoneStats = { sockets: 0, redeemed: 0, refused: new Map() };
  /** CARRIER=sip: a call's media session is a `sip` one, whose far end is the call's SIP leg (no sandbox far end). */
  private readonly sip: boolean;
  readonly incoming: IncomingCalls<Session>;

  /** media: the media fleet (signaling/media-fleet.ts: one media process, or several with MEDIA_FLEET=1); null when
   *  this signaling carries no media (CARRIER=livekit, where LiveKit carries it, or SIGNALING_MEDIA=off):
   *  welcome.media is then null and media messages answer media_unavailable. */
  constructor(private readonly rt: CallRuntime, private readonly instance: string, private readonly log: Logger,
    private readonly media: MediaFleet | null = null) {
    this.legs = new LegAccounts(rt.deps.redis, rt.deps.key);
    this.sip = rt.deps.config.carrier === 'sip';
    this.redemptions = new TurnBatcher((reqs) => redeemTickets(rt.deps.db, reqs, { instance }));
    this.incoming = new IncomingCalls<Session>(rt, instance, log, {
      send: (s, frame) => this.send(s, JSON.stringify(frame)),
      fail: (s, code, message) => this.fail(s, code, message),
      attach: (s, call) => this.attachInbound(s, call),
      isOpen: (s) => s.open,
    });
  }

  async start(app: uWS.TemplatedApp): Promise<void> {
    if (this.media) {
      // A media process is gone (or restarted): every call of ours it carried has lost its audio.
      this.media.on('lost', (reason, carries) => {
        for (const s of this.byCall.values()) if (s.media && carries(s.callId!)) this.mediaLost(s, reason);
      });
      this.media.on('session_closed', (callId, reason) => {
        const s = this.byCall.get(callId);
        if (s?.media) this.mediaLost(s, reason);
      });
    }
    this.subscriber = this.rt.deps.redis.duplicate({ enableAutoPipelining: false });
    const incoming = incomingChannel(this.rt.deps.key);
    this.subscriber.on('message', (ch, msg: string) => (ch === incoming ? this.incoming.onNotice(msg) : this.onProgress(msg)));
    await this.subscriber.subscribe(progressChannel(this.rt.deps.key), incoming);
    app.ws<object>(SOFTPHONE_PATH, {
      idleTimeout: 60,
      maxPayloadLength: 64 * 1024,
      sendPingsAutomatically: true,
      open: (ws) => {
        const s: Session = { ws, open: true, state: 'hello', callId: null, organizationId: null, sent: 0, welcomed: false, held: null, answered: false,
          helloTimer: null, media: false, transports: new Map(), farEnd: false };
        s.helloTimer = setTimeout(() => this.fail(s, 'hello_timeout'), HELLO_TIMEOUT_MS);
        this.sessions.set(ws, s);
        this.stats.sockets++;
      },
      message: (ws, data) => {
        const s = this.sessions.get(ws);
        if (s) this.onMessage(s, Buffer.from(data).toString('utf8')).catch((err) => {
          this.log.error({ err, call_id: s.callId }, 'softphone message failed');
          this.fail(s, 'internal_error');
        });
      },
      close: (ws) => {
        const s = this.sessions.get(ws);
        if (!s) return;
        s.open = false;
        this.sessions.delete(ws);
        this.stats.sockets--;
        if (s.helloTimer) clearTimeout(s.helloTimer);
        this.incoming.drop(s);
        if (s.callId) this.onClosed(s).catch((err) => this.log.error({ err, call_id: s.callId }, 'socket close handling failed'));
      },
    });
  }

  async stop(): Promise<void> {
    for (const s of this.sessions.values()) if (s.open) s.ws.end(1001, 'server shutting down');
    await this.subscriber?.quit().catch(() => undefined);
  }

  private send(s: Session, frame: string) {
    if (s.open) s.ws.cork(() => s.ws.send(frame));
  }

  private fail(s: Session, code: ErrorCode, message?: string) {
    this.stats.refused.set(code, (this.stats.refused.get(code) ?? 0) + 1);
    if (!s.open) return;
    this.send(s, errorFrame(code, message));
    if (ERRORS[code].fatal) {
      s.open = false;
      s.ws.end(ERRORS[code].close, code);
    }
  }

  private async onMessage(s: Session, text: string): Promise<void> {
    const m = parseMessage(text);
    if (s.state === 'listening') {
      if (m?.type === 'accept') return this.incoming.accept(s, m.call_id);
      if (m?.type === 'decline') return this.incoming.decline(s, m.call_id);
      if (m?.type === 'ping') return this.send(s, JSON.stringify({ type: 'pong', ...(m.id !== undefined ? { id: m.id } : {}) }));
      return this.fail(s, 'bad_message');
    }
    if (s.state !== 'attached') {
      if (s.state === 'redeeming') return; // one hello at a time; the rest waits for its answer
      if (!m || m.type !== 'hello') return this.fail(s, 'hello_required');
      if (m.v !== PROTOCOL_VERSION) return this.fail(s, 'unsupported_version');
      s.state = 'redeeming';
      if (s.helloTimer) clearTimeout(s.helloTimer);
      if (m.client_token !== undefined) {
        await this.incoming.listen(s, m.client_token);
        if (this.incoming.isListening(s)) s.state = 'listening';
        return;
      }
      return this.redeem(s, m.ticket !== undefined ? { token: m.ticket, kind: 'webrtc' } : { token: m.room_token!, kind: 'room' });
    }
    if (!m) return this.fail(s, 'bad_message');
    switch (m.type) {
      case 'ping': this.send(s, JSON.stringify({ type: 'pong', ...(m.id !== undefined ? { id: m.id } : {}) })); return;
      case 'hangup':
        await this.rt.transition(s.callId!, { type: 'hangup', mode: 'hangup', at: new Date() }, { bestEffort: true });
        return;
      case 'hello': case 'accept': case 'decline': return this.fail(s, 'bad_message');
      default:
        if (MEDIA_MESSAGES.has(m.type)) return this.relay(s, m);
    }
  }

  /** The socket took an incoming call (signaling/incoming.ts): from now on it is the call's socket, as after a
   *  redeemed ticket. The call rings until the SIP owner (or, on the sandbox, the script) answered the caller; then
   *  progress says answered. */
  private async attachInbound(s: Session, call: CallRow): Promise<void> {
    s.callId = call.id;
    s.organizationId = call.organization_id;
    s.state = 'attached';
    s.sent = 1;
    this.byCall.set(call.id, s);
    await this.legs.up(call.organization_id, call.id, 'browser');
    if (!s.open) return this.onClosed(s);
    // The call's `sip` session, which the inbound leg joins when the SIP owner answers the caller.
    const media = await this.openMedia(s, call.id);
    if (media === false) return;
    this.send(s, JSON.stringify({ type: 'welcome', v: PROTOCOL_VERSION, call_id: call.id, path: 'inbound', status: call.status, media }));
    s.welcomed = true;
    if (s.held) { const held = s.held; s.held = null; this.push(s, held); }
    const missed = this.unclaimed.get(call.id);
    if (missed) { this.unclaimed.delete(call.id); this.push(s, missed.p); }
    // The sandbox carrier: once the caller answered, the sandbox far end plays to the browser (as on a dialed call).
    this.attachFarEnd(s);
  }

  /** A media message: relayed to the media process, its answer sent back with the request's id. */
  private async relay(s: Session, m: Exclude<ClientMessage, { type: 'hello' | 'hangup' | 'ping' | 'accept' | 'decline' }>): Promise<void> {
    const id = m.id;
    const reply = (frame: Record<string, unknown>) => this.send(s, JSON.stringify({ ...frame, ...(id !== undefined ? { id } : {}) }));
    if (!this.media || !s.media) {
      this.stats.refused.set('media_unavailable', (this.stats.refused.get('media_unavailable') ?? 0) + 1);
      this.send(s, errorFrame('media_unavailable', undefined, id));
      return;
    }
    const callId = s.callId!;
    const known = (transportId: string) => {
      if (s.transports.has(transportId)) return true;
      this.send(s, errorFrame('bad_message', `unknown transport_id ${transportId}`, id));
      return false;
    };
    try {
      const media = await this.media.clientOf(callId);
      switch (m.type) {
        case 'transport': {
          if ([...s.transports.values()].includes(m.direction)) {
            this.send(s, errorFrame('bad_message', `this call has a ${m.direction} transport already`, id));
            return;
          }
          const t = await media.createBrowserTransport(callId, 'webrtc');
          s.transports.set(t.id, m.direction);
          reply({ type: 'transport_created', direction: m.direction, transport_id: t.id, ice_parameters: t.iceParameters,
            ice_candidates: t.iceCandidates, dtls_parameters: t.dtlsParameters });
          return;
        }
        case 'connect':
          if (!known(m.transport_id)) return;
          await media.connectBrowserTransport(callId, { transportId: m.transport_id, dtlsParameters: m.dtls_parameters as MediasoupObject });
          reply({ type: 'connected', transport_id: m.transport_id });
          return;
        case 'produce': {
          if (!known(m.transport_id)) return;
          const p = await media.produce(callId, m.rtp_parameters as MediasoupObject, m.transport_id);
          reply({ type: 'produced', producer_id: p.producerId });
          return;
        }
        case 'consume': {
          if (!known(m.transport_id)) return;
          const c = await media.consume(callId, m.rtp_capabilities as MediasoupObject, m.transport_id);
          reply({ type: 'consumed', consumer_id: c.id, producer_id: c.producerId, kind: c.kind, rtp_parameters: c.rtpParameters });
          return;
        }
        case 'resume':
          await media.resumeConsumer(callId);
          reply({ type: 'resumed', consumer_id: m.consumer_id });
          return;
      }
    } catch (err) {
      if (!(err instanceof MediaControlError)) throw err;
      this.stats.refused.set('media_error', (this.stats.refused.get('media_error') ?? 0) + 1);
      this.send(s, errorFrame('media_error', `${err.code}: ${err.message}`, id));
    }
  }

  /** The call's media is gone (media process lost, or its session closed there): the call ends, `media_lost`. */
  private mediaLost(s: Session, reason: string) {
    s.media = false;
    const callId = s.callId!;
    this.log.warn({ call_id: callId, reason }, 'media session lost: ending the call');
    this.rt.transition(callId, { type: 'abandon', reason: 'media_lost', at: new Date() }, { bestEffort: true })
      .catch((err) => this.log.error({ err, call_id: callId }, 'ending a call whose media was lost failed'));
  }

  /** Once the call is answered (and its media session exists), the sandbox far end answers: tone, then echo. */
  private attachFarEnd(s: Session) {
    if (this.sip) return; // the far end is the call's SIP leg
    if (!this.media || !s.media || !s.answered || s.farEnd) return;
    s.farEnd = true;
    const callId = s.callId!;
    this.media.clientOf(callId).then((client) => client.attachSandboxFarEnd(callId)).catch((err) => {
      this.log.warn({ err, call_id: callId }, 'attaching the sandbox far end failed');
      if (s.media && err instanceof MediaControlError && (err.code === 'unreachable' || err.code === 'not_found')) this.mediaLost(s, err.code);
    });
  }

  /** The call is over: its media session is closed (a session already gone is fine). */
  private closeMedia(s: Session) {
    if (!this.media || !s.media) return;
    s.media = false;
    this.media.closeSession(s.callId!).catch(() => undefined);
  }

  /** The call's router on the media process (null when this signaling carries no media); false when the socket
   *  is done with the call meanwhile (the call was ended for it: without a router it cannot carry audio). */
  private async openMedia(s: Session, callId: string): Promise<{ router_rtp_capabilities: MediasoupObject } | null | false> {
    if (!this.media) return null;
    let media: { router_rtp_capabilities: MediasoupObject };
    try {
      // CARRIER=sip: the call's `sip` session, which its SIP leg joins too (the browser talks through that leg).
      const created = await this.media.createSession(callId, this.sip ? { carrier: 'sip' } : {});
      s.media = true;
      media = { router_rtp_capabilities: created.rtpCapabilities };
    } catch (err) {
      this.log.error({ err, call_id: callId }, 'media session could not be created: ending the call');
      await this.rt.transition(callId, { type: 'abandon', reason: 'media_lost', at: new Date() }, { bestEffort: true });
      return false;
    }
    if (!s.open) { await this.onClosed(s); return false; }
    // The call ended while its router was made (its `ended` went out already): nothing holds the session now.
    if (this.byCall.get(callId) !== s) { this.closeMedia(s); return false; }
    return media;
  }

  private async redeem(s: Session, t: { token: string; kind: TicketKind }): Promise<void> {
    const { db } = this.rt.deps;
    if (t.kind === 'room') {
      // The room token must verify (signature, expiry, a join grant for a call's room) before it is looked up.
      const ok = await verifyRoomToken(await this.rt.deps.tokenKeys.roomKeyPair(), t.token);
      if (!ok) return this.fail(s, 'ticket_invalid');
    } else if (!t.token.startsWith('olwt_') || t.token.length > 100) {
      return this.fail(s, 'ticket_invalid');
    }
    const r = await this.redemptions.add(t);
    if (!r.ok) return this.fail(s, r.code);
    const call = r.call;
    s.callId = call.id;
    s.organizationId = call.organization_id;
    s.state = 'attached';
    this.stats.redeemed++;
    // Subscribed before anything can move the call, so no progress is missed; the state read below covers what
    // happened before (path B: the carrier leg may be ringing already).
    this.byCall.set(call.id, s);
    await this.legs.up(call.organization_id, call.id, 'browser');
    if (!s.open) return this.onClosed(s);
    const media = await this.openMedia(s, call.id);
    if (media === false) return;
    this.send(s, JSON.stringify({ type: 'welcome', v: PROTOCOL_VERSION, call_id: call.id, path: t.kind, status: call.status, media }));
    s.welcomed = true;
    if (s.held) { const held = s.held; s.held = null; this.push(s, held); }
    if (t.kind === 'webrtc') await this.rt.queues.enqueueDial(call.id);
    // Path A: before redemption nothing moves the call without also ending it (which the redemption refuses), so
    // all it can have missed is progress published since its commit, kept in `unclaimed`. Path B's carrier leg
    // was placed at issue and moves on its own: its state is read back.
    if (t.kind === 'webrtc') {
      const missed = this.unclaimed.get(call.id);
      if (missed) { this.unclaimed.delete(call.id); this.push(s, missed.p); }
    } else {
      const now = await loadCall(db, call.id);
      if (now) this.push(s, progressOf(now));
    }
    this.attachFarEnd(s);
  }

  private onProgress(msg: string) {
    let p: CallProgress;
    try { p = JSON.parse(msg); } catch { return; }
    // Every call's progress is published (call streams read it too); signaling carries only browser calls.
    if (p.browser === false) return;
    const s = this.byCall.get(p.call_id);
    if (s) this.push(s, p);
    else this.keepUnclaimed(p);
    // Leg accounting of the carrier leg (the reconciler repairs anything missed).
    if (p.status === 'RINGING' || p.status === 'ANSWERED') {
      if (s) this.legs.up(p.organization_id, p.call_id, 'destination').catch(() => undefined);
    } else if (isTerminal(p.status)) {
      this.legs.down(p.organization_id, p.call_id).catch(() => undefined);
    }
  }

  private keepUnclaimed(p: CallProgress) {
    const now = Date.now();
    if (this.unclaimed.size >= UNCLAIMED_MAX) {
      for (const [id, u] of this.unclaimed) if (now - u.at > UNCLAIMED_MS) this.unclaimed.delete(id);
      if (this.unclaimed.size >= UNCLAIMED_MAX) this.unclaimed.clear();
    }
    const kept = this.unclaimed.get(p.call_id);
    if (!kept || rank(p.status) >= rank(kept.p.status)) this.unclaimed.set(p.call_id, { p, at: now });
  }

  /** Sends the frames a progress message calls for, never backwards and never twice. */
  private push(s: Session, p: CallProgress) {
    const r = rank(p.status);
    if (r <= s.sent) return;
    if (!s.welcomed && r < 3) {
      if (!s.held || r > rank(s.held.status)) s.held = p;
      return;
    }
    if (r >= 1 && s.sent < 1 && r < 3) this.send(s, JSON.stringify({ type: 'ringing', call_id: p.call_id }));
    if (r >= 2 && r < 3) {
      s.answered = true;
      this.send(s, JSON.stringify({ type: 'answered', call_id: p.call_id }));
      this.attachFarEnd(s);
    }
    if (r === 3) {
      this.send(s, JSON.stringify({ type: 'ended', call_id: p.call_id, status: p.status, call_outcome: p.call_outcome,
        failure_code: p.failure_code, failure_category: p.failure_category, disconnection_reason: p.disconnection_reason,
        duration_seconds: p.duration_seconds }));
      s.sent = r;
      this.byCall.delete(p.call_id);
      this.closeMedia(s);
      endBrowserLeg(this.rt.deps.db, p.call_id, 'completed').catch(() => undefined);
      if (s.open) {
        s.open = false;
        s.ws.end(1000, 'call ended');
      }
      return;
    }
    s.sent = r;
  }

  /** The socket is gone: before the answer an abandoned setup, after it a normal end; the browser leg ends. */
  private async onClosed(s: Session): Promise<void> {
    const callId = s.callId!;
    if (this.byCall.get(callId) === s) this.byCall.delete(callId);
    this.closeMedia(s);
    const applied = await this.rt.transition(callId, { type: 'abandon', reason: 'setup_abandoned', at: new Date() }, { bestEffort: true });
    await endBrowserLeg(this.rt.deps.db, callId, applied?.step.result === 'applied' ? 'local_hangup' : 'completed');
    await this.legs.down(s.organizationId!, callId, ['browser']);
  }

  /** For the reconciler: calls whose socket this process holds. */
  holds(callId: string) { return this.byCall.has(callId); }

  /** Calls whose socket this process holds (their browser legs). */
  get heldCalls(): number { return this.byCall.size; }
}

export type { CallRow };
