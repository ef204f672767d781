// The platform's SIP user agent: our transport (transport.ts) under the `sip` package's RFC 3261 transaction layer
// (INVITE and non-INVITE client and server transactions, UDP retransmissions, timers at the RFC defaults: T1 500 ms,
// Timer B and F 32 s). It answers what arrives outside a call itself and hands in-dialog requests to the dialog
// registered for their Call-ID (an outbound leg, outbound-leg.ts, or an inbound one, inbound-leg.ts):
//   from outside SIP_TRUNK_ALLOW  403 Forbidden, stateless (an ACK is dropped); nothing else happens
//   OPTIONS                       200 OK
//   INVITE (new call)             to the inbound handler (signaling/sip/service.ts), else 480
//   in-dialog requests            to the dialog; 481 when no dialog matches (e.g. a BYE with unknown tags)
//   ACK of a 2xx                  to the dialog (it ends the 2xx's retransmissions)
//   CANCEL                        to the pending inbound INVITE of its Call-ID; 481 when there is none
//   anything else                 405 Method Not Allowed
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import sip from 'sip';
import type { SipSettings } from '../../shared/config.ts';
import { randomToken } from '../../shared/ids.ts';
import type { Logger } from '../../shared/log.ts';
import { SipTransport, type Protocol, type Remote } from './transport.ts';

export const ALLOW_METHODS = 'INVITE, ACK, CANCEL, BYE, OPTIONS';

/** A dialog's side of the user agent: the requests and stray 2xx responses of its Call-ID. */
export interface DialogHandler {
  /** Whether the request's tags are this dialog's (else the user agent answers 481). */
  matches(rq: sip.Message): boolean;
  onRequest(rq: sip.Message, respond: Responder): void;
  /** A 2xx to our INVITE after its transaction ended (a retransmission: acknowledge it again). */
  onStray2xx(rs: sip.Message): void;
  /** The ACK of a 2xx we sent (inbound legs). */
  onAck?(rq: sip.Message): void;
  /** A CANCEL of the dialog's pending INVITE (inbound legs); the CANCEL itself is answered here. */
  onCancel?(rq: sip.Message, respond: Responder): void;
}

/** A new INVITE from an allowed address (an inbound call): `respond` answers it in its server transaction. */
export type InviteHandler = (rq: sip.Message, respond: Responder, remote: Remote) => void;

export type Responder = (status: number, reason: string, extra?: { headers?: sip.Headers; content?: string }) => void;

export class SipUserAgent {
  readonly counts = { refused: 0, unmatched: 0 };
  readonly transport: SipTransport;
  private readonly layer: sip.TransactionLayer;
  private readonly allow = new BlockList();
  private readonly dialogs = new Map<string, DialogHandler>();
  /** Responses that came from the network (the transaction layer also makes up a 408 when Timer B fires). */
  private readonly fromWire = new WeakSet<sip.Message>();
  private trunkAddress: Remote | null = null;
  /** Where new INVITEs go (the SIP service's inbound routing); unset: 480. */
  onInvite: InviteHandler | null = null;

  constructor(readonly settings: SipSettings, private readonly log: Logger) {
    for (const c of settings.allow) this.allow.addSubnet(c.address, c.prefix, c.family);
    const tls = settings.tls;
    this.transport = new SipTransport(
      {
        host: settings.listen.host, port: settings.listen.port, log, accepts: (a) => this.allows(a),
        unreachable: (_remote: Remote, requests: sip.Message[]) => this.unreachable(requests),
        // The trunk's certificate must name the host SIP_TRUNK_URI names (its address when it names one).
        ...(tls ? { tls: { ...tls, serverName: (r: Remote) => (!isIP(settings.trunk.host) && sameHop(r, this.trunkAddress) ? settings.trunk.host : undefined) } } : {}),
      },
      (m, remote) => this.onMessage(m, remote));
    this.layer = sip.makeTransactionLayer({}, null);
  }

  /** Resolves the trunk's host (once: a name's address is looked up at start) and binds SIP_LISTEN. */
  async start(): Promise<void> {
    const t = this.settings.trunk;
    const address = isIP(t.host) ? t.host : (await lookup(t.host)).address;
    this.trunkAddress = { protocol: t.transport.toUpperCase() as Protocol, address, port: t.port };
    await this.transport.start();
  }

  get trunk(): Remote { return this.trunkAddress!; }
  get port(): number { return this.transport.port; }

  /** Whether an address is inside SIP_TRUNK_ALLOW (SIP requests, TCP peers and the RTP address of an answer). */
  allows(address: string): boolean {
    const v = isIP(address);
    return v !== 0 && this.allow.check(address, v === 4 ? 'ipv4' : 'ipv6');
  }

  /** Whether a response came from the trunk rather than from our own transaction layer (Timer B's 408). */
  heardFromNetwork(rs: sip.Message): boolean { return this.fromWire.has(rs); }

  register(callId: string, dialog: DialogHandler): void { this.dialogs.set(callId, dialog); }
  unregister(callId: string, dialog: DialogHandler): void { if (this.dialogs.get(callId) === dialog) this.dialogs.delete(callId); }

  /** Sends a request in a client transaction (a CANCEL keeps its INVITE's Via; every other request gets ours). */
  request(rq: sip.Message, target: Remote, onResponse: (rs: sip.Message) => void): sip.ClientTransaction {
    if (rq.method !== 'CANCEL') rq.headers.via = [this.via(target.protocol, '')];
    return this.layer.createClientTransaction(this.transport.connection(target), rq, onResponse);
  }

  /** Sends an ACK to a 2xx (outside any transaction, RFC 3261 §13.2.2.4). */
  sendAck(ack: sip.Message, target: Remote): void {
    if (!ack.headers.via) ack.headers.via = [this.via(target.protocol, newBranch())];
    this.transport.send(ack, target);
  }

