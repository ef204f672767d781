// A webhook receiver for tests and benchmarks: a plain HTTP server on 127.0.0.1 that records every request and
// answers what the test scripts. Subscriptions can only point at it when the deployment under test sets
// WEBHOOK_ALLOW_INSECURE=1 (http:// and loopback are refused otherwise).
//
//   const rx = await startReceiver(t);          // listens on an ephemeral port; closed by t.teardown
//   const url = rx.url('/calls');               // 'http://127.0.0.1:<port>/calls': one path per subscription
//   rx.respond('/calls', 500, 500);             // the next two requests to /calls answer 500, then the default
//   rx.respond('/calls', { status: 200, delayMs: 2000 });   // scripted delay (e.g. beyond WEBHOOK_TIMEOUT_MS)
//   rx.setDefault('/gone', 410);                // answer once the script of that path is used up (default: 200)
//   await rx.waitForCount(3, { path: '/calls' });            // resolves with the matching requests
//   await rx.waitForCount(10, { unique: true });             // ... counted after dedupe by webhook-id
//   await rx.waitFor((reqs) => reqs.some(...));             // any condition over all requests
//   rx.received('/calls')                       // requests to a path; rx.requests holds all of them
//   rx.unique('/calls')                         // first request of each webhook-id
//   rx.verify(req, secret)                      // Standard Webhooks check with the `standardwebhooks` package;
//                                               // returns the parsed body, throws when the signature is wrong
//   rx.clear()                                  // forget recorded requests (scripts and defaults stay)
//
// Each recorded request: { path, method, headers (lower-case names), raw (body text), body (parsed JSON or
// undefined), at (Date.now() at receipt), status (what was answered), webhookId (headers['webhook-id']) }.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';

export type Scripted = number | { status?: number; delayMs?: number; body?: string; headers?: Record<string, string> };

export interface ReceivedRequest {
  path: string;
  method: string;
  headers: Record<string, string>;
  raw: string;
  body: any;
  at: number;
  status: number;
  webhookId: string | undefined;
}

interface TapLike { teardown(fn: () => unknown): void }

export interface ReceiverOptions {
  /** Called for every request as it arrives (benchmarks use it instead of keeping bodies around). */
  onRequest?: (r: ReceivedRequest) => void;
  /** Keep requests in `requests` (default true). */
  record?: boolean;
}

export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly scripts = new Map<string, Scripted[]>();
  private readonly defaults = new Map<string, Scripted>();
  private readonly waiters = new Set<() => void>();

  constructor(private readonly server: Server, readonly port: number, private readonly o: ReceiverOptions) {}

  url(path = '/'): string { return `http://127.0.0.1:${this.port}${path.startsWith('/') ? path : `/${path}`}`; }

  /** Queues answers for the next requests to `path`, in order. */
  respond(path: string, ...answers: Scripted[]): this {
    this.scripts.set(path, [...(this.scripts.get(path) ?? []), ...answers]);
    return this;
  }

  /** The answer for `path` once its script is used up (without this: 200). */
  setDefault(path: string, answer: Scripted): this {
    this.defaults.set(path, answer);
    return this;
  }

  received(path?: string): ReceivedRequest[] {
    return path === undefined ? [...this.requests] : this.requests.filter((r) => r.path === path);
  }

  unique(path?: string): ReceivedRequest[] {
    const seen = new Set<string | undefined>();
    return this.received(path).filter((r) => (seen.has(r.webhookId) ? false : (seen.add(r.webhookId), true)));
  }

  clear(): void { this.requests.length = 0; }

  verify(r: ReceivedRequest, secret: string): any {
    return new Webhook(secret).verify(r.raw, {
      'webhook-id': r.headers['webhook-id'], 'webhook-timestamp': r.headers['webhook-timestamp'],
      'webhook-signature': r.headers['webhook-signature'],
    });
  }

  async waitFor(cond: (reqs: ReceivedRequest[]) => boolean, timeoutMs = 20_000): Promise<ReceivedRequest[]> {
    const until = Date.now() + timeoutMs;
    while (!cond(this.requests)) {
      const left = until - Date.now();
      if (left <= 0) throw new Error(`receiver: condition not met within ${timeoutMs} ms (${this.requests.length} requests so far)`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(left, 250));
        function done() { clearTimeout(t); resolve(); }
        this.waiters.add(done);
      });
    }
    return this.requests;
  }

  async waitForCount(n: number, o: { path?: string; unique?: boolean; timeoutMs?: number } = {}): Promise<ReceivedRequest[]> {
    const pick = () => (o.unique ? this.unique(o.path) : this.received(o.path));
    await this.waitFor(() => pick().length >= n, o.timeoutMs);
    return pick();
  }

  close(): Promise<void> {
    return new Promise((resolve) => { this.server.closeAllConnections(); this.server.close(() => resolve()); });
  }

  /** @internal */
  answerFor(path: string): Scripted {
    const script = this.scripts.get(path);
    if (script?.length) return script.shift()!;
    return this.defaults.get(path) ?? 200;
  }

  /** @internal */
  note(r: ReceivedRequest): void {
    if (this.o.record !== false) this.requests.push(r);
    this.o.onRequest?.(r);
    for (const w of [...this.waiters]) { this.waiters.delete(w); w(); }
  }
}

export async function startReceiver(t?: TapLike, o: ReceiverOptions = {}): Promise<Receiver> {
  let rx!: Receiver;
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: any;
      try { body = raw ? JSON.parse(raw) : undefined; } catch { body = undefined; }
      const path = (req.url ?? '/').split('?')[0];
      const a = rx.answerFor(path);
      const ans = typeof a === 'number' ? { status: a } : a;
      const status = ans.status ?? 200;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : (v ?? '');
      rx.note({ path, method: req.method ?? '', headers, raw, body, at, status, webhookId: headers['webhook-id'] });
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'text/plain', ...(ans.headers ?? {}) }).end(ans.body ?? 'ok');
      };
      if (ans.delayMs) setTimeout(send, ans.delayMs); else send();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', resolve); });
  const addr = server.address();
  rx = new Receiver(server, typeof addr === 'object' && addr ? addr.port : 0, o);
  t?.teardown(() => rx.close());
  return rx;
}
