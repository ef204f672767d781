// The media control API (shared/media/protocol.ts): JSON over HTTP on MEDIA_PORT, beside /healthz, /readyz and /metrics. Every /v1
// request needs the bearer secret. GET /v1/events is the long-lived stream signaling holds open: session endings,
// worker replacements and a heartbeat; when it breaks without a `shutdown` line, the media process is gone and
// every session with it.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Logger } from '../shared/log.ts';
import {
  AttachFarEndRequest, BridgeRequest, ConnectBrowserTransportRequest, ConnectCarrierLegRequest, ConsumeRequest,
  CreateBrowserTransportRequest, CreateCarrierLegRequest, CreateSessionRequest, ProduceRequest, type ControlErrorBody,
  type MediaEvent, type SessionCreated, type WorkersInfo,
} from '../shared/media/protocol.ts';
import type { MediaSettings } from '../shared/media/settings.ts';
import { ControlError } from './errors.ts';
import type { MediaSessions } from './sessions.ts';
import { compileBody } from './validation.ts';
import type { MediaWorkerPool } from './worker-pool.ts';

const MAX_BODY_BYTES = 64 * 1024;

const validate = {
  createSession: compileBody(CreateSessionRequest),
  createBrowserTransport: compileBody(CreateBrowserTransportRequest),
  connectBrowserTransport: compileBody(ConnectBrowserTransportRequest),
  produce: compileBody(ProduceRequest),
  consume: compileBody(ConsumeRequest),
  attachFarEnd: compileBody(AttachFarEndRequest),
  createCarrierLeg: compileBody(CreateCarrierLegRequest),
  connectCarrierLeg: compileBody(ConnectCarrierLegRequest),
  bridge: compileBody(BridgeRequest),
};

export interface ControlServerOptions {
  host: string;
  port: number;
  settings: MediaSettings;
  pool: MediaWorkerPool;
  sessions: MediaSessions;
  log: Logger;
  /** /readyz and /metrics (media/metrics.ts), served without the control secret: true when it answered. */
  ops?: (req: IncomingMessage, res: ServerResponse, path: string) => boolean;
}

export interface RunningControlServer {
  port: number;
  url: string;
  instanceId: string;
  /** Tells every event stream `shutdown`, then stops listening. */
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, body: unknown) => Promise<unknown>;

