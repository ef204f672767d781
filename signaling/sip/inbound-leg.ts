// One inbound SIP leg: the caller's INVITE to a number of an organization, after signaling/sip/service.ts routed it
// to a ringing call (shared/calls/inbound.ts). It is the call's `destination` leg and reports like an outbound one.
//
//   ringing    180 Ringing (our To tag) went out; browsers ring. The caller's CANCEL: 200 to it, 487 to the INVITE,
//              ended (completed: the call ends CANCELED, remote_hangup). The ring timeout: 480, ended no_answer.
//              The platform's hangup: 480, ended local_hangup.
//   answering  a browser took the call: media gives the leg an RTP port and connects it to the offer's address (it
//              latches to where the caller's RTP really comes from), then 200 OK with our SDP answer, retransmitted
//              until the ACK (RFC 3261 §13.3.1.4); answered (seq 1)
//   answered   the caller's BYE: 200, ended completed (seq 2); the platform's hangup: BYE, ended local_hangup. No ACK
//              within 64 x T1: BYE, ended carrier_rejected.
//   ended      once; the Call-ID stays registered a while for retransmissions
import sip from 'sip';
import type { LegEndReason, LegRole } from '../../shared/carriers/carrier.ts';
import type { Logger } from '../../shared/log.ts';
import type { DialogState } from './dialog-record.ts';
import { answer as sdpAnswer, type Answer, type LegMedia } from './sdp.ts';
import type { Remote } from './transport.ts';
import { ALLOW_METHODS, newTag, type DialogHandler, type Responder, type SipUserAgent } from './user-agent.ts';

/** What an inbound leg needs from the service that runs it. */
export interface InboundHost {
  ua: SipUserAgent;
  log: Logger;
  openMedia(leg: InboundLeg): Promise<LegMedia>;
  connectMedia(leg: InboundLeg, far: Answer): Promise<void>;
  publish(leg: InboundLeg, kind: 'answered' | 'ended', reason?: LegEndReason, seq?: number): void;
  /** The leg's SIP work is done: free its media. */
  release(leg: InboundLeg): void;
  /** The call stopped ringing without being answered: browsers stop ringing. */
  stopRinging(leg: InboundLeg): void;
}

export interface InboundCall { callId: string; legId: string; organizationId: string; ringTimeoutSeconds: number; maxDurationSeconds: number }

type State = 'ringing' | 'answering' | 'answered' | 'ended';

const T1_MS = 500;
const T2_MS = 4000;
/** The 2xx is retransmitted this long waiting for the ACK (64 x T1). */
const ACK_WAIT_MS = 64 * T1_MS;
const LINGER_MS = 32_000;

export class InboundLeg implements DialogHandler {
  readonly req: InboundCall & { role: LegRole };
  private readonly localTag = newTag();
  private state: State = 'ringing';
  private seq = 0;
  private cseq = Math.floor(Math.random() * 10_000);
  private ringTimer: NodeJS.Timeout | null = null;
  private retransmit: NodeJS.Timeout | null = null;
  private ackTimer: NodeJS.Timeout | null = null;
  private mediaAsked = false;
  private released = false;
  private answerSdp = '';
  private sdpVersion = 1;
  private readonly sessionId = Math.floor(Math.random() * 1e9);
  endedAt: number | null = null;

  constructor(call: InboundCall, private readonly invite: sip.Message, private readonly respondInvite: Responder,
    private readonly remote: Remote, private readonly offer: Answer, private readonly host: InboundHost) {
    this.req = { ...call, role: 'destination' };
  }

  get legId(): string { return this.req.legId; }
  get callId(): string { return this.req.callId; }
  get organizationId(): string { return this.req.organizationId; }
  get live(): boolean { return this.state !== 'ended'; }
  get sipCallId(): string { return this.invite.headers['call-id']!; }

  /** Rings the caller (180) and starts the ring timeout. */
  start(): void {
    this.host.ua.register(this.sipCallId, this);
    this.respond(180, 'Ringing');
    this.ringTimer = setTimeout(() => this.onRingTimeout(), this.req.ringTimeoutSeconds * 1000);
  }

  /** The caller cancelled while the call was routed (the CANCEL and the 487 were answered then): the call ends. */
  cancelledEarly(): void {
    this.state = 'answering'; // rang (as far as the call knows), never answered
    this.end('completed');
    this.finish();
  }

  /** A browser took the call: answer the caller. */
  async answer(): Promise<void> {
    if (this.state !== 'ringing') return;
    this.state = 'answering';
    this.clearRingTimer();
    let media: LegMedia;
    try {
      this.mediaAsked = true;
      media = await this.host.openMedia(this);
      if (this.state !== 'answering') { this.finish(); return; } // the caller hung up meanwhile
      await this.host.connectMedia(this, this.offer);
    } catch (err) {
      if (this.state !== 'answering') { this.finish(); return; }
      this.host.log.error({ err, leg_id: this.legId }, 'media could not take the inbound SIP leg');
      this.respond(503, 'Service Unavailable');
      this.end('carrier_rejected');
      this.finish();
      return;
    }
    if (this.state !== 'answering') { this.finish(); return; }
    this.answerSdp = sdpAnswer({ ip: media.ip, port: media.port, rtcpPort: media.rtcpPort, payload: this.offer.mimeType === 'audio/PCMA' ? 8 : 0, sessionId: this.sessionId, version: this.sdpVersion });
    this.state = 'answered';
    this.send200();
    let wait = T1_MS;
    const again = () => { this.send200(); wait = Math.min(wait * 2, T2_MS); this.retransmit = setTimeout(again, wait); };
    this.retransmit = setTimeout(again, wait);
    this.ackTimer = setTimeout(() => this.onNoAck(), ACK_WAIT_MS);
    this.host.publish(this, 'answered', undefined, ++this.seq);
  }

