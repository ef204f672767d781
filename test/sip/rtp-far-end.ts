// A SIP leg's far end for media-level tests: a UDP socket that sends marked PCMU packets (its tag and a number in
// the payload) and records whose marked packets it heard.
import { createSocket, type Socket } from 'node:dgram';
import { PCMU_PAYLOAD_TYPE, parseRtp, rtpPacket } from '../../shared/media/rtp.ts';
import { markedPayload, readMark } from '../media/helpers.ts';

export class FarEnd {
  /** The tag of each marked packet heard (A, B or X: who sent it). */
  readonly heard: string[] = [];
  private seq = 1;
  /** The SSRC it sends with (never signalled to the platform, as with a real far end); may change mid-call. */
  ssrc = 4242;
  private constructor(private readonly socket: Socket, readonly tag: string) {
    socket.on('message', (packet) => {
      const h = parseRtp(packet);
      if (!h) return;
      for (const tagOf of ['A', 'B', 'X']) {
        const n = readMark(packet.subarray(h.payloadOffset, h.payloadOffset + h.payloadLength), `far-${tagOf}`);
        if (n !== null) this.heard.push(tagOf);
      }
    });
  }

  static async open(t: { teardown(fn: () => void): void }, ip: string, tag: string, ssrc = 4242): Promise<FarEnd> {
    const socket = createSocket('udp4');
    await new Promise<void>((r) => socket.bind(0, ip, r));
    const f = new FarEnd(socket, tag);
    f.ssrc = ssrc;
    t.teardown(() => f.socket.close());
    return f;
  }

  get port(): number { return this.socket.address().port; }

  send(to: { ip: string; port: number }, count: number): void {
    for (let i = 0; i < count; i++) {
      const n = this.seq++;
      this.socket.send(rtpPacket({ payloadType: PCMU_PAYLOAD_TYPE, sequenceNumber: n, timestamp: n * 160, ssrc: this.ssrc }, markedPayload(`far-${this.tag}`, n)), to.port, to.ip);
    }
  }
}