export async function startControlServer(o: ControlServerOptions): Promise<RunningControlServer> {
  const { settings, pool, sessions, log } = o;
  const instanceId = randomUUID();
  const secret = Buffer.from(`Bearer ${settings.controlSecret}`);
  const streams = new Set<ServerResponse>();

  const broadcast = (event: MediaEvent) => {
    const line = JSON.stringify(event) + '\n';
    for (const res of streams) res.write(line);
  };
  sessions.on('closed', (callId, reason) => broadcast({ type: 'session_closed', callId, reason }));
  pool.on('replaced', (deadPid, fresh) => broadcast({ type: 'worker_replaced', deadPid, newPid: fresh?.pid ?? null }));
  const heartbeat = setInterval(() => broadcast({ type: 'heartbeat', at: new Date().toISOString(), sessions: sessions.size }), settings.heartbeatMs);

  const routes: { method: string; pattern: RegExp; handler: (m: string[]) => Handler }[] = [
    { method: 'POST', pattern: /^\/v1\/sessions$/, handler: () => async (_req, body) => {
      const b = validate.createSession(body);
      const { session, created } = await sessions.create(b.callId, b.maxDurationMs, b.carrier);
      return { callId: session.callId, created, routerId: session.routerId, workerPid: session.workerPid, rtpCapabilities: session.rtpCapabilities } satisfies SessionCreated;
    } },
    { method: 'GET', pattern: /^\/v1\/sessions$/, handler: () => async () => ({ sessions: sessions.list().map((s) => s.summary()) }) },
    { method: 'GET', pattern: /^\/v1\/sessions\/([^/]+)$/, handler: ([id]) => async () => sessions.get(id).summary() },
    { method: 'DELETE', pattern: /^\/v1\/sessions\/([^/]+)$/, handler: ([id]) => async () => {
      sessions.get(id).close('requested');
      return { callId: id, closed: true };
    } },
    { method: 'POST', pattern: /^\/v1\/sessions\/([^/]+)\/browser-transport$/, handler: ([id]) => async (_req, body) => {
      const b = validate.createBrowserTransport(body ?? {});
      return sessions.get(id).createBrowserTransport(b.type ?? 'webrtc');
    } },
    { method: 'POST', pattern: /^\/v1\/sessions\/([^/]+)\/browser-transport\/connect$/, handler: ([id]) => async (_req, body) => {
      await sessions.get(id).connectBrowserTransport(validate.connectBrowserTransport(body));
      return { connected: true };
    } },
    { method: 'POST', pattern: /^\/v1\/sessions\/([^/]+)\/produce$/, handler: ([id]) => async (_req, body) => {
      const b = validate.produce(body);
      return sessions.get(id).produce(b.rtpParameters, b.transportId);
    } },
    { method: 'POST', pattern: /^\/v1\/sessions\/([^/]+)\/consume$/, handler: ([id]) => async (_req, body) => {
      const b = validate.consume(body);
      return sessions.get(id).consume(b.rtpCapabilities, b.transportId);
    } },
    { method: 'POST', pattern: /^\/v1\/sessions\/([^/]+)\/consumer\/resume$/, handler: ([id]) => async () => {
      await sessions.get(id).resumeConsumer();
      return { resumed: true };
    } },
    { method: 'POST', pattern: /^\/v1\/sessions\/([^/]+)\/far-end$/, handler: ([id]) => async (_req, body) => {
      validate.attachFarEnd(body);
      return sessions.get(id).attachSandboxFarEnd();
    } },
    { method: 'POST', pattern: /^\/v1\/sessions\/([^/]+)\/carrier-legs$/, handler: ([id]) => async (_req, body) => {
      return sessions.get(id).createCarrierLeg(validate.createCarrierLeg(body).legId);
    } },
    { method: 'POST', pattern: /^\/v1\/sessions\/([^/]+)\/carrier-legs\/([^/]+)\/connect$/, handler: ([id, legId]) => async (_req, body) => {
      await sessions.get(id).connectCarrierLeg(legId, validate.connectCarrierLeg(body));
      return { connected: true };
    } },
    { method: 'DELETE', pattern: /^\/v1\/sessions\/([^/]+)\/carrier-legs\/([^/]+)$/, handler: ([id, legId]) => async () => {
      await sessions.get(id).closeCarrierLeg(legId);
      return { legId, closed: true };
    } },
    { method: 'POST', pattern: /^\/v1\/sessions\/([^/]+)\/bridge$/, handler: ([id]) => async (_req, body) => {
      const { legs } = validate.bridge(body);
      await sessions.get(id).bridge(legs[0], legs[1]);
      return { bridged: true };
    } },
    { method: 'GET', pattern: /^\/v1\/sessions\/([^/]+)\/stats$/, handler: ([id]) => async () => sessions.get(id).stats() },
    { method: 'GET', pattern: /^\/v1\/workers$/, handler: () => async () => ({ processPid: process.pid, instanceId, workers: pool.list() }) satisfies WorkersInfo },
  ];

  const openEventStream = (req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    res.write(JSON.stringify({
      type: 'hello', instanceId, pid: process.pid, sessions: sessions.list().map((s) => s.callId), heartbeatMs: settings.heartbeatMs,
    } satisfies MediaEvent) + '\n');
    streams.add(res);
    req.socket.setNoDelay(true);
    res.once('close', () => streams.delete(res));
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://media');
    if (url.pathname === '/healthz' && req.method === 'GET') {
      send(res, 200, { status: 'ok', proc: 'media', workers: pool.pids.length, sessions: sessions.size });
      return;
    }
    if (o.ops?.(req, res, url.pathname)) return;
    const auth = Buffer.from(req.headers.authorization ?? '');
    if (auth.length !== secret.length || !timingSafeEqual(auth, secret)) {
      sendError(res, new ControlError('unauthorized', 'the media control API needs Authorization: Bearer <MEDIA_CONTROL_SECRET>'));
      req.resume();
      return;
    }
    if (url.pathname === '/v1/events') {
      if (req.method !== 'GET') { sendError(res, new ControlError('method_not_allowed', 'GET only')); return; }
      openEventStream(req, res);
      return;
    }
    let matchedPath = false;
    for (const route of routes) {
      const m = route.pattern.exec(url.pathname);
      if (!m) continue;
      matchedPath = true;
      if (route.method !== req.method) continue;
      const params = m.slice(1).map((p) => decodeURIComponent(p));
      readJson(req).then((body) => route.handler(params)(req, body)).then(
        (result) => send(res, 200, result),
        (err) => {
          const e = asControlError(err);
          if (e.status >= 500) log.error({ err, path: url.pathname }, 'control request failed');
          sendError(res, e);
        },
      );
      return;
    }
    sendError(res, matchedPath
      ? new ControlError('method_not_allowed', `${req.method} is not allowed on ${url.pathname}`)
      : new ControlError('not_found', `no route ${url.pathname}`));
    req.resume();
  });
  server.keepAliveTimeout = 30_000;

  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(o.port, o.host, resolve); });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : o.port;
  const hostInUrl = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    port,
    url: `http://${hostInUrl}:${port}`,
    instanceId,
    close: () => new Promise<void>((resolve) => {
      clearInterval(heartbeat);
      broadcast({ type: 'shutdown' });
      for (const res of streams) res.end();
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/** The request's JSON body (undefined when empty); a body that is not JSON is a 400. */
function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c); // past the limit the rest is read and dropped, then refused
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) { reject(new ControlError('payload_too_large', `the body exceeds ${MAX_BODY_BYTES} bytes`)); return; }
      const text = Buffer.concat(chunks).toString('utf8');
      if (!text.trim()) { resolve(undefined); return; }
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new ControlError('validation_error', 'the body is not valid JSON', { body: 'is not valid JSON' }));
      }
    });
    req.on('error', reject);
  });
}

/** mediasoup rejects bad parameters with TypeError (also for the worker's own checks) and wrong states with
 *  InvalidStateError: both are the caller's mistake, not ours. */
function asControlError(err: unknown): ControlError {
  if (err instanceof ControlError) return err;
  const e = err as Error;
  if (e instanceof TypeError || e?.name === 'TypeError' || e?.name === 'UnsupportedError') {
    return new ControlError('validation_error', e.message, { body: e.message });
  }
  if (e?.name === 'InvalidStateError') return new ControlError('conflict', e.message);
  return new ControlError('internal_error', 'the media process failed to carry out the request');
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

function sendError(res: ServerResponse, e: ControlError): void {
  const body: ControlErrorBody = { error: { code: e.code, message: e.message, ...(e.fields ? { fields: e.fields } : {}) } };
  send(res, e.status, body);
}
