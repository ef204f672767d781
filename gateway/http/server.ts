// The gateway's transport (uWS: listen, read a request, write its answer) and the wiring of its request pipeline:
// each API route's stages are compiled once at registration (shared/http/pipeline.ts) from the plan below, one file
// per stage in stages/. Wire formats live in wire.ts, rate admission in admission.ts.
import uWS from 'uWebSockets.js';
import { ApiError } from '../../shared/http/error-status.ts';
import { readBody, MAX_BODY_BYTES } from '../../shared/http/body.ts';
import { errorReply } from '../../shared/http/error-status.ts';
import { Pipeline, runStages, type StagePlan } from '../../shared/http/pipeline.ts';
import { STATUS_LINE, writeHeaders } from '../../shared/http/uws.ts';
import { IdempotencyStore } from '../../shared/idempotency/idempotency-store.ts';
import { outageReason, STORE_RETRY_AFTER_SECONDS, unreachableStore } from '../../shared/unavailable.ts';
import { listenExclusive } from '../../shared/uws-listen.ts';
import { AccessLog } from './access-log.ts';
import { Admission } from './admission.ts';
import { AuthError, Authenticator } from './auth.ts';
import { CallStreams, type StreamPlan } from './event-stream.ts';
import { pumpFile, StreamSlots, type FilePlan } from './file-response.ts';
import { GatewayMetrics } from './metrics.ts';
import { publicBaseUrl } from './public-url.ts';
import { ResponseCheck } from './response-check.ts';
import { admissionStage } from './stages/admission.ts';
import { authStage } from './stages/auth.ts';
import { broadcastStage } from './stages/broadcast.ts';
import { deprecationStage } from './stages/deprecation.ts';
import { faultStage } from './stages/fault.ts';
import { handlerStage } from './stages/handler.ts';
import { idempotencyRecordStage, idempotencyStage } from './stages/idempotency.ts';
import { scopeStage } from './stages/scope.ts';
import { ApiRequest, MUTATING, type Incoming } from './stages/state.ts';
import { validateStage } from './stages/validate.ts';
import type { AnyRoute, GatewayDeps, Method, Plugin } from './types.ts';
import { serialize } from './wire.ts';

/** What a raw (non-API) route answers: health checks, metrics, documents. */
export interface RawReply { status: number; contentType: string; body: string | Buffer; headers?: Record<string, string> }
export type RawRoute = (req: { headers: Record<string, string>; body: Buffer | null; query: string; readonly remote: string }) => Promise<RawReply> | RawReply;
/** How a raw route answers a failure outside its handler's own answers: a body over MAX_BODY_BYTES (400, "body too
 *  large"), a handler that threw (500, "internal error") or one that could not reach PostgreSQL or Redis (503,
 *  "service unavailable", with Retry-After added). The default is that reason as text/plain. */
export type RawFailure = (status: 400 | 500 | 503, reason: string) => RawReply;
const textFailure: RawFailure = (status, reason) => ({ status, contentType: 'text/plain', body: reason });
interface RawEntry { handler: RawRoute; failure: RawFailure }

/** One request/response pair: what the request said, copied out of uWS, and whether the client went away. */
class Exchange implements Incoming {
  readonly started = performance.now();
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly headers: Record<string, string> = {};
  aborted = false;
  /** Called once when the client goes away (a file stream waiting for the socket to drain uses it). */
  onAbort: (() => void) | null = null;
  private remoteText: string | null = null;

  constructor(readonly res: uWS.HttpResponse, req: uWS.HttpRequest) {
    res.onAborted(() => { this.aborted = true; this.onAbort?.(); });
    const headers = this.headers;
    req.forEach((k, v) => { headers[k] = v; });
    this.method = req.getCaseSensitiveMethod();
    this.path = req.getUrl();
    this.query = req.getQuery() ?? '';
  }

  /** Read on demand, as only requests limited by address need it (reading it costs about as much as the rest of
   *  this constructor). The response, unlike the request, stays valid until it ends or is aborted. */
  get remote(): string {
    if (this.remoteText === null) {
      this.remoteText = this.aborted ? 'aborted' : Buffer.from(this.res.getRemoteAddressAsText()).toString();
    }
    return this.remoteText;
  }
}

