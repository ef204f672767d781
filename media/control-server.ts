// The media control API (shared/media/protocol.ts): JSON over HTTP on MEDIA_PORT, beside /healthz, /readyz and /metrics. Every /v1
// request needs the bearer secret. GET /v1/events is the long-lived stream signaling holds open: session endings,
// worker replacements and a heartbeat; when it breaks without a `shutdown` line, the media process is gone and
// every session with it.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readNodeBody } from '../shared/http/body.ts';
import { errorBody } from '../shared/http/envelope.ts';
import { json, metricsTokenStage, type OpsRoute, type PlainAnswer } from '../shared/http/ops.ts';
import { Pipeline, runStages, type StagePlan } from '../shared/http/pipeline.ts';
import type { Logger } from '../shared/log.ts';
import {
  AttachFarEndRequest, BridgeRequest, ConnectBrowserTransportRequest, ConnectCarrierLegRequest, ConsumeRequest,
  CreateBrowserTransportRequest, CreateCarrierLegRequest, CreateSessionRequest, ProduceRequest,
  type DrainStarted, type MediaEvent, type SessionCreated, type WorkersInfo,
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
  /** /readyz and /metrics (media/metrics.ts), served without the control secret. */
  ops?: OpsRoute[];
}

export interface RunningControlServer {
  port: number;
  url: string;
  instanceId: string;
  /** Tells every event stream `shutdown`, then stops listening. */
  close(): Promise<void>;
}

/** A route of the control API (or one of its open operations routes). */
interface ControlRoute {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  /** Served without the control secret (/healthz, /readyz, /metrics). */
  open?: boolean;
  /** METRICS_TOKEN on /metrics. */
  metricsToken?: string | null;
  /** The event stream: answers by writing the response itself, reads no body. */
  stream?: boolean;
  /** JSON routes answer 200 with the result; open routes answer PlainAnswer. */
  handle(x: ControlRequest): Promise<unknown> | void;
}

