// The SIP user agent's transport (ours; the `sip` package's parser, serializer and stream framing): one UDP socket
// and one TCP listener on SIP_LISTEN, a TLS listener on SIP_TLS_PORT when the trunk speaks TLS, plus TCP or TLS
// connections to the trunk (TLS: the trunk's certificate checked against SIP_TLS_CA and its address or name). Every message is checked before the user
// agent sees it, and anything malformed is dropped without an answer: more than MAX_MESSAGE_BYTES, not SIP, missing
// Via / Call-ID / CSeq / From / To, a CSeq whose method is not the request's, or (UDP) a Content-Length longer than
// the body. TCP and TLS connections from outside SIP_TRUNK_ALLOW are closed at once (before any TLS handshake); UDP senders are judged by the user agent
// (it answers their requests 403).
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { connect, createServer, type Server, type Socket as TcpSocket } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import sip from 'sip';
import type { Logger } from '../../shared/log.ts';

export type Protocol = 'UDP' | 'TCP' | 'TLS';
export interface Remote { protocol: Protocol; address: string; port: number }

/** The largest message taken: far above any real SIP message, far below a 64 KB datagram. */
export const MAX_MESSAGE_BYTES = 16 * 1024;
/** How long a remote we could not connect to gets no ACK dialed to it. */
const FAILED_REMOTE_MS = 2000;
/** TCP connections idle this long are closed. */
const TCP_IDLE_MS = 120_000;

export interface TransportOptions {
  host: string;
  port: number;
  log: Logger;
  /** Whether a TCP or TLS peer may connect (SIP_TRUNK_ALLOW). */
  accepts: (address: string) => boolean;
  /** A connection we opened closed before it was established (refused, unreachable, a TLS certificate that does not
   *  verify): the requests written to it, which no response can reach now. */
  unreachable?: (remote: Remote, requests: sip.Message[]) => void;
  /** SIP over TLS: the CAs that may sign a peer's certificate (null: Node's bundled roots), our certificate and key,
   *  the listener's port, and the name a peer's certificate must carry when we dial it (undefined: its address). */
  tls?: { ca: string | null; cert: string; key: string; port: number; serverName: (remote: Remote) => string | undefined };
}

/** One TCP or TLS connection and its framing; `unsent` holds the requests written to a connection of ours before it
 *  was established (null once it is, and for connections a peer opened). */
interface Flow { socket: TcpSocket; remote: Remote; unsent: sip.Message[] | null }

export class SipTransport {
  /** Messages taken and dropped (malformed, too large, TCP peers refused). */
  readonly counts = { received: 0, dropped: 0 };
  private udp: UdpSocket | null = null;
  private tcp: Server | null = null;
  private tls: TlsServer | null = null;
  private readonly flows = new Map<string, Flow>();
  /** Remotes a connection of ours just failed to reach, until when: an ACK to them is dropped rather than dialed
   *  again (the transaction layer acknowledges the 503 we make up for a failed connection). */
  private readonly failedUntil = new Map<string, number>();
  private boundPort = 0;
  private boundTlsPort = 0;

  constructor(private readonly o: TransportOptions, private readonly onMessage: (m: sip.Message, remote: Remote) => void) {}

  get port(): number { return this.boundPort; }
  /** The TLS listener's port (0: no TLS). */
  get tlsPort(): number { return this.boundTlsPort; }