  /** The platform hangs the leg up: 480 while it rings, BYE once answered. Repeats are no-ops. */
  hangup(): void {
    if (this.state === 'ended') return;
    if (this.state === 'answered') this.sendBye();
    else this.respond(480, 'Temporarily Unavailable');
    this.end('local_hangup');
    this.finish();
  }

  matches(rq: sip.Message): boolean {
    return rq.headers.to?.params?.tag === this.localTag && rq.headers.from?.params?.tag === this.invite.headers.from?.params?.tag;
  }

  onAck(): void { this.stopRetransmitting(); }

  onCancel(_rq: sip.Message, respond: Responder): void {
    respond(200, 'OK');
    if (this.state !== 'ringing' && this.state !== 'answering') return; // answered already: the caller sends BYE
    this.respond(487, 'Request Terminated');
    this.end('completed');
    this.finish();
  }

  onRequest(rq: sip.Message, respond: Responder): void {
    switch (rq.method) {
      case 'BYE':
        respond(200, 'OK');
        if (this.state === 'answered') { this.end('completed'); this.finish(); }
        return;
      case 'INVITE':
        // A re-INVITE (session refresh, hold): our media stays as it is, and we say so.
        this.sdpVersion++;
        respond(200, 'OK', { headers: { contact: this.contact(), 'content-type': 'application/sdp' },
          content: this.answerSdp.replace(/^(o=\S+ \S+ )\d+/m, `$1${this.sdpVersion}`) });
        return;
      case 'OPTIONS': case 'INFO': case 'UPDATE':
        respond(200, 'OK');
        return;
      default:
        respond(501, 'Not Implemented');
    }
  }

  onStray2xx(): void { /* we send no INVITE on an inbound leg */ }

  private contact() { return this.host.ua.contact(this.remote.protocol); }

  /** Answers the INVITE in its server transaction, with our To tag (every response of the dialog carries it). */
  private respond(status: number, reason: string, extra: { headers?: sip.Headers; content?: string } = {}): void {
    const to = this.invite.headers.to!;
    this.respondInvite(status, reason, { ...extra, headers: { ...extra.headers, to: { ...to, params: { ...to.params, tag: this.localTag } } } });
  }

  private send200(): void {
    this.respond(200, 'OK', { headers: { contact: this.contact(), allow: ALLOW_METHODS, 'content-type': 'application/sdp' }, content: this.answerSdp });
  }

  private onRingTimeout(): void {
    this.ringTimer = null;
    if (this.state !== 'ringing') return;
    this.respond(480, 'Temporarily Unavailable');
    this.end('no_answer');
    this.finish();
  }

  private onNoAck(): void {
    this.ackTimer = null;
    this.stopRetransmitting();
    if (this.state !== 'answered') return;
    this.host.log.warn({ leg_id: this.legId }, 'the caller never acknowledged our 200 OK: hanging up');
    this.sendBye();
    this.end('carrier_rejected');
    this.finish();
  }

  /** The dialog as our side of it sees it (UAS, RFC 3261 §12.1.1): the caller's Contact is the remote target, the
   *  Record-Route list as received is the route set, our To (with our tag) is the From of our requests. Null before
   *  our 200 OK. Recorded for a surviving process (dialog-record.ts) and used by our own BYE. */
  dialogState(): DialogState | null {
    if (this.state !== 'answered') return null;
    const inv = this.invite;
    const contact = Array.isArray(inv.headers.contact) ? inv.headers.contact[0]?.uri : undefined;
    return {
      sipCallId: this.sipCallId, target: sip.stringifyUri(contact ?? inv.headers.from!.uri),
      from: { ...inv.headers.to!, params: { ...inv.headers.to!.params, tag: this.localTag } }, to: inv.headers.from!,
      route: inv.headers['record-route'] ?? [], cseq: this.cseq,
    };
  }

  private sendBye(): void {
    this.stopRetransmitting();
    const d = this.dialogState();
    if (!d) return;
    const bye: sip.Message = {
      method: 'BYE', uri: d.target,
      headers: {
        to: d.to, from: d.from, 'call-id': d.sipCallId, cseq: { seq: ++this.cseq, method: 'BYE' }, 'max-forwards': 70,
        ...(d.route.length ? { route: d.route } : {}),
      },
    };
    this.host.ua.request(bye, this.host.ua.nextHop(d.route[0]?.uri ?? d.target), () => undefined);
  }

  private end(reason: LegEndReason): void {
    this.clearRingTimer();
    if (this.state === 'ended') return;
    const rang = this.state === 'ringing' || this.state === 'answering';
    this.state = 'ended';
    this.endedAt = Date.now();
    this.host.publish(this, 'ended', reason, ++this.seq);
    if (rang) this.host.stopRinging(this);
  }

  private finish(): void {
    if (this.released) return;
    this.released = true;
    if (this.ackTimer) clearTimeout(this.ackTimer);
    if (this.mediaAsked) this.host.release(this);
    setTimeout(() => { this.stopRetransmitting(); this.host.ua.unregister(this.sipCallId, this); }, LINGER_MS).unref();
  }

  private stopRetransmitting(): void {
    if (this.retransmit) { clearTimeout(this.retransmit); this.retransmit = null; }
    if (this.ackTimer && this.state !== 'answered') { clearTimeout(this.ackTimer); this.ackTimer = null; }
  }

  private clearRingTimer(): void {
    if (this.ringTimer) { clearTimeout(this.ringTimer); this.ringTimer = null; }
  }
}
