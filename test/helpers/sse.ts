// A Server-Sent Events client for tests: opens a GET on the gateway and parses the stream as it arrives (events with
// their data as JSON, comment lines), with waits on what is eventually true.
import { request, type ClientRequest, type IncomingMessage } from 'node:http';

export interface SseEvent { event: string; data: any; id?: string }

export class SseStream {
  status = 0;
  headers: IncomingMessage['headers'] = {};
  /** The body of a refused request (not a stream). */
  text = '';
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  ended = false;
  private buf = '';
  private waiters: (() => void)[] = [];
  private req: ClientRequest | null = null;

  /** Resolves once the status line and headers arrived. */
  static open(base: string, path: string, headers: Record<string, string>): Promise<SseStream> {
    const s = new SseStream();
    return new Promise((resolve, reject) => {
      const req = request(new URL(path, base), { method: 'GET', headers: { accept: 'text/event-stream', ...headers } }, (res) => {
        s.status = res.statusCode ?? 0;
        s.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => s.feed(chunk));
        res.on('end', () => { s.ended = true; s.wake(); });
        res.on('close', () => { s.ended = true; s.wake(); });
        resolve(s);
      });
      req.on('error', (err) => { s.ended = true; s.wake(); reject(err); });
      req.end();
      s.req = req;
    });
  }

  /** Goes away as a browser tab does (the socket closes). */
  close(): void { this.req?.destroy(); }

  /** Waits until fn() is truthy, re-checked on every chunk; fails after timeoutMs. */
  async until<T>(fn: () => T | undefined | null | false, timeoutMs = 15_000, what = 'stream condition'): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = fn();
      if (v) return v;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; events: ${JSON.stringify(this.events.map((e) => e.data?.status ?? e.event))}, ended: ${this.ended}`);
      await new Promise<void>((r) => { const t = setTimeout(r, Math.min(left, 250)); this.waiters.push(() => { clearTimeout(t); r(); }); });
    }
  }

  callStatuses(callId: string): string[] {
    return this.events.filter((e) => e.event === 'call' && e.data.call_id === callId).map((e) => e.data.status);
  }

  private feed(chunk: string): void {
    if (this.status !== 200) { this.text += chunk; return this.wake(); }
    this.buf += chunk;
    let i: number;
    while ((i = this.buf.indexOf('\n\n')) >= 0) {
      const block = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 2);
      let event = 'message';
      const data: string[] = [];
      let id: string | undefined;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
        else if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        else if (line.startsWith('id:')) id = line.slice(3).trim();
      }
      if (data.length) this.events.push({ event, data: JSON.parse(data.join('\n')), id });
    }
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}
