// One outbound SIP leg: an INVITE to the trunk, its dialog, and the leg's events.
//
//   starting  media gives the leg an RTP port (its SDP offer), then the INVITE goes out
//   calling   100/180/183: `ringing` (once). 2xx: ACK; the answer's RTP address must be inside SIP_TRUNK_ALLOW and its
//             SDP usable, then media connects the leg and it is `answered` (else BYE, ended carrier_rejected).
//             401/407: the INVITE is sent again once with digest credentials. Other final responses end it
//             (sip.ts sipFailureOutcome); no response at all (Timer B) ends it carrier_rejected.
//             The ring timeout sends CANCEL and ends it no_answer; before any provisional response a CANCEL may not be
//             sent (RFC 3261 §9.1), so the leg waits for one (then cancels) or for Timer B.
//   answered  a BYE from the far end ends it `completed`; hangup sends BYE and ends it `local_hangup`
//   ended     once; a 2xx that arrives later is acknowledged and hung up at once
// A leg reports at most ringing, then answered (seq 1) and ended (seq 2), or only ended (seq 1). Hangup of a leg that
// never started leaves a tombstone: its later originate is a no-op.
import sip from 'sip';
import digest from 'sip/digest';
import type { LegEndReason, OriginateRequest } from '../../shared/carriers/carrier.ts';
import { sipFailureOutcome, sipUser } from '../../shared/carriers/sip.ts';
import type { Logger } from '../../shared/log.ts';
import type { DialogState } from './dialog-record.ts';
import { offer, readAnswer, type LegMedia } from './sdp.ts';
import type { Remote } from './transport.ts';
import { ALLOW_METHODS, newCallId, newTag, type DialogHandler, type Responder, type SipUserAgent } from './user-agent.ts';

/** What a leg needs from the service that runs it (signaling/sip/service.ts). */
export interface LegHost {
  ua: SipUserAgent;
  log: Logger;
  /** The leg's RTP port in the call's media session (SDP offer address). */
  openMedia(leg: OutboundLeg): Promise<LegMedia>;
  connectMedia(leg: OutboundLeg, far: { ip: string; port: number; rtcpPort: number; mimeType: 'audio/PCMU' | 'audio/PCMA' }): Promise<void>;
  /** Publishes one of the leg's events (seq given for answered and ended). */
  publish(leg: OutboundLeg, kind: 'ringing' | 'answered' | 'ended', reason?: LegEndReason, seq?: number): void;
  /** The leg ended and its SIP work is done: free its media. */
  release(leg: OutboundLeg): void;
  /** The leg's INVITE had its first provisional response: record it for a survivor's CANCEL (pendingState). */
  recordPending(leg: OutboundLeg): void;
}

type State = 'starting' | 'calling' | 'answered' | 'ended';

/** After our CANCEL, how long the INVITE transaction may wait for its final response (64 x T1). */
const CANCEL_GUARD_MS = 32_000;
/** An ended leg keeps its Call-ID registered this long, to answer late retransmissions. */
const LINGER_MS = 32_000;

interface Dialog { remoteTag: string; remoteTarget: string | sip.SipUri; routeSet: sip.NameAddr[]; cseq: number; ack: sip.Message; ackTo: Remote }

export class OutboundLeg implements DialogHandler {
  readonly sipCallId = newCallId();
  private readonly localTag = newTag();
  private state: State = 'starting';
  private reported: LegEndReason | null = null;
  private seq = 0;
  private ringingSent = false;
  private provisional = false;
  private ringExpired = false;
  private cancelWanted = false;
  private cancelSent = false;
  /** The CSeq of the INVITE last recorded as pending (recordPending). */
  private pendingRecorded = 0;
  private authTried = false;
  private invite: sip.Message | null = null;
  private inviteTx: sip.ClientTransaction | null = null;
  private dialog: Dialog | null = null;
  private offerSdp = '';
  private sdpVersion = 1;
  private readonly sessionId = Math.floor(Math.random() * 1e9);
  private ringTimer: NodeJS.Timeout | null = null;
  private guardTimer: NodeJS.Timeout | null = null;
  private released = false;
  /** Whether media was asked for the leg's port (a tombstone never was: nothing to free). */
  private mediaAsked = false;
  /** When the leg ended (for the service's sweep of old tombstones). */
  endedAt: number | null = null;

  constructor(readonly req: OriginateRequest, private readonly host: LegHost) {}

  get legId(): string { return this.req.legId; }
  get callId(): string { return this.req.callId; }
  get live(): boolean { return this.state !== 'ended'; }

  /** A leg that is over before it began (hangup before originate). */
  tombstone(): void {
    this.end('local_hangup');
    this.finish();
  }

