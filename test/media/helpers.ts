// The real media process on an ephemeral port, its control client, and a UDP RTP endpoint standing in for a browser.
import { spawn } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { MediaControlClient } from '../../shared/media/control-client.ts';
import { parseRtp, PCMU_PAYLOAD_TYPE, rtpPacket, type RtpHeader } from '../../shared/media/rtp.ts';
import { Proc, ROOT } from '../helpers/env.ts';

interface TapLike { teardown(fn: () => unknown): void }

export interface RunningMedia {
  proc: Proc;
  url: string;
  secret: string;
  client: MediaControlClient;
}

/** Spawns `media/main.ts` (MEDIA_WORKERS=1 unless `env` says otherwise) and waits for its ready line. */
export async function startMedia(t: TapLike, env: Record<string, string> = {}): Promise<RunningMedia> {
  const secret = randomBytes(12).toString('hex');
  const child = spawn(process.execPath, ['--import', 'tsx', 'media/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', MEDIA_PORT: '0', MEDIA_WORKERS: '1', LOG_LEVEL: 'info', MEDIA_CONTROL_SECRET: secret, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = new Proc(child);
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) return proc.kill('SIGKILL'); });
  await proc.ready(60_000);
  const url = /"control":"([^"]+)"/.exec(proc.output)?.[1];
  if (!url) throw new Error(`no control URL in the ready line:\n${proc.output}`);
  const client = new MediaControlClient({ url, secret });
  t.teardown(() => client.close());
  return { proc, url, secret, client };
}

export interface ReceivedPacket { header: RtpHeader; payload: Buffer; at: number }

/** A UDP socket speaking plain RTP (PCMU) in the browser's place. */
export class RtpEndpoint {
  readonly received: ReceivedPacket[] = [];
  private sequenceNumber = 1000;
  private timestamp = 50_000;

  private constructor(private readonly socket: Socket, readonly ssrc: number) {
    socket.on('message', (packet) => {
      const header = parseRtp(packet);
      if (header) this.received.push({ header, payload: packet.subarray(header.payloadOffset, header.payloadOffset + header.payloadLength), at: Date.now() });
    });
  }

  static async open(t: TapLike, ssrc: number): Promise<RtpEndpoint> {
    const socket = createSocket('udp4');
    await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
    const endpoint = new RtpEndpoint(socket, ssrc);
    t.teardown(() => endpoint.close());
    return endpoint;
  }

  get port(): number { return this.socket.address().port; }

  /** Sends one 20 ms PCMU packet to the browser transport. */
  send(to: { ip: string; port: number }, payload: Buffer): void {
    this.socket.send(rtpPacket({ payloadType: PCMU_PAYLOAD_TYPE, sequenceNumber: this.sequenceNumber, timestamp: this.timestamp, ssrc: this.ssrc }, payload), to.port, to.ip);
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    this.timestamp += 160;
  }

  close(): void { try { this.socket.close(); } catch { /* closed */ } }
}

/** PCMU rtpParameters of a plain RTP endpoint sending with this SSRC. */
export function pcmuRtpParameters(ssrc: number) {
  return { codecs: [{ mimeType: 'audio/PCMU', payloadType: PCMU_PAYLOAD_TYPE, clockRate: 8000 }], encodings: [{ ssrc }], rtcp: { cname: `test-${ssrc}` } };
}

/** A 160-byte payload that says which packet of which test sender it is. */
export function markedPayload(tag: string, n: number): Buffer {
  const p = Buffer.alloc(160, 0x55);
  p.write(tag, 0, 'ascii');
  p.writeUInt32BE(n, 12);
  return p;
}

export function readMark(payload: Buffer, tag: string): number | null {
  return payload.length === 160 && payload.toString('ascii', 0, tag.length) === tag ? payload.readUInt32BE(12) : null;
}

/** Polls until fn returns a truthy value. */
export async function until<T>(what: string, fn: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
