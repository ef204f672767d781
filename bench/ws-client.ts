// A minimal WebSocket client for benchmarks (RFC 6455 over node:net): it opens, sends masked text frames and
// reads unfragmented text frames, nothing else. undici's client spent about 1.2 ms of CPU per connection here, on
// the same 2 cores as the server it measures; this one does the handshake and one frame each way for much less.
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

export interface BenchSocket {
  send(text: string): void;
  /** Resolves with the next text frame (frames are queued until read). */
  next(): Promise<string>;
  close(): void;
}

export function openWebSocket(url: string): Promise<BenchSocket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock: Socket = connect({ host: u.hostname, port: Number(u.port), noDelay: true });
    let buf = Buffer.alloc(0);
    let upgraded = false;
    const frames: string[] = [];
    const waiting: { resolve: (s: string) => void; reject: (e: Error) => void }[] = [];
    const fail = (err: Error) => {
      if (!upgraded) reject(err);
      for (const w of waiting.splice(0)) w.reject(err);
    };
    sock.on('error', fail);
    sock.on('close', () => fail(new Error('socket closed')));
    sock.on('connect', () => {
      sock.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
        + `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    });
    sock.on('data', (chunk) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!buf.subarray(0, 12).toString().startsWith('HTTP/1.1 101')) return fail(new Error(`handshake refused: ${buf.subarray(0, end)}`));
        upgraded = true;
        buf = buf.subarray(end + 4);
        resolve(api);
      }
      // Server frames are unmasked: FIN+opcode, length (7 bits, or 126 + 16 bits, or 127 + 64 bits), payload.
      while (buf.length >= 2) {
        let len = buf[1] & 0x7f;
        let at = 2;
        if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); at = 4; }
        else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); at = 10; }
        if (buf.length < at + len) return;
        const opcode = buf[0] & 0x0f;
        const payload = buf.subarray(at, at + len).toString('utf8');
        buf = buf.subarray(at + len);
        if (opcode !== 1) continue; // pings, pongs and closes are not part of what is measured
        const w = waiting.shift();
        if (w) w.resolve(payload); else frames.push(payload);
      }
    });
    const api: BenchSocket = {
      send(text) {
        const payload = Buffer.from(text);
        const n = payload.length;
        const head = n < 126 ? Buffer.from([0x81, 0x80 | n]) : Buffer.from([0x81, 0x80 | 126, n >> 8, n & 0xff]);
        const mask = randomBytes(4);
        for (let i = 0; i < n; i++) payload[i] ^= mask[i & 3];
        sock.write(Buffer.concat([head, mask, payload]));
      },
      next() {
        const f = frames.shift();
        return f !== undefined ? Promise.resolve(f) : new Promise((res, rej) => waiting.push({ resolve: res, reject: rej }));
      },
      close() { sock.destroy(); },
    };
  });
}