  async start(): Promise<void> {
    let media: LegMedia;
    this.mediaAsked = true;
    try {
      media = await this.host.openMedia(this);
    } catch (err) {
      this.host.log.error({ err, leg_id: this.legId }, 'no RTP port for the SIP leg');
      this.end('carrier_rejected');
      this.finish();
      return;
    }
    if (this.state !== 'starting') { this.finish(); return; } // hung up meanwhile
    this.offerSdp = offer({ ip: media.ip, port: media.port, rtcpPort: media.rtcpPort, sessionId: this.sessionId, version: this.sdpVersion });
    const ua = this.host.ua;
    const s = ua.settings;
    const trunkHost = s.trunk.host;
    const to = sipUser(this.req.number, s.userFormat);
    const from = sipUser(this.req.from, s.userFormat);
    const transportParam = s.trunk.transport === 'udp' ? '' : `;transport=${s.trunk.transport}`;
    this.invite = {
      method: 'INVITE',
      uri: `sip:${to}@${trunkHost}:${s.trunk.port}${transportParam}`,
      headers: {
        to: { uri: `sip:${to}@${trunkHost}`, params: {} },
        from: { uri: `sip:${from}@${trunkHost}`, params: { tag: this.localTag } },
        'call-id': this.sipCallId,
        cseq: { seq: 1, method: 'INVITE' },
        contact: ua.contact(ua.trunk.protocol),
        'p-asserted-identity': `<sip:${from}@${trunkHost}>`,
        'max-forwards': 70,
        allow: ALLOW_METHODS,
        'user-agent': 'openline',
        'content-type': 'application/sdp',
      },
      content: this.offerSdp,
    };
    this.state = 'calling';
    ua.register(this.sipCallId, this);
    try {
      this.sendInvite();
    } catch (err) {
      this.host.log.error({ err, leg_id: this.legId }, 'the INVITE could not be sent');
      this.end('carrier_rejected');
      this.finish();
      return;
    }
    this.ringTimer = setTimeout(() => this.onRingTimeout(), this.req.ringTimeoutSeconds * 1000);
  }

  /** The platform hangs the leg up: CANCEL while it rings, BYE once answered. Repeats are no-ops. */
  hangup(): void {
    if (this.state === 'ended') return;
    if (this.state === 'answered') {
      this.sendBye();
      this.end('local_hangup');
      this.finish();
      return;
    }
    if (this.state === 'calling') this.cancel();
    // Its SIP work finishes when the INVITE does (487, or the 2xx we then hang up), or in start() for a leg still
    // waiting for its RTP port.
    this.end('local_hangup');
  }

  /** The pending INVITE as a surviving signaling process needs it to send our CANCEL (dialog-record.ts); null once
   *  answered or before the INVITE went out. */
  pendingState(): DialogState | null {
    const inv = this.invite;
    if (!inv || this.dialog || this.state !== 'calling') return null;
    return {
      sipCallId: this.sipCallId, target: sip.stringifyUri(inv.uri!), from: inv.headers.from!, to: inv.headers.to!, route: [],
      cseq: inv.headers.cseq!.seq, pendingInvite: { uri: sip.stringifyUri(inv.uri!), via: inv.headers.via![0] },
    };
  }

  /** The answered dialog as a surviving signaling process needs it to send our BYE (dialog-record.ts); null before the
   *  answer. */
  dialogState(): DialogState | null {
    const d = this.dialog;
    if (!d || !this.invite) return null;
    return { sipCallId: this.sipCallId, target: sip.stringifyUri(d.remoteTarget), from: this.invite.headers.from!, to: d.ack.headers.to!, route: d.routeSet, cseq: d.cseq };
  }

  matches(rq: sip.Message): boolean {
    return !!this.dialog && rq.headers.to?.params.tag === this.localTag && rq.headers.from?.params.tag === this.dialog.remoteTag;
  }

  onRequest(rq: sip.Message, respond: Responder): void {
    switch (rq.method) {
      case 'BYE':
        respond(200, 'OK');
        if (this.state === 'answered') { this.end('completed'); this.finish(); }
        return;
      case 'INVITE':
        // A re-INVITE (session refresh, hold): we keep our media as it is and say so.
        respond(200, 'OK', { headers: { contact: this.host.ua.contact(this.host.ua.trunk.protocol), 'content-type': 'application/sdp' }, content: this.reoffer() });
        return;
      case 'OPTIONS': case 'INFO': case 'UPDATE':
        respond(200, 'OK');
        return;
      default:
        respond(501, 'Not Implemented');
    }
  }