/** What the pipeline decided for a request. */
interface Outcome {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
  requestId: string;
  routeLabel: string;
  orgId: string | undefined;
  /** Set when the body is a file to stream instead of `body`. */
  file?: FilePlan;
  /** Set when the answer is an event stream kept open instead of `body`. */
  stream?: StreamPlan;
}

export class HttpGateway {
  readonly metrics = new GatewayMetrics();
  private readonly accessLog: AccessLog;
  readonly auth: Authenticator;
  /** The API routes and their compiled stage lists. */
  readonly pipeline: Pipeline<AnyRoute, ApiRequest>;
  /** Raw routes by path, then method. */
  private readonly raw = new Map<string, Map<string, RawEntry>>();
  /** Body limits of upload routes ("METHOD /path", static paths), instead of MAX_BODY_BYTES. */
  private readonly bodyLimits = new Map<string, number>();
  private readonly rawPrefixes: { prefix: string; handler: (req: Parameters<RawRoute>[0], path: string) => ReturnType<RawRoute> }[] = [];
  private readonly admission: Admission;
  /** RESPONSE_SCHEMA_CHECK=1 (tests): every answer checked against its route's declared responses. */
  private readonly responseCheck: ResponseCheck | null;
  /** Recording downloads in flight on this gateway (RECORDING_STREAMS_MAX). */
  readonly fileStreams: StreamSlots;
  /** Call event streams open on this gateway (GET /v1/calls/stream). */
  readonly callStreams: CallStreams;
  private listenSocket: uWS.us_listen_socket | null = null;
  private listenPort = 0;
  private app: uWS.TemplatedApp | null = null;

  constructor(readonly deps: GatewayDeps) {
    this.auth = new Authenticator(deps.db, deps.key, deps.tokenKeys, deps.config.console.sessionIdleMs);
    this.admission = new Admission(deps.redis, deps.key);
    this.accessLog = new AccessLog(deps.log);
    this.fileStreams = new StreamSlots(deps.config.recordingStreamsMax);
    this.callStreams = new CallStreams(deps, deps.config.callStreamsPerOrganization, deps.config.callStreamHeartbeatMs);
    // A revoked key, a signed-out session or a removed member's sessions end their call streams too.
    this.auth.onRevoked((subject) => this.callStreams.revoked(subject));
    const idempotency = new IdempotencyStore(deps.redis, deps.key, deps.db, deps.config.idempotencyLeaseMs);
    // The stage plan, in request order; each route keeps only the stages it needs (see each stage's file).
    const plan: StagePlan<AnyRoute, ApiRequest>[] = [
      authStage(this.auth, this.admission), // scope routes: credential (cached without a promise)
      admissionStage(this.admission), //       scope routes: per-key rate limit
      scopeStage, //                           scope routes: the credential holds the route's scope
      validateStage, //                        every route: query, path, body
      idempotencyStage(idempotency), //        mutating scope routes: claim the key, or replay
      handlerStage(this), //                   every route
      faultStage(deps.config.faults), //       tests only: die after commit
      idempotencyRecordStage, //               mutating scope routes: record the answer
      broadcastStage(deps), //                 mutating scope routes, changesAccount routes
      deprecationStage, //                     deprecated routes
    ];
    this.pipeline = new Pipeline(plan);
    this.responseCheck = deps.config.faults.responseSchemaCheck ? new ResponseCheck(deps.log) : null;
  }

  /** The API routes (the OpenAPI document is built from them). */
  get router() { return this.pipeline.router; }

  /** `subEntityScoped`: the area's routes narrow to a credential limited to a sub-entity (unless a route says otherwise). */
  register(plugin: Plugin, o: { subEntityScoped?: boolean } = {}): this {
    plugin({ add: (r) => {
      r.subEntities ??= o.subEntityScoped ? 'scoped' : 'organization';
      this.pipeline.add(r as AnyRoute);
      this.responseCheck?.add(r as AnyRoute);
      if (r.upload) {
        if (r.path.includes('{')) throw new Error(`upload route ${r.method} ${r.path}: only static paths may raise the body limit`);
        this.bodyLimits.set(`${r.method} ${r.path}`, r.upload.maxBodyBytes(this.deps.config));
      }
    } });
    return this;
  }

