// Inbound calls on the softphone WebSocket: browsers that listen for calls to their numbers, and the ringing of each
// inbound call on every signaling process (docs/reference/browser-calling.md, "Incoming calls").
//
//   listen   hello {client_token}: a bounded client token with voice:webrtc; the socket listens for calls to the
//            token's from_numbers that are ACTIVE numbers of its organization (answered `listening`).
//   ring     the SIP owner of an inbound call (or the gateway, for a sandbox call rung with POST
//            /v1/sandbox/calls/inbound {ring: true}) publishes `ring` on <prefix>:calls:incoming; every signaling process
//            sends `incoming` to its listening sockets for that organization and number.
//   accept   {type: accept, call_id}: the first browser to accept takes the call (acceptInbound: one winner across
//            every process, decided under the call row's lock); it publishes `taken`, its socket becomes the call's
//            socket (welcome, then answered / ended like any call), and the owner answers the SIP INVITE (a sandbox
//            call's caller answers here, once the socket holds the call: shared/calls/inbound.ts answerAccepted).
//   late     a socket that starts listening while calls to its numbers ring is rung for them at once (read from the
//            calls table: inbound, RINGING, no browser leg yet, within its ring time).
//   decline  {type: decline, call_id}: the call stops ringing on that socket only (`incoming_stopped`, declined).
//   stop     `taken` or `over` (the call stopped ringing: the caller hung up, nobody answered) sends
//            `incoming_stopped` to every other socket it rang. A listening socket keeps listening.
import type { Logger } from 'pino';
import { acceptInbound, answerAccepted } from '../shared/calls/inbound.ts';
import type { CallRow } from '../shared/calls/model.ts';
import type { CallRuntime } from '../shared/calls/runtime.ts';
import { publishIncoming, type IncomingNotice } from '../shared/calls/incoming-notice.ts';
import { principalFromClaims } from '../shared/tokens/client-principal.ts';
import type { ErrorCode } from './protocol.ts';

/** What the softphone does for this module with its sockets. */
export interface IncomingHooks<S> {
  send(s: S, frame: Record<string, unknown>): void;
  fail(s: S, code: ErrorCode, message?: string): void;
  /** The socket won the call: it becomes the call's socket. */
  attach(s: S, call: CallRow): Promise<void>;
  isOpen(s: S): boolean;
}

interface Listener { organizationId: string; numbers: Set<string>; who: string; /** Calls that rang it (the last 100). */ rang: Set<string> }

/** A ring is forgotten this long after its ring timeout, when no `taken` / `over` came. */
const RING_GRACE_MS = 10_000;
const STOPPED_KEPT = 2000;

export class IncomingCalls<S> {
  private readonly listeners = new Map<S, Listener>();
  /** Calls ringing here: the sockets they rang. */
  private readonly ringing = new Map<string, { rung: Set<S>; timer: NodeJS.Timeout }>();
  /** Calls that stopped ringing (`taken` / `over` seen; the last STOPPED_KEPT): a late ring skips them. */
  private readonly stopped = new Set<string>();
  readonly stats = { listening: 0, rung: 0, accepted: 0 };

  constructor(private readonly rt: CallRuntime, private readonly instance: string, private readonly log: Logger, private readonly hooks: IncomingHooks<S>) {}

  get listening(): number { return this.listeners.size; }

  /** hello with a client token: the socket listens for calls to the token's numbers. */
  async listen(s: S, token: string): Promise<void> {
    const { db } = this.rt.deps;
    if (token.length > 4096) return this.hooks.fail(s, 'ticket_invalid');
    const claims = (await this.rt.deps.tokenKeys.clientTokenSigner()).verify(token);
    const p = claims ? await principalFromClaims(db, claims) : null;
    if (!p) return this.hooks.fail(s, 'ticket_invalid');
    if (!p.scopes.has('voice:webrtc')) return this.hooks.fail(s, 'ticket_invalid', 'The client token lacks the voice:webrtc scope.');
    const held = await db.any<{ phone_number: string }>(
      `SELECT phone_number FROM phone_numbers WHERE organization_id = $1 AND status = 'ACTIVE' AND phone_number = ANY($2)`,
      [p.organizationId, p.allowedFrom]);
    if (!held.length) return this.hooks.fail(s, 'ticket_invalid', 'None of the client token\'s from_numbers is an active number of the organization.');
    if (!this.hooks.isOpen(s)) return;
    const numbers = held.map((r) => r.phone_number).sort();
    const l: Listener = { organizationId: p.organizationId, numbers: new Set(numbers), who: p.userId ?? p.keyId, rang: new Set() };
    this.listeners.set(s, l);
    this.hooks.send(s, { type: 'listening', numbers });
    await this.ringLate(s, l);
  }