  /** Binds UDP and TCP on the same port (SIP_LISTEN's; port 0: a free one both can have). */
  async start(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const udp = createSocket({ type: this.o.host.includes(':') ? 'udp6' : 'udp4', recvBufferSize: 1 << 20 });
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(this.o.port, this.o.host, () => { udp.off('error', reject); resolve(); });
      });
      const port = udp.address().port;
      const tcp = createServer((socket) => this.accept(socket));
      const listening = await new Promise<boolean>((resolve, reject) => {
        tcp.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' && this.o.port === 0 && attempt < 20 ? resolve(false) : reject(err)));
        tcp.listen(port, this.o.host, () => resolve(true));
      }).catch((err) => { udp.close(); throw err; });
      if (!listening) { udp.close(); continue; }
      udp.on('message', (data, rinfo) => this.fromDatagram(data, { protocol: 'UDP', address: rinfo.address, port: rinfo.port }));
      udp.on('error', (err) => this.o.log.error({ err }, 'SIP UDP socket error'));
      this.udp = udp;
      this.tcp = tcp;
      this.boundPort = port;
      break;
    }
    if (this.o.tls) await this.listenTls(this.o.tls);
  }

  /** The TLS listener: peers outside SIP_TRUNK_ALLOW are cut at the TCP connection, before a handshake costs anything. */
  private async listenTls(o: NonNullable<TransportOptions['tls']>): Promise<void> {
    const server = createTlsServer({ cert: o.cert, key: o.key, ...(o.ca ? { ca: o.ca } : {}) }, (socket) => {
      this.attach(socket, { protocol: 'TLS', address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 });
    });
    server.on('connection', (socket: TcpSocket) => {
      if (!this.o.accepts(socket.remoteAddress ?? '')) { this.counts.dropped++; socket.destroy(); }
    });
    server.on('tlsClientError', (err, socket) => {
      this.o.log.warn({ err: err.message, address: socket.remoteAddress }, 'SIP TLS handshake failed');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.port, this.o.host, () => { server.off('error', reject); resolve(); });
    });
    this.tls = server;
    this.boundTlsPort = (server.address() as { port: number }).port;
  }

  /** What the transaction layer sends through: the datagram socket, or the TCP flow to `remote` (opened when
   *  there is none). */
  connection(remote: Remote): sip.Connection {
    return {
      protocol: remote.protocol,
      send: (m) => this.send(m, remote),
      release: () => undefined,
    };
  }

  send(m: sip.Message, remote: Remote): void {
    const bytes = Buffer.from(sip.stringify(m), 'binary');
    if (remote.protocol === 'UDP') {
      this.udp?.send(bytes, remote.port, remote.address);
      return;
    }
    const key = flowKey(remote);
    let flow = this.flows.get(key);
    if (!flow) {
      if (m.method === 'ACK' && (this.failedUntil.get(key) ?? 0) > Date.now()) return;
      flow = this.dial(remote);
    }
    if (flow.socket.destroyed) return;
    if (flow.unsent && m.method && m.method !== 'ACK') flow.unsent.push(m);
    flow.socket.write(bytes);
  }

  async close(): Promise<void> {
    for (const f of this.flows.values()) f.socket.destroy();
    this.flows.clear();
    this.udp?.close();
    await Promise.all([this.tcp, this.tls].map((server) => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))));
  }

  private fromDatagram(data: Buffer, remote: Remote): void {
    if (data.length > MAX_MESSAGE_BYTES) { this.counts.dropped++; return; }
    const m = sip.parse(data);
    const headerEnd = data.indexOf('\r\n\r\n');
    if (!m || headerEnd < 0 || !wellFormed(m, data.length - headerEnd - 4)) { this.counts.dropped++; return; }
    this.deliver(m, remote);
  }

  private accept(socket: TcpSocket): void {
    const address = socket.remoteAddress ?? '';
    if (!this.o.accepts(address)) { this.counts.dropped++; socket.destroy(); return; }
    this.attach(socket, { protocol: 'TCP', address, port: socket.remotePort ?? 0 });
  }

  /** Opens a connection of ours. Should it close before it is established, the requests written to it are handed to
   *  `unreachable` (the user agent answers them 503 at once rather than after Timer B's 32 s). */
  private dial(remote: Remote): Flow {
    let socket: TcpSocket;
    if (remote.protocol === 'TLS') {
      const o = this.o.tls;
      if (!o) throw new Error('a TLS destination without TLS settings');
      const servername = o.serverName(remote);
      socket = tlsConnect({
        host: remote.address, port: remote.port, ...(servername ? { servername } : {}),
        ...(o.ca ? { ca: o.ca } : {}), cert: o.cert, key: o.key,
      });
    } else {
      socket = connect(remote.port, remote.address);
    }
    const flow = this.attach(socket, remote, []);
    socket.once(remote.protocol === 'TLS' ? 'secureConnect' : 'connect', () => { flow.unsent = null; });
    socket.on('error', (err) => { if (flow.unsent) this.o.log.warn({ err: err.message, remote }, `SIP ${remote.protocol} connection failed`); });
    socket.once('close', () => {
      const unsent = flow.unsent;
      flow.unsent = null;
      if (!unsent) return;
      const key = flowKey(remote);
      this.failedUntil.set(key, Date.now() + FAILED_REMOTE_MS);
      setTimeout(() => { if ((this.failedUntil.get(key) ?? 0) <= Date.now()) this.failedUntil.delete(key); }, FAILED_REMOTE_MS + 10).unref();
      if (unsent.length) this.o.unreachable?.(remote, unsent);
    });
    return flow;
  }

  /** Frames a TCP byte stream; a peer that sends more than MAX_MESSAGE_BYTES without completing a message (or a
   *  Content-Length that is not a number) is cut off. */
  private attach(socket: TcpSocket, remote: Remote, unsent: sip.Message[] | null = null): Flow {
    const flow: Flow = { socket, remote, unsent };
    const key = flowKey(remote);
    this.flows.set(key, flow);
    let pending = 0;
    const parse = sip.makeStreamParser((m) => {
      pending = 0;
      if (!wellFormed(m, Infinity)) { this.counts.dropped++; return; }
      this.deliver(m, remote);
    }, () => { this.counts.dropped++; socket.destroy(); }, MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES);
    socket.setEncoding('binary');
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
    socket.on('data', (chunk: string) => {
      pending += chunk.length;
      if (pending > MAX_MESSAGE_BYTES) { this.counts.dropped++; socket.destroy(); return; }
      parse(chunk);
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => { if (this.flows.get(key) === flow) this.flows.delete(key); });
    return flow;
  }

  private deliver(m: sip.Message, remote: Remote): void {
    this.counts.received++;
    try {
      this.onMessage(m, remote);
    } catch (err) {
      // A message that trips the user agent up is dropped; the transport keeps serving.
      this.counts.dropped++;
      this.o.log.warn({ err, remote }, 'SIP message could not be handled');
    }
  }
}

const flowKey = (r: Remote) => `${r.protocol}|${r.address}|${r.port}`;

/** What every message must carry before the user agent looks at it (RFC 3261 §8.1.1, §20.14). */
function wellFormed(m: sip.Message, bodyBytes: number): boolean {
  const h = m.headers;
  const via = h.via;
  if (!Array.isArray(via) || via.length === 0 || via.some((v) => !v || !v.host || !v.protocol)) return false;
  if (typeof h['call-id'] !== 'string' || !h['call-id'].trim()) return false;
  if (!h.cseq || !Number.isInteger(h.cseq.seq) || h.cseq.seq < 0 || h.cseq.seq > 2 ** 31 || !h.cseq.method) return false;
  if (!h.from?.uri || !h.to?.uri) return false;
  if (m.method !== undefined ? h.cseq.method !== m.method : !(Number.isInteger(m.status) && m.status! >= 100 && m.status! <= 699)) return false;
  const length = h['content-length'];
  if (length !== undefined && !(Number.isInteger(length) && length >= 0 && length <= bodyBytes)) return false;
  return true;
}