  /** A raw GET route for every path under `prefix` (a path ending in '/') that no exact raw route or API route
   *  answers first among raw routes; the handler gets the request's path (the console's pages and assets). */
  addRawPrefix(prefix: string, handler: (req: Parameters<RawRoute>[0], path: string) => ReturnType<RawRoute>): this {
    this.rawPrefixes.push({ prefix, handler });
    return this;
  }

  addRaw(method: Method, path: string, handler: RawRoute, o: { failure?: RawFailure } = {}): this {
    let byMethod = this.raw.get(path);
    if (!byMethod) this.raw.set(path, (byMethod = new Map()));
    byMethod.set(method, { handler, failure: o.failure ?? textFailure });
    return this;
  }
  async listen(port: number, host: string): Promise<number> {
    await this.auth.listen(this.deps.redis, this.deps.log);
    this.app = uWS.App().any('/*', (res, req) => this.onRequest(res, req));
    this.listenSocket = await listenExclusive(this.app, host, port);
    this.listenPort = uWS.us_socket_local_port(this.listenSocket);
    return this.listenPort;
  }

  async close(): Promise<void> {
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    await this.callStreams.stop();
    this.accessLog.flush();
    await this.auth.close();
  }

  private prefixRaw(inc: Incoming): RawEntry | undefined {
    if (inc.method !== 'GET') return undefined;
    const p = this.rawPrefixes.find((x) => inc.path.startsWith(x.prefix));
    return p ? { handler: (req) => p.handler(req, inc.path), failure: textFailure } : undefined;
  }

  private onRequest(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    // Everything uWS hands out here is valid only during this call, so it is copied before anything awaits.
    const ex = new Exchange(res, req);
    const inc: Incoming = ex;
    const needsBody = MUTATING.has(inc.method);
    const raw = this.raw.get(inc.path)?.get(inc.method) ?? this.prefixRaw(inc);
    if (raw) {
      if (!needsBody) return void this.serveRaw(ex, raw, null);
      return readBody(res, inc.headers['content-length'], MAX_BODY_BYTES, (body, tooBig) => {
        if (tooBig) return void this.serveRaw(ex, { ...raw, handler: () => raw.failure(400, 'body too large') }, null);
        void this.serveRaw(ex, raw, body);
      });
    }
    if (!needsBody) return this.handle(ex, new ApiRequest(inc, null, false));
    // An upload route's larger limit only for a request that presents a credential: an anonymous one (refused 401 after
    // its body) never makes the gateway hold more than MAX_BODY_BYTES.
    const credential = inc.headers.authorization !== undefined || inc.headers.cookie !== undefined;
    const limit = this.bodyLimits.size && credential ? this.bodyLimits.get(`${inc.method} ${inc.path}`) ?? MAX_BODY_BYTES : MAX_BODY_BYTES;
    readBody(res, inc.headers['content-length'], limit, (body, tooBig) => this.handle(ex, new ApiRequest(inc, body, tooBig)));
  }

  private respond(ex: Exchange, out: Outcome): void {
    if (out.file && ex.aborted) out.file.release();
    if (out.stream && ex.aborted) out.stream.cancel();
    if (!ex.aborted) {
      const res = ex.res;
      res.cork(() => {
        res.writeStatus(STATUS_LINE[out.status] ?? `${out.status} `);
        writeHeaders(res, out.headers, this.deps.log);
        if (out.stream) out.stream.start(ex);
        else if (!out.file) res.end(out.body);
      });
      if (out.file) void pumpFile(ex, out.file, this.deps.log);
    }
    const secs = (performance.now() - ex.started) / 1000;
    this.metrics.observe(ex.method, out.routeLabel, out.status, secs);
    this.accessLog.write({ requestId: out.requestId, method: ex.method, path: ex.path, status: out.status,
      ms: Math.round(secs * 1e4) / 10, orgId: out.orgId });
  }