  /** Calls to the socket's numbers that already ring (their `ring` went out before it listened) ring it now. */
  private async ringLate(s: S, l: Listener): Promise<void> {
    const rows = await this.rt.deps.db.any<{ id: string; from_number: string; to_number: string; left_ms: number }>(
      `SELECT id, from_number, to_number, (extract(epoch FROM created_at + ring_timeout_seconds * interval '1 second' - now()) * 1000)::int AS left_ms
         FROM calls
        WHERE organization_id = $1 AND type = 'inbound' AND status = 'RINGING' AND NOT legs ? 'browser' AND to_number = ANY($2)
          AND created_at > now() - ring_timeout_seconds * interval '1 second'
        ORDER BY created_at LIMIT 20`, [l.organizationId, [...l.numbers]]);
    // Synchronously from here: a `taken` / `over` that arrived while the rows were read is in `stopped`; one that
    // arrives later finds the ring entry made here.
    if (this.listeners.get(s) !== l) return;
    for (const r of rows) {
      if (this.stopped.has(r.id) || r.left_ms <= 0) continue;
      let ring = this.ringing.get(r.id);
      if (!ring) {
        const timer = setTimeout(() => this.ringing.delete(r.id), r.left_ms + RING_GRACE_MS);
        timer.unref();
        ring = { rung: new Set(), timer };
        this.ringing.set(r.id, ring);
      }
      if (ring.rung.has(s)) continue;
      this.ringOne(s, l, { call_id: r.id, from_number: r.from_number, to_number: r.to_number, ring_timeout_seconds: Math.ceil(r.left_ms / 1000) });
      ring.rung.add(s);
      this.stats.rung++;
    }
  }

  private ringOne(s: S, l: Listener, n: { call_id: string; from_number: string; to_number: string; ring_timeout_seconds: number }) {
    l.rang.add(n.call_id);
    if (l.rang.size > 100) l.rang.delete(l.rang.values().next().value!);
    this.hooks.send(s, { type: 'incoming', call_id: n.call_id, from_number: n.from_number, to_number: n.to_number, ring_timeout_seconds: n.ring_timeout_seconds });
  }

  /** decline {call_id}: the call stops ringing on this socket (it rings on for the others); the socket keeps listening. */
  decline(s: S, callId: string): void {
    const l = this.listeners.get(s);
    if (!l) return;
    if (!l.rang.has(callId)) return this.hooks.fail(s, 'bad_message', `no incoming call ${callId} rang on this socket`);
    l.rang.delete(callId);
    this.ringing.get(callId)?.rung.delete(s);
    this.hooks.send(s, { type: 'incoming_stopped', call_id: callId, reason: 'declined' });
  }

  /** accept {call_id} from a listening socket. */
  async accept(s: S, callId: string): Promise<void> {
    const l = this.listeners.get(s);
    if (!l) return;
    if (!l.rang.has(callId)) return this.hooks.fail(s, 'bad_message', `no incoming call ${callId} rang on this socket`);
    const ring = this.ringing.get(callId);
    if (!ring?.rung.has(s)) { this.hooks.send(s, { type: 'incoming_stopped', call_id: callId, reason: 'ended' }); return; }
    const call = await acceptInbound(this.rt.deps.db, callId, l.organizationId, l.who, this.instance);
    if (!call) {
      ring.rung.delete(s);
      this.hooks.send(s, { type: 'incoming_stopped', call_id: callId, reason: 'taken' });
      return;
    }
    this.stats.accepted++;
    this.listeners.delete(s);
    ring.rung.delete(s);
    await publishIncoming(this.rt.deps.redis, this.rt.deps.key, { kind: 'taken', call_id: callId, organization_id: call.organization_id })
      .catch((err) => this.log.error({ err, call_id: callId }, 'the accepted call could not be announced: it rings until its timeout'));
    await this.hooks.attach(s, call);
    // A sandbox call's caller answers now (a SIP call's owner answers on `taken`).
    await answerAccepted(this.rt, call);
  }

  /** The socket closed (or became a call's socket). */
  drop(s: S): void {
    this.listeners.delete(s);
    for (const r of this.ringing.values()) r.rung.delete(s);
  }

  isListening(s: S): boolean { return this.listeners.has(s); }

  /** A notice from <prefix>:calls:incoming. */
  onNotice(text: string): void {
    let n: IncomingNotice;
    try { n = JSON.parse(text); } catch { return; }
    if (n.kind === 'ring') {
      const rung = new Set<S>();
      for (const [s, l] of this.listeners) {
        if (l.organizationId !== n.organization_id || !l.numbers.has(n.to_number) || !this.hooks.isOpen(s)) continue;
        rung.add(s);
        this.ringOne(s, l, n);
      }
      this.stats.rung += rung.size;
      if (!rung.size) return;
      const timer = setTimeout(() => this.ringing.delete(n.call_id), n.ring_timeout_seconds * 1000 + RING_GRACE_MS);
      timer.unref();
      this.ringing.set(n.call_id, { rung, timer });
      return;
    }
    this.stopped.add(n.call_id);
    if (this.stopped.size > STOPPED_KEPT) this.stopped.delete(this.stopped.values().next().value!);
    const ring = this.ringing.get(n.call_id);
    if (!ring) return;
    this.ringing.delete(n.call_id);
    clearTimeout(ring.timer);
    const reason = n.kind === 'taken' ? 'answered_elsewhere' : 'ended';
    for (const s of ring.rung) if (this.listeners.has(s)) this.hooks.send(s, { type: 'incoming_stopped', call_id: n.call_id, reason });
  }
}
