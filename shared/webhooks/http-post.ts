import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, isForbiddenAddress } from './url-guard.ts';

export interface PostResult {
  /** 2xx */
  ok: boolean;
  /** HTTP status, or null when no response arrived (timeout, refused, forbidden address, ...). */
  status: number | null;
  latencyMs: number;
  /** Why it failed (null on success). */
  error: string | null;
  /** The start of the receiver's answer (RESPONSE_BODY_KEEP bytes, as UTF-8) and its content type; null without one. */
  response?: { contentType: string | null; body: string; truncated: boolean };
}

/** How much of a receiver's answer is kept for the delivery log. */
export const RESPONSE_BODY_KEEP = 2048;

export interface PosterOptions {
  timeoutMs: number;
  /** WEBHOOK_ALLOW_INSECURE: plain http:// and private addresses allowed. */
  allowInsecure: boolean;
  maxSockets?: number;
}

export const WEBHOOK_USER_AGENT = 'openline-webhooks/1.0';

/** POSTs webhook bodies over keep-alive connections. Never follows redirects (a 3xx is a failed attempt), checks
 *  every address it connects to against the SSRF rule, and gives up after `timeoutMs` for the whole exchange. */
export class WebhookPoster {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(private readonly o: PosterOptions) {
    const agentOpts = { keepAlive: true, maxSockets: o.maxSockets ?? 128, maxFreeSockets: o.maxSockets ?? 128, scheduling: 'lifo' as const };
    this.httpAgent = new http.Agent(agentOpts);
    this.httpsAgent = new https.Agent(agentOpts);
  }

  private readonly urls = new Map<string, URL | null>();

  private parse(rawUrl: string): URL | null {
    let u = this.urls.get(rawUrl);
    if (u === undefined) {
      try { u = new URL(rawUrl); } catch { u = null; }
      if (this.urls.size > 10_000) this.urls.clear();
      this.urls.set(rawUrl, u);
    }
    return u;
  }

  post(rawUrl: string, headers: Record<string, string>, body: string): Promise<PostResult> {
    const started = performance.now();
    const fail = (error: string, status: number | null = null): PostResult =>
      ({ ok: false, status, latencyMs: Math.round(performance.now() - started), error });
    const url = this.parse(rawUrl);
    if (!url) return Promise.resolve(fail('invalid URL'));
    const secure = url.protocol === 'https:';
    if (!secure && !(this.o.allowInsecure && url.protocol === 'http:')) {
      return Promise.resolve(fail('refused: only https:// receivers are allowed (WEBHOOK_ALLOW_INSECURE is off)'));
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!this.o.allowInsecure && isIP(host) && isForbiddenAddress(host)) {
      return Promise.resolve(fail(`refused: ${host} is a loopback, private, link-local or metadata address`));
    }
    return new Promise((resolve) => {
      let settled = false;
      const finish = (r: PostResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      // One timer for the whole exchange (connect, request, response); on expiry the socket is destroyed.
      const timer = setTimeout(() => {
        finish(fail(`timeout after ${this.o.timeoutMs} ms`));
        req.destroy();
      }, this.o.timeoutMs);
      const req = (secure ? https : http).request({
        protocol: url.protocol, hostname: host, port: url.port || undefined, path: url.pathname + url.search,
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)), 'user-agent': WEBHOOK_USER_AGENT },
        lookup: this.o.allowInsecure ? undefined : guardedLookup,
        servername: secure && !isIP(host) ? host : undefined,
      }, (res) => {
        const status = res.statusCode ?? 0;
        // The first RESPONSE_BODY_KEEP bytes are kept for the delivery log; the rest is read and dropped.
        const kept: Buffer[] = [];
        let keptBytes = 0;
        let truncated = false;
        res.on('data', (chunk: Buffer) => {
          if (keptBytes >= RESPONSE_BODY_KEEP) { truncated = true; return; }
          const part = chunk.length > RESPONSE_BODY_KEEP - keptBytes ? chunk.subarray(0, RESPONSE_BODY_KEEP - keptBytes) : chunk;
          if (part.length < chunk.length) truncated = true;
          kept.push(part);
          keptBytes += part.length;
        });
        const response = () => ({ contentType: typeof res.headers['content-type'] === 'string' ? res.headers['content-type'].slice(0, 200) : null,
          body: Buffer.concat(kept).toString('utf8'), truncated });
        res.on('error', (err) => finish({ ...fail(describe(err), status), response: response() }));
        res.on('end', () => {
          const latencyMs = Math.round(performance.now() - started);
          const r = response();
          if (status >= 200 && status < 300) finish({ ok: true, status, latencyMs, error: null, response: r });
          else if (status >= 300 && status < 400) finish({ ok: false, status, latencyMs, error: `redirect (HTTP ${status}) not followed`, response: r });
          else finish({ ok: false, status, latencyMs, error: `HTTP ${status}`, response: r });
        });
        res.on('close', () => finish({ ...fail('connection closed before the response ended', status), response: response() }));
      });
      req.on('error', (err) => finish(fail(describe(err))));
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

function describe(err: Error & { code?: string }): string {
  if (err.code === 'EFORBIDDENADDRESS') return `refused: ${err.message}`;
  const msg = err.code ? `${err.code}: ${err.message}` : err.message;
  return msg.slice(0, 500);
}