  private async serveRaw(ex: Exchange, raw: RawEntry, body: Buffer | null) {
    let out: RawReply;
    try {
      out = await raw.handler({ headers: ex.headers, body, query: ex.query, get remote() { return ex.remote; } });
    } catch (err) {
      const store = unreachableStore(err);
      if (store) {
        this.deps.log.warn({ store, reason: outageReason(err), path: ex.path }, 'store unreachable');
        const failed = raw.failure(503, 'service unavailable');
        out = { ...failed, headers: { ...failed.headers, 'Retry-After': String(STORE_RETRY_AFTER_SECONDS) } };
      } else {
        this.deps.log.error({ err, path: ex.path }, 'raw route failed');
        out = raw.failure(500, 'internal error');
      }
    }
    if (ex.aborted) return;
    const res = ex.res;
    res.cork(() => {
      res.writeStatus(STATUS_LINE[out.status] ?? `${out.status} `);
      writeHeaders(res, { 'content-type': out.contentType, ...out.headers }, this.deps.log);
      // A 304 carries no body and no Content-Length of its own (the cached representation's length stands).
      if (out.status === 304) res.endWithoutBody();
      else res.end(out.body);
    });
  }

  /** PUBLIC_URL, else the listen address; never anything from a request (see public-url.ts). */
  get baseUrl(): string {
    return publicBaseUrl(this.deps.config, this.listenPort);
  }

  /** Runs a request through its route's compiled stages (synchronously as far as they go), then answers it. */
  private handle(ex: Exchange, x: ApiRequest): void {
    let pending: void | Promise<void>;
    try {
      pending = this.enter(x);
    } catch (err) {
      return this.respond(ex, this.settle(x, err));
    }
    if (pending === undefined) return this.respond(ex, this.settle(x, null));
    pending.then(() => this.respond(ex, this.settle(x, null)), (err) => this.respond(ex, this.settle(x, err)));
  }

  /** Matches the route and starts its stages. Unknown paths and methods are requests too: counted (against the key
   *  when one is valid), so that these answers carry the rate-limit headers like every other. */
  private enter(x: ApiRequest): void | Promise<void> {
    const { inc } = x;
    const match = this.pipeline.match(inc.method, inc.path);
    if (!match || 'allowed' in match) {
      return this.admission.unrouted(this.auth, inc.headers.authorization, () => inc.remote, x.headers).then((principal) => {
        x.principal = principal;
        if (!match) throw new ApiError('not_found', `No endpoint ${inc.method} ${inc.path}.`);
        x.headers.Allow = match.allowed.join(', ');
        throw new ApiError('method_not_allowed', `${inc.method} is not allowed on ${inc.path}; use ${match.allowed.join(' or ')}.`);
      });
    }
    x.route = match.route;
    x.params = match.params;
    x.undecodable = match.undecodable;
    return runStages(this.pipeline.stagesOf(match.route), x);
  }

  /** The answer of a request whose stages ended (err: what one threw). The one point every answer of the API passes
   *  before it is written (the test-only response check belongs here). */
  private settle(x: ApiRequest, err: unknown): Outcome {
    const headers = x.headers;
    let status: number;
    let body: string | Buffer;
    let file = x.file;
    let stream = x.stream;
    if (err === null) {
      const reply = x.reply!;
      Object.assign(headers, reply.headers);
      status = reply.status;
      body = reply.body;
      if (file) {
        Object.assign(headers, file.headers);
        status = file.status;
      }
    } else {
      file?.release();
      file = undefined;
      stream?.cancel();
      stream = undefined;
      const r = serialize(errorReply(err, this.deps.log, x.requestId));
      if (err instanceof AuthError) headers['WWW-Authenticate'] = err.wwwAuthenticate(this.baseUrl);
      Object.assign(headers, r.headers);
      status = r.status;
      body = r.body;
    }
    const wrong = this.responseCheck && !file && !stream ? this.responseCheck.check(x.route ?? null, { status, headers, body }, x.requestId) : null;
    if (wrong) ({ status, body } = wrong);
    if (status === 204) delete headers['content-type'];
    return { status, headers, body, requestId: x.requestId, routeLabel: x.route?.path ?? 'unmatched', orgId: x.principal?.organizationId, file, stream };
  }
}
