// A call's recording from its real RTP (CARRIER=sip): a PlainTransport on loopback consumes every audio producer of
// the call's router (each SIP leg's far end, the browser's microphone) and sends it to a UDP socket here, which
// decodes G.711, mixes the streams into one mono timeline and writes it as a μ-law WAV. Memory stays bounded: the
// timeline is a ring of WINDOW_SAMPLES, and everything older than JITTER_SAMPLES behind "now" is mixed down and
// appended to the file. Each packet is placed by its RTP timestamp (so jitter does not smear it), anchored to the
// wall clock at the stream's first packet; a stream whose timestamps jump away from the clock is re-anchored.
// The file is written under a temporary name and renamed to its final name (sipRecordingFile) when the session
// closes, so the gateway never serves half a recording.
import { createSocket, type Socket } from 'node:dgram';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { types } from 'mediasoup';
import { SAMPLE_RATE, alawToLinear, linearToMulaw, mulawToLinear, mulawWavHeader } from '../shared/audio/mulaw-wav.ts';
import type { Logger } from '../shared/log.ts';
import { isRtcp, parseRtp } from '../shared/media/rtp.ts';

/** The mixing ring: 4 s of samples (128 KiB). */
const WINDOW_SAMPLES = 4 * SAMPLE_RATE;
/** How far behind "now" the timeline is mixed down: late packets within this still land in place. */
const JITTER_SAMPLES = SAMPLE_RATE / 2;
/** A stream whose timestamps drift this far from the clock is re-anchored (a restart, a timestamp jump). */
const RESYNC_SAMPLES = 2 * SAMPLE_RATE;
const FLUSH_MS = 250;

const MULAW_TO_LINEAR = Int16Array.from({ length: 256 }, (_, i) => mulawToLinear(i));
const ALAW_TO_LINEAR = Int16Array.from({ length: 256 }, (_, i) => alawToLinear(i));

interface Stream {
  decode: Int16Array;
  /** Timeline position of the stream's anchor packet, and that packet's RTP timestamp. */
  anchorPos: number;
  anchorTs: number;
}

export class CallRecorder {
  private readonly ring = new Int32Array(WINDOW_SAMPLES);
  /** Timeline position (in samples since the first packet) up to which the file is written. */
  private written = 0;
  /** Furthest position any packet reached. */
  private end = 0;
  private startedAt: number | null = null;
  private readonly streams = new Map<number, Stream>();
  /** Payload type → decoder, per consumer's codec. */
  private readonly codecs = new Map<number, Int16Array>();
  private readonly producers = new Set<string>();
  private writes: Promise<unknown> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  /** Packets taken into the mix (for the session's stats). */
  packets = 0;

  private constructor(
    private readonly router: types.Router,
    private readonly transport: types.PlainTransport,
    private readonly socket: Socket,
    private readonly file: FileHandle,
    private readonly tmpPath: string,
    private readonly path: string,
    private readonly log: Logger,
  ) {
    socket.on('message', (packet) => this.onPacket(packet));
    socket.on('error', (err) => log.warn({ err, path }, 'recorder socket failed'));
    this.timer = setInterval(() => this.flushTo(this.nowPos() - JITTER_SAMPLES), FLUSH_MS);
    this.timer.unref();
  }

  /** A recorder writing `path` (its directory is made if needed). */
  static async open(router: types.Router, path: string, log: Logger): Promise<CallRecorder> {
    await mkdir(dirname(path), { recursive: true });
    const tmpPath = `${path}.${process.pid}.tmp`;
    const file = await open(tmpPath, 'w');
    const socket = createSocket({ type: 'udp4', recvBufferSize: 256 * 1024 });
    try {
      await new Promise<void>((resolve, reject) => { socket.once('error', reject); socket.bind(0, '127.0.0.1', () => { socket.off('error', reject); resolve(); }); });
      await file.write(mulawWavHeader(0));
      const transport = await router.createPlainTransport({ listenIp: { ip: '127.0.0.1' }, rtcpMux: true, comedia: false });
      await transport.connect({ ip: '127.0.0.1', port: socket.address().port });
      return new CallRecorder(router, transport, socket, file, tmpPath, path, log);
    } catch (err) {
      socket.close();
      await file.close();
      await rm(tmpPath, { force: true });
      throw err;
    }
  }