  /** Where in-dialog requests go: the dialog's first route or remote target when it is an allowed address, else the
   *  trunk. */
  nextHop(uri: string | sip.SipUri | undefined): Remote {
    const u = uri ? sip.parseUri(uri) : undefined;
    const protocol = this.trunk.protocol;
    if (u && isIP(u.host) && this.allows(u.host)) return { protocol, address: u.host, port: u.port || (protocol === 'TLS' ? 5061 : 5060) };
    return this.trunk;
  }

  /** Our Contact: the listen address (the TLS listener's port for TLS), no user part (it carries nothing about the
   *  call). */
  contact(protocol: Protocol): sip.NameAddr[] {
    const host = this.settings.listen.host.includes(':') ? `[${this.settings.listen.host}]` : this.settings.listen.host;
    return [{ uri: `sip:${host}:${this.portFor(protocol)};transport=${protocol.toLowerCase()}`, params: {} }];
  }

  /** Where we listen for a protocol: SIP_LISTEN's port for UDP and TCP, SIP_TLS_PORT's for TLS. */
  portFor(protocol: Protocol): number { return protocol === 'TLS' ? this.transport.tlsPort : this.port; }

  async stop(): Promise<void> {
    this.layer.destroy();
    await this.transport.close();
  }

  /** Requests whose connection never came up get the 503 a transaction layer answers for a transport failure (RFC
   *  3261 §8.1.3.1), so their legs end now (carrier_rejected) instead of at Timer B. */
  private unreachable(requests: sip.Message[]): void {
    for (const rq of requests) {
      const rs = sip.makeResponse(rq, 503, 'Service Unavailable');
      this.layer.getClient(rs)?.message(rs);
    }
  }

  private via(protocol: Protocol, branch: string): sip.Via {
    const host = this.settings.listen.host.includes(':') ? `[${this.settings.listen.host}]` : this.settings.listen.host;
    return {
      version: '2.0', protocol, host, port: this.portFor(protocol),
      params: { ...(branch ? { branch } : {}), ...(protocol === 'UDP' ? { rport: null } : {}) },
    };
  }

  private onMessage(m: sip.Message, remote: Remote): void {
    if (!this.allows(remote.address)) {
      this.counts.refused++;
      if (m.method && m.method !== 'ACK') this.transport.send(respondTo(m, 403, 'Forbidden'), remote);
      return;
    }
    const callId = m.headers['call-id']!;
    if (m.method === undefined) {
      const t = this.layer.getClient(m);
      if (t) {
        this.fromWire.add(m);
        t.message(m, remote);
      } else if (m.headers.cseq!.method === 'INVITE' && m.status! >= 200 && m.status! < 300) {
        this.dialogs.get(callId)?.onStray2xx(m);
      }
      return;
    }
    if (m.method === 'ACK') {
      const t = this.layer.getServer(m); // a non-2xx's ACK ends its transaction
      if (t) { t.message(m, remote); return; }
      const dialog = this.dialogs.get(callId);
      if (dialog?.matches(m)) dialog.onAck?.(m);
      return;
    }
    const existing = this.layer.getServer(m);
    if (existing) { existing.message(m, remote); return; }
    const t = this.layer.createServerTransaction(m, this.transport.connection(remote));
    const respond: Responder = (status, reason, extra) => t.send(respondTo(m, status, reason, extra));
    this.onRequest(m, respond, remote);
  }

  private onRequest(rq: sip.Message, respond: Responder, remote: Remote): void {
    const inDialog = rq.headers.to?.params?.tag !== undefined;
    if (rq.method === 'OPTIONS' && !inDialog) {
      respond(200, 'OK', { headers: { allow: ALLOW_METHODS, accept: 'application/sdp' } });
      return;
    }
    if (inDialog && rq.method !== 'CANCEL') {
      const dialog = this.dialogs.get(rq.headers['call-id']!);
      if (dialog?.matches(rq)) { dialog.onRequest(rq, respond); return; }
      this.counts.unmatched++;
      respond(481, 'Call/Transaction Does Not Exist');
      return;
    }
    switch (rq.method) {
      case 'INVITE':
        if (this.onInvite) this.onInvite(rq, respond, remote);
        else respond(480, 'Temporarily Unavailable');
        return;
      case 'CANCEL': {
        const dialog = this.dialogs.get(rq.headers['call-id']!);
        if (dialog?.onCancel) { dialog.onCancel(rq, respond); return; }
        this.counts.unmatched++;
        respond(481, 'Call/Transaction Does Not Exist');
        return;
      }
      case 'BYE': this.counts.unmatched++; respond(481, 'Call/Transaction Does Not Exist'); return;
      default: respond(405, 'Method Not Allowed', { headers: { allow: ALLOW_METHODS } });
    }
  }
}

const sameHop = (a: Remote, b: Remote | null) => !!b && a.protocol === b.protocol && a.address === b.address && a.port === b.port;

export const newBranch = () => `z9hG4bK${randomToken(20)}`;
export const newTag = () => randomToken(16);
export const newCallId = () => randomToken(32);

/** A response to `rq`; a response to a request outside a dialog gets a To tag of ours (the dialog's own when
 *  `extra` gives a To, as an inbound leg does). */
function respondTo(rq: sip.Message, status: number, reason: string, extra?: { headers?: sip.Headers; content?: string }): sip.Message {
  const rs = sip.makeResponse(rq, status, reason, extra);
  const to = rs.headers.to!;
  if (status > 100 && to.params?.tag === undefined) rs.headers.to = { ...to, params: { ...to.params, tag: newTag() } };
  return rs;
}