/** One control request through its stages. */
interface ControlRequest {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  authorization: string | undefined;
  body: unknown;
  /** Set by a stage that answered (an open route, the metrics token). */
  answer: PlainAnswer | null;
}

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
  const heartbeat = setInterval(() => broadcast({ type: 'heartbeat', at: new Date().toISOString(), sessions: sessions.size, draining: sessions.draining }), settings.heartbeatMs);

  const json200 = (path: string, method: ControlRoute['method'], handle: (x: ControlRequest) => Promise<unknown>): ControlRoute =>
    ({ method, path, handle });
  const routes: ControlRoute[] = [
    json200('/v1/sessions', 'POST', async ({ body }) => {
      const b = validate.createSession(body);
      const { session, created } = await sessions.create(b.callId, b.maxDurationMs, b.carrier, b.record);
      return { callId: session.callId, created, routerId: session.routerId, workerPid: session.workerPid, rtpCapabilities: session.rtpCapabilities } satisfies SessionCreated;
    }),
    json200('/v1/sessions', 'GET', async () => ({ sessions: sessions.list().map((s) => s.summary()) })),
    json200('/v1/sessions/{id}', 'GET', async ({ params }) => sessions.get(params.id).summary()),
    json200('/v1/sessions/{id}', 'DELETE', async ({ params: { id } }) => {
      sessions.get(id).close('requested');
      return { callId: id, closed: true };
    }),
    json200('/v1/sessions/{id}/browser-transport', 'POST', async ({ params, body }) => {
      const b = validate.createBrowserTransport(body ?? {});
      return sessions.get(params.id).createBrowserTransport(b.type ?? 'webrtc');
    }),
    json200('/v1/sessions/{id}/browser-transport/connect', 'POST', async ({ params, body }) => {
      await sessions.get(params.id).connectBrowserTransport(validate.connectBrowserTransport(body));
      return { connected: true };
    }),
    json200('/v1/sessions/{id}/produce', 'POST', async ({ params, body }) => {
      const b = validate.produce(body);
      return sessions.get(params.id).produce(b.rtpParameters, b.transportId);
    }),
    json200('/v1/sessions/{id}/consume', 'POST', async ({ params, body }) => {
      const b = validate.consume(body);
      return sessions.get(params.id).consume(b.rtpCapabilities, b.transportId);
    }),
    json200('/v1/sessions/{id}/consumer/resume', 'POST', async ({ params }) => {
      await sessions.get(params.id).resumeConsumer();
      return { resumed: true };
    }),
    json200('/v1/sessions/{id}/far-end', 'POST', async ({ params, body }) => {
      validate.attachFarEnd(body);
      return sessions.get(params.id).attachSandboxFarEnd();
    }),
    json200('/v1/sessions/{id}/carrier-legs', 'POST', async ({ params, body }) =>
      sessions.get(params.id).createCarrierLeg(validate.createCarrierLeg(body).legId)),
    json200('/v1/sessions/{id}/carrier-legs/{legId}/connect', 'POST', async ({ params, body }) => {
      await sessions.get(params.id).connectCarrierLeg(params.legId, validate.connectCarrierLeg(body));
      return { connected: true };
    }),
    json200('/v1/sessions/{id}/carrier-legs/{legId}', 'DELETE', async ({ params: { id, legId } }) => {
      await sessions.get(id).closeCarrierLeg(legId);
      return { legId, closed: true };
    }),
    json200('/v1/sessions/{id}/bridge', 'POST', async ({ params, body }) => {
      const { legs } = validate.bridge(body);
      await sessions.get(params.id).bridge(legs[0], legs[1]);
      return { bridged: true };
    }),
    json200('/v1/sessions/{id}/stats', 'GET', async ({ params }) => sessions.get(params.id).stats()),
    // A rolling restart: no new sessions from now on; the process exits by itself once the last one closed (media/start.ts).
    json200('/v1/drain', 'POST', async () => {
      sessions.drain();
      return { draining: true, sessions: sessions.size } satisfies DrainStarted;
    }),
    json200('/v1/workers', 'GET', async () => ({ processPid: process.pid, instanceId, workers: pool.list() }) satisfies WorkersInfo),
    { method: 'GET', path: '/v1/events', stream: true, handle: ({ req, res }) => openEventStream(req, res) },
    { method: 'GET', path: '/healthz', open: true,
      handle: async (x) => { x.answer = json(200, { status: 'ok', proc: 'media', workers: pool.pids.length, sessions: sessions.size }); } },
    ...(o.ops ?? []).map((r): ControlRoute => ({ method: r.method, path: r.path, open: true, metricsToken: r.metricsToken,
      handle: async (x) => { x.answer = await r.answer(); } })),
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

  // The stages, compiled per route: the control secret (not on open routes), the metrics token (/metrics), the
  // JSON body (routes that take one), the handler.
  const secretStage: StagePlan<ControlRoute, ControlRequest> = (route) => (route.open ? undefined : {
    name: 'control-secret',
    run(x) { checkSecret(x.authorization); },
  });
  const bodyStage: StagePlan<ControlRoute, ControlRequest> = (route) => (route.open || route.stream ? undefined : {
    name: 'body',
    run: (x) => readNodeBody(x.req, MAX_BODY_BYTES).then(({ body, tooBig }) => { x.body = parseJson(body, tooBig); }),
  });
  const handlerStage: StagePlan<ControlRoute, ControlRequest> = (route) => ({
    name: 'handler',
    run(x) {
      if (x.answer) return;
      const pending = route.handle(x);
      if (!route.open && pending) return pending.then((result) => { x.answer = json(200, result); });
      return pending as Promise<void> | void;
    },
  });
  const pipeline = new Pipeline<ControlRoute, ControlRequest>([secretStage, metricsTokenStage, bodyStage, handlerStage]);
  for (const r of routes) pipeline.add(r);

  const checkSecret = (authorization: string | undefined) => {
    const auth = Buffer.from(authorization ?? '');
    if (auth.length !== secret.length || !timingSafeEqual(auth, secret)) {
      throw new ControlError('unauthorized', 'the media control API needs Authorization: Bearer <MEDIA_CONTROL_SECRET>');
    }
  };

  const fail = (x: ControlRequest, err: unknown, path: string) => {
    x.req.resume(); // a body nobody reads is drained, so the connection stays usable
    const e = asControlError(err);
    if (e.status >= 500) log.error({ err, path }, 'control request failed');
    send(x.res, json(e.status, errorBody(e)), e.headers);
  };

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://media').pathname;
    const x: ControlRequest = { req, res, params: {}, authorization: req.headers.authorization, body: undefined, answer: null };
    const match = pipeline.match(req.method ?? 'GET', path);
    if (!match || 'allowed' in match) {
      // The secret first: without it nothing about the API's paths is told.
      try {
        checkSecret(x.authorization);
      } catch (err) {
        return fail(x, err, path);
      }
      return fail(x, match
        ? new ControlError('method_not_allowed', `${req.method} is not allowed on ${path}`, undefined, { Allow: match.allowed.join(', ') })
        : new ControlError('not_found', `no route ${path}`), path);
    }
    x.params = match.params;
    const done = () => { if (x.answer) send(res, x.answer); };
    let pending: void | Promise<void>;
    try {
      pending = runStages(pipeline.stagesOf(match.route), x);
    } catch (err) {
      return fail(x, err, path);
    }
    if (pending) pending.then(done, (err) => fail(x, err, path));
    else done();
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

/** The request's JSON body (undefined when empty); a body that is not JSON is a 400, one over the limit a 413. */
function parseJson(body: Buffer | null, tooBig: boolean): unknown {
  if (tooBig) throw new ControlError('payload_too_large', `the body exceeds ${MAX_BODY_BYTES} bytes`);
  const text = body ? body.toString('utf8') : '';
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ControlError('validation_error', 'the body is not valid JSON', { body: 'is not valid JSON' });
  }
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

function send(res: ServerResponse, a: PlainAnswer, extra?: Record<string, string>): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(a.status, { ...a.headers, ...extra, 'content-length': Buffer.byteLength(a.body) }).end(a.body);
}