  /** Records a producer of the router (idempotent). */
  async add(producerId: string, mimeType: 'audio/PCMU' | 'audio/PCMA'): Promise<void> {
    if (this.closed || this.producers.has(producerId)) return;
    this.producers.add(producerId);
    const payloadType = mimeType === 'audio/PCMU' ? 0 : 8;
    const consumer = await this.transport.consume({
      producerId,
      rtpCapabilities: { codecs: [{ kind: 'audio', mimeType, clockRate: 8000, preferredPayloadType: payloadType, rtcpFeedback: [] }], headerExtensions: [] },
    });
    this.codecs.set(consumer.rtpParameters.codecs[0].payloadType, mimeType === 'audio/PCMU' ? MULAW_TO_LINEAR : ALAW_TO_LINEAR);
  }

  /** Stops recording: the rest of the timeline is written, the header completed, the file renamed into place. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.socket.close();
    if (!this.transport.closed && !this.router.closed) this.transport.close();
    this.flushTo(this.end);
    const samples = this.written;
    try {
      await this.writes;
      await this.file.write(mulawWavHeader(samples), 0, undefined, 0);
      await this.file.close();
      await rename(this.tmpPath, this.path);
      this.log.info({ path: this.path, seconds: samples / SAMPLE_RATE }, 'recording written');
    } catch (err) {
      this.log.error({ err, path: this.path }, 'the recording could not be written');
      await this.file.close().catch(() => undefined);
      await rm(this.tmpPath, { force: true });
    }
  }

  /** Samples since the first packet, by the wall clock. */
  private nowPos(): number {
    return this.startedAt === null ? 0 : Math.floor(((performance.now() - this.startedAt) * SAMPLE_RATE) / 1000);
  }

  private onPacket(packet: Buffer): void {
    if (this.closed || isRtcp(packet)) return;
    const rtp = parseRtp(packet);
    const decode = rtp && this.codecs.get(rtp.payloadType);
    if (!rtp || !decode) return;
    if (this.startedAt === null) this.startedAt = performance.now();
    const now = this.nowPos();
    const { ssrc, timestamp: ts } = rtp;
    let s = this.streams.get(ssrc);
    // Signed 32-bit distance from the anchor's timestamp (RTP timestamps wrap).
    let pos = s ? s.anchorPos + ((ts - s.anchorTs) | 0) : 0;
    if (!s || Math.abs(pos - now) > RESYNC_SAMPLES) {
      s = { decode, anchorPos: now, anchorTs: ts };
      this.streams.set(ssrc, s);
      pos = now;
    }
    const payload = packet.subarray(rtp.payloadOffset, rtp.payloadOffset + rtp.payloadLength);
    // Room in the ring: a packet ahead of it pushes the oldest samples out to the file first.
    if (pos + payload.length - this.written > WINDOW_SAMPLES) this.flushTo(pos + payload.length - WINDOW_SAMPLES);
    for (let i = 0; i < payload.length; i++) {
      const p = pos + i;
      if (p < this.written) continue; // too late: already written
      this.ring[p % WINDOW_SAMPLES] += decode[payload[i]];
    }
    this.end = Math.max(this.end, pos + payload.length);
    this.packets++;
  }

  /** Mixes the timeline down to position `to` and appends it to the file. */
  private flushTo(to: number): void {
    if (to <= this.written) return;
    const out = Buffer.allocUnsafe(to - this.written);
    for (let p = this.written, i = 0; p < to; p++, i++) {
      const slot = p % WINDOW_SAMPLES;
      out[i] = linearToMulaw(this.ring[slot]);
      this.ring[slot] = 0;
    }
    this.written = to;
    this.writes = this.writes.then(() => this.file.write(out)).catch((err) => this.log.error({ err, path: this.path }, 'recording write failed'));
  }
}
