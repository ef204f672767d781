// A SIP leg's RTP port with SIP_RTP_LATCHING=1: the address and port the SDP offer names, between the far end (the
// trunk's media address) and the leg's mediasoup PlainTransport on loopback. (Without latching the PlainTransport
// listens itself and our worker patch adopts the far end's SSRC; see media/sip-leg.ts.) The relay writes the leg's
// own SSRC into each packet on the way in, since an SDP answer does not say which SSRC the far end will send.
// Symmetric-RTP latching: before the answer nothing is sent or forwarded. Afterwards the first RTP packet from an
// address the leg may hear (the answer's own address, or any inside SIP_TRUNK_ALLOW) latches the leg to its source
// address and port: from then on only that source is heard and everything goes there, so a far end whose SDP names
// one address but sends from another (a media server behind NAT, a trunk's media cluster) gets two-way audio. Until
// then the platform sends to the SDP's address, which signaling checked is inside SIP_TRUNK_ALLOW. RTP from outside
// is dropped and counted as refused, so the platform never sends RTP to a network outside the allow list.
// The far end's RTCP is dropped; the router's RTCP goes to the far end's RTCP port (relative to the latched port).
// Both directions leave from the same port.
import { createSocket, type Socket } from 'node:dgram';
import { BlockList, isIP } from 'node:net';
import { isRtcp, parseRtp } from '../shared/media/rtp.ts';

export interface FarEnd {
  ip: string;
  port: number;
  /** Where its RTCP goes: the answer's a=rtcp, its RTP port with rtcp-mux, else RTP port + 1. */
  rtcpPort: number;
  /** The payload type the answer chose (0 PCMU or 8 PCMA); anything else it sends (telephone-event) is dropped. */
  payloadType: number;
  /** Networks whose RTP latches the leg (SIP_TRUNK_ALLOW); null: only `ip`. */
  allow: BlockList | null;
}

export interface RelayCounters {
  /** RTP packets from the far end forwarded into the router. */
  fromFarEnd: number;
  /** RTP packets from the router sent to the far end. */
  toFarEnd: number;
  /** Packets dropped: from another address, before the answer, RTCP from the far end, other payload types. */
  dropped: number;
  /** Of them, RTP from outside the allowed networks, or from another source than the latched one. */
  refused: number;
}

/** Attempts at a free port of the range before giving up (the mediasoup workers use the same range). */
const BIND_ATTEMPTS = 64;

export class RtpRelay {
  readonly counters: RelayCounters = { fromFarEnd: 0, toFarEnd: 0, dropped: 0, refused: 0 };
  /** Where the far end's RTP comes from, once its first packet arrived (then its RTP and RTCP go there). */
  private latchedTo: { ip: string; port: number } | null = null;
  private far: FarEnd | null = null;
  /** The PlainTransport's own address (where the router listens for this leg). */
  private router: { ip: string; port: number } | null = null;
  private closed = false;

  private constructor(private readonly outside: Socket, private readonly inside: Socket, private readonly ssrc: number) {
    outside.on('message', (packet, from) => this.fromFar(packet, from.address, from.port));
    inside.on('message', (packet, from) => this.fromRouter(packet, from.address, from.port));
    outside.on('error', () => this.close());
    inside.on('error', () => this.close());
  }

  /** Binds the outside port (an even port of minPort..maxPort on listenIp) and the inside one (loopback). */
  static async open(o: { listenIp: string; minPort: number; maxPort: number; ssrc: number }): Promise<RtpRelay> {
    const type = o.listenIp.includes(':') ? 'udp6' : 'udp4';
    let outside: Socket | null = null;
    for (let i = 0; i < BIND_ATTEMPTS && !outside; i++) {
      const span = Math.max(1, Math.floor((o.maxPort - o.minPort + 1) / 2));
      const port = Math.min(o.maxPort, o.minPort + 2 * Math.floor(Math.random() * span) + (o.minPort % 2));
      outside = await bind(createSocket({ type, recvBufferSize: 256 * 1024 }), port, o.listenIp);
    }
    if (!outside) throw new Error(`no free RTP port in ${o.minPort}..${o.maxPort} on ${o.listenIp}`);
    const inside = await bind(createSocket({ type: 'udp4', recvBufferSize: 256 * 1024 }), 0, '127.0.0.1');
    if (!inside) { outside.close(); throw new Error('cannot bind a loopback socket for the RTP relay'); }
    return new RtpRelay(outside, inside, o.ssrc);
  }

  /** The port the SDP offer announces. */
  get port(): number { return this.outside.address().port; }
  /** Where the PlainTransport sends (it connects here). */
  get insideAddress(): { ip: string; port: number } { const a = this.inside.address(); return { ip: a.address, port: a.port }; }
  get connected(): boolean { return this.far !== null; }
  get latched(): { ip: string; port: number } | null { return this.latchedTo && { ...this.latchedTo }; }

  /** Starts relaying: `router` is the PlainTransport's tuple, `far` what the answer said. Once only. */
  connect(far: FarEnd, router: { ip: string; port: number }): void {
    if (this.closed || this.far) return;
    this.far = far;
    this.router = router;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.outside.close();
    this.inside.close();
  }

  private fromFar(packet: Buffer, ip: string, port: number): void {
    const far = this.far;
    if (!far || isRtcp(packet)) { this.counters.dropped++; return; }
    const latched = this.latchedTo;
    if (latched ? latched.ip !== ip || latched.port !== port : !this.mayLatch(far, ip)) {
      this.counters.dropped++;
      this.counters.refused++;
      return;
    }
    const rtp = parseRtp(packet);
    if (!rtp || rtp.payloadType !== far.payloadType) { this.counters.dropped++; return; }
    if (!latched) this.latchedTo = { ip, port };
    packet.writeUInt32BE(this.ssrc, 8);
    this.inside.send(packet, this.router!.port, this.router!.ip);
    this.counters.fromFarEnd++;
  }

  private mayLatch(far: FarEnd, ip: string): boolean {
    if (ip === far.ip) return true;
    const v = isIP(ip);
    return !!far.allow && v !== 0 && far.allow.check(ip, v === 4 ? 'ipv4' : 'ipv6');
  }

  private fromRouter(packet: Buffer, ip: string, port: number): void {
    const far = this.far;
    const router = this.router;
    if (!far || !router || ip !== router.ip || port !== router.port) { this.counters.dropped++; return; }
    const to = this.latchedTo ?? { ip: far.ip, port: far.port };
    if (isRtcp(packet)) {
      const rtcpPort = to.port + (far.rtcpPort - far.port);
      if (rtcpPort > 0 && rtcpPort < 65536) this.outside.send(packet, rtcpPort, to.ip);
      return;
    }
    this.outside.send(packet, to.port, to.ip);
    this.counters.toFarEnd++;
  }
}

/** The socket bound to port (0: any), or null when the port is taken. */
function bind(socket: Socket, port: number, ip: string): Promise<Socket | null> {
  return new Promise((resolve) => {
    const onError = () => { socket.close(); resolve(null); };
    socket.once('error', onError);
    socket.bind(port, ip, () => { socket.off('error', onError); resolve(socket); });
  });
}