  onStray2xx(rs: sip.Message): void {
    if (this.dialog && rs.headers.to?.params.tag === this.dialog.remoteTag) this.host.ua.sendAck(this.dialog.ack, this.dialog.ackTo);
    else this.ackAndBye(rs);
  }

  private sendInvite(): void {
    this.inviteTx = this.host.ua.request(this.invite!, this.host.ua.trunk, (rs) => this.onInviteResponse(rs));
  }

  private onInviteResponse(rs: sip.Message): void {
    const status = rs.status!;
    if (status < 200) {
      this.provisional = true;
      // Each INVITE (a digest retry is a new one) is recorded once, at its first provisional response, when a CANCEL
      // becomes allowed: a surviving process can then cancel it (dialog-record.ts).
      if (this.state === 'calling' && this.pendingRecorded !== this.invite!.headers.cseq!.seq) {
        this.pendingRecorded = this.invite!.headers.cseq!.seq;
        this.host.recordPending(this);
      }
      if (this.cancelWanted || this.ringExpired) this.cancel();
      if (this.ringExpired) this.end('no_answer');
      if (this.state === 'calling' && !this.ringingSent) {
        this.ringingSent = true;
        this.host.publish(this, 'ringing');
      }
      return;
    }
    if (status < 300) { void this.onAnswer(rs); return; }
    if ((status === 401 || status === 407) && this.state === 'calling' && !this.authTried && this.host.ua.settings.credentials) {
      this.authTried = true;
      this.retryWithCredentials(rs);
      return;
    }
    // Timer B (no response at all) reaches us as a 408 the transaction layer made up.
    const timerB = status === 408 && !this.host.ua.heardFromNetwork(rs);
    if (timerB) this.host.log.warn({ leg_id: this.legId }, 'the trunk never answered the INVITE (Timer B)');
    this.end(timerB ? 'carrier_rejected' : sipFailureOutcome(status));
    this.finish();
  }

  private retryWithCredentials(challenge: sip.Message): void {
    const c = this.host.ua.settings.credentials!;
    const rq: sip.Message = { ...this.invite!, headers: { ...this.invite!.headers, cseq: { seq: this.invite!.headers.cseq!.seq + 1, method: 'INVITE' } } };
    delete rq.headers.via;
    try {
      digest.signRequest({}, rq, challenge, { user: c.username, password: c.password });
    } catch (err) {
      this.host.log.warn({ err, leg_id: this.legId }, 'the trunk\'s digest challenge cannot be answered');
      this.end('carrier_rejected');
      this.finish();
      return;
    }
    this.invite = rq;
    this.provisional = false;
    this.sendInvite();
  }

  private async onAnswer(rs: sip.Message): Promise<void> {
    const tag = rs.headers.to?.params.tag;
    if (this.dialog || !tag) { this.onStray2xx(rs); return; }
    const contact = Array.isArray(rs.headers.contact) ? rs.headers.contact[0]?.uri : undefined;
    const routeSet = [...(rs.headers['record-route'] ?? [])].reverse();
    const remoteTarget = contact ?? this.invite!.uri!;
    const ackTo = this.host.ua.nextHop(routeSet[0]?.uri ?? remoteTarget);
    const ack: sip.Message = {
      method: 'ACK', uri: remoteTarget,
      headers: {
        to: rs.headers.to, from: this.invite!.headers.from, 'call-id': this.sipCallId,
        cseq: { seq: this.invite!.headers.cseq!.seq, method: 'ACK' }, 'max-forwards': 70,
        ...(routeSet.length ? { route: routeSet } : {}),
      },
    };
    this.dialog = { remoteTag: tag, remoteTarget, routeSet, cseq: this.invite!.headers.cseq!.seq, ack, ackTo };
    this.host.ua.sendAck(ack, ackTo);
    if (this.state !== 'calling') { this.sendBye(); this.finish(); return; } // we gave up on it already
    this.clearRingTimer();
    const answer = readAnswer(rs.content);
    const refuse = 'error' in answer ? answer.error
      : !this.host.ua.allows(answer.ip) ? `the answer's RTP address ${answer.ip} is outside SIP_TRUNK_ALLOW` : null;
    if (refuse) {
      this.host.log.warn({ leg_id: this.legId, reason: refuse }, 'hanging up an answered SIP leg');
      this.sendBye();
      this.end('carrier_rejected');
      this.finish();
      return;
    }
    this.state = 'answered';
    try {
      await this.host.connectMedia(this, answer as Exclude<typeof answer, { error: string }>);
    } catch (err) {
      if (this.state !== 'answered') return; // hung up while media connected
      this.host.log.error({ err, leg_id: this.legId }, 'media could not take the answered SIP leg');
      this.sendBye();
      this.end('carrier_rejected');
      this.finish();
      return;
    }
    if (this.state === 'answered') this.host.publish(this, 'answered', undefined, ++this.seq);
  }

