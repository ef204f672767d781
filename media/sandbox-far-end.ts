// The sandbox carrier's far end of a call: a small RTP endpoint (one UDP socket) on the other side of the session's
// carrier PlainTransport. After the call is answered it plays a short tone, so a softphone hears something at
// once, then sends back every packet the browser's audio arrives in, so the echo proves both directions.
import { createSocket, type Socket } from 'node:dgram';
import { EventEmitter } from 'node:events';
import type { FarEndPhase } from '../shared/media/protocol.ts';
import { mulawTone, PACKET_INTERVAL_MS, PCMU_SAMPLES_PER_PACKET, parseRtp, writeRtpHeader } from '../shared/media/rtp.ts';

const TONE_HZ = 440;
/** One second of tone, cut into packets once per process: every far end plays the same bytes. */
let toneCache: { ms: number; packets: Buffer[] } | null = null;

/** The tone's payloads, 160 μ-law bytes (20 ms) each. */
export function sandboxTonePayloads(toneMs: number): Buffer[] {
  if (toneCache?.ms !== toneMs) {
    const samples = mulawTone(TONE_HZ, toneMs);
    const packets: Buffer[] = [];
    for (let i = 0; i + PCMU_SAMPLES_PER_PACKET <= samples.length; i += PCMU_SAMPLES_PER_PACKET) {
      packets.push(samples.subarray(i, i + PCMU_SAMPLES_PER_PACKET));
    }
    toneCache = { ms: toneMs, packets };
  }
  return toneCache.packets;
}

export interface SandboxFarEndOptions {
  /** Address to bind (the carrier transport listens on the same host). */
  listenIp: string;
  /** SSRC and payload type the session's carrier producer was declared with. */
  ssrc: number;
  payloadType: number;
  toneMs: number;
}

interface FarEndEvents {
  phase: [FarEndPhase];
  closed: [];
}

export class SandboxFarEnd extends EventEmitter<FarEndEvents> {
  phase: FarEndPhase = 'tone';
  tonePacketsSent = 0;
  echoPacketsSent = 0;
  packetsReceived = 0;
  closed = false;

  private remote: { ip: string; port: number } | null = null;
  private toneTimer: NodeJS.Timeout | null = null;
  // Outgoing stream state: one SSRC, sequence numbers and timestamps continue from the tone into the echo.
  private sequenceNumber = Math.floor(Math.random() * 0x10000);
  private timestamp = Math.floor(Math.random() * 0x100000000);
  /** Timestamp of the first echoed packet as received, and as sent: later ones keep their spacing. */
  private echoBase: { received: number; sent: number } | null = null;

  private constructor(private readonly socket: Socket, private readonly options: SandboxFarEndOptions) {
    super();
    socket.on('message', (packet, from) => this.onPacket(packet, from.address, from.port));
    socket.on('error', () => this.close());
  }

  /** Binds the far end's socket on an ephemeral port; nothing is sent before start(). */
  static async open(options: SandboxFarEndOptions): Promise<SandboxFarEnd> {
    const socket = createSocket({ type: options.listenIp.includes(':') ? 'udp6' : 'udp4', recvBufferSize: 256 * 1024 });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, options.listenIp, () => { socket.off('error', reject); resolve(); });
    });
    return new SandboxFarEnd(socket, options);
  }

  get address(): { ip: string; port: number } {
    const a = this.socket.address();
    return { ip: a.address, port: a.port };
  }

  /** Starts the tone towards the carrier transport at `remote`; the echo follows when the tone ends. */
  start(remote: { ip: string; port: number }): void {
    if (this.closed || this.remote) return;
    this.remote = remote;
    const payloads = sandboxTonePayloads(this.options.toneMs);
    if (payloads.length === 0) { this.enterEcho(); return; }
    const sendNext = () => {
      if (this.closed) return;
      const i = this.tonePacketsSent;
      this.send(payloads[i], i === 0);
      this.timestamp = (this.timestamp + PCMU_SAMPLES_PER_PACKET) >>> 0;
      if (this.tonePacketsSent >= payloads.length) this.enterEcho();
    };
    sendNext();
    if (this.phase === 'tone') this.toneTimer = setInterval(sendNext, PACKET_INTERVAL_MS);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.toneTimer) clearInterval(this.toneTimer);
    this.socket.close();
    this.emit('closed');
  }

  private enterEcho(): void {
    if (this.toneTimer) { clearInterval(this.toneTimer); this.toneTimer = null; }
    this.phase = 'echo';
    this.emit('phase', 'echo');
  }

  private send(payload: Buffer, marker: boolean): void {
    const packet = Buffer.allocUnsafe(12 + payload.length);
    writeRtpHeader(packet, {
      payloadType: this.options.payloadType, marker, sequenceNumber: this.sequenceNumber, timestamp: this.timestamp,
      ssrc: this.options.ssrc,
    });
    payload.copy(packet, 12);
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    this.socket.send(packet, this.remote!.port, this.remote!.ip);
    if (this.phase === 'tone') this.tonePacketsSent++; else this.echoPacketsSent++;
  }

  private onPacket(packet: Buffer, fromIp: string, fromPort: number): void {
    // Only the carrier transport talks to this socket; anything else (and its RTCP) is ignored.
    if (!this.remote || fromPort !== this.remote.port || fromIp !== this.remote.ip) return;
    const rtp = parseRtp(packet);
    if (!rtp) return;
    this.packetsReceived++;
    if (this.phase !== 'echo') return; // the browser's audio while the tone plays is not echoed
    if (!this.echoBase) this.echoBase = { received: rtp.timestamp, sent: this.timestamp };
    this.timestamp = (this.echoBase.sent + (rtp.timestamp - this.echoBase.received)) >>> 0;
    this.send(packet.subarray(rtp.payloadOffset, rtp.payloadOffset + rtp.payloadLength), false);
  }
}