  private onRingTimeout(): void {
    this.ringTimer = null;
    if (this.state !== 'calling') return;
    if (this.provisional) {
      this.cancel();
      this.end('no_answer');
    } else {
      this.ringExpired = true; // cancelled as soon as it rings; Timer B decides if it never does
    }
  }

  /** CANCEL the pending INVITE (only once it had a provisional response, RFC 3261 §9.1). */
  private cancel(): void {
    this.cancelWanted = true;
    if (this.cancelSent || !this.provisional || this.dialog || !this.invite) return;
    this.cancelSent = true;
    const inv = this.invite;
    const cancel: sip.Message = {
      method: 'CANCEL', uri: inv.uri,
      headers: {
        via: [inv.headers.via![0]], to: inv.headers.to, from: inv.headers.from, 'call-id': this.sipCallId,
        cseq: { seq: inv.headers.cseq!.seq, method: 'CANCEL' }, 'max-forwards': 70,
      },
    };
    this.host.ua.request(cancel, this.host.ua.trunk, () => undefined);
    // The INVITE should end with 487; if the trunk never says so, stop waiting.
    this.guardTimer = setTimeout(() => { this.inviteTx?.shutdown(); this.finish(); }, CANCEL_GUARD_MS);
  }

  private sendBye(): void {
    const d = this.dialog;
    if (!d) return;
    const bye = this.inDialog('BYE');
    const send = (rq: sip.Message, retry: boolean) => this.host.ua.request(rq, this.host.ua.nextHop(d.routeSet[0]?.uri ?? d.remoteTarget), (rs) => {
      const c = this.host.ua.settings.credentials;
      if ((rs.status === 401 || rs.status === 407) && retry && c) {
        const again = this.inDialog('BYE');
        try {
          digest.signRequest({}, again, rs, { user: c.username, password: c.password });
          send(again, false);
        } catch { /* a challenge we cannot answer: the leg is over on our side anyway */ }
      }
    });
    send(bye, true);
  }

  private inDialog(method: string): sip.Message {
    const d = this.dialog!;
    return {
      method, uri: d.remoteTarget,
      headers: {
        to: d.ack.headers.to, from: this.invite!.headers.from, 'call-id': this.sipCallId,
        cseq: { seq: ++d.cseq, method }, 'max-forwards': 70, ...(d.routeSet.length ? { route: d.routeSet } : {}),
      },
    };
  }

  /** Another 2xx for this INVITE (a forked answer, or one after we gave up): acknowledge it and hang it up. */
  private ackAndBye(rs: sip.Message): void {
    const contact = Array.isArray(rs.headers.contact) ? rs.headers.contact[0]?.uri : undefined;
    const target = contact ?? this.invite?.uri;
    if (!target || !this.invite) return;
    const hop = this.host.ua.nextHop(target);
    const base = { to: rs.headers.to, from: this.invite.headers.from, 'call-id': this.sipCallId, 'max-forwards': 70 };
    this.host.ua.sendAck({ method: 'ACK', uri: target, headers: { ...base, cseq: { seq: rs.headers.cseq!.seq, method: 'ACK' } } }, hop);
    this.host.ua.request({ method: 'BYE', uri: target, headers: { ...base, cseq: { seq: rs.headers.cseq!.seq + 1, method: 'BYE' } } }, hop, () => undefined);
  }

  private reoffer(): string {
    this.sdpVersion++;
    return this.offerSdp.replace(/^(o=\S+ \S+ )\d+/m, `$1${this.sdpVersion}`);
  }

  /** Reports the end once. */
  private end(reason: LegEndReason): void {
    this.clearRingTimer();
    if (this.reported) return;
    this.state = 'ended';
    this.reported = reason;
    this.endedAt = Date.now();
    this.host.publish(this, 'ended', reason, ++this.seq);
  }

  /** The SIP side is done (or given up on): free the media now, forget the Call-ID after late retransmissions. */
  private finish(): void {
    if (this.released) return;
    this.released = true;
    if (this.guardTimer) clearTimeout(this.guardTimer);
    if (this.mediaAsked) this.host.release(this);
    setTimeout(() => this.host.ua.unregister(this.sipCallId, this), LINGER_MS).unref();
  }

  private clearRingTimer(): void {
    if (this.ringTimer) { clearTimeout(this.ringTimer); this.ringTimer = null; }
  }
}
