// The gateway's transport (uWS: listen, read a request, write its answer) and its request pipeline (match, body,
// authenticate, admit, scope, validate, idempotency, handler). Wire formats live in wire.ts, rate admission in
// admission.ts.
import uWS from 'uWebSockets.js';
import type { Principal } from '../../shared/accounts/principal.ts';
import { announceAccountChange, forgetAccount } from '../../shared/accounts/snapshot.ts';
import { ApiError } from '../../shared/errors.ts';
import type { Tx, WithinTx } from '../../shared/db.ts';
import { canonicalJson, IdempotencyRecordExists, IdempotencyStore, type NewClaim, type StoredResponse } from '../../shared/idempotency/idempotency-store.ts';
import { newRequestId, sha256hex } from '../../shared/ids.ts';
import { outageReason, STORE_RETRY_AFTER_SECONDS, unreachableStore } from '../../shared/unavailable.ts';
import { listenExclusive } from '../../shared/uws-listen.ts';
import { AccessLog } from './access-log.ts';
import { Admission } from './admission.ts';
import { AuthError, Authenticator, requireScope } from './auth.ts';
import { planFile, pumpFile, StreamSlots, type FilePlan } from './file-response.ts';
import { GatewayMetrics } from './metrics.ts';
import { publicBaseUrl } from './public-url.ts';
import { assertCleanText } from './request-guards.ts';
import { Router } from './router.ts';
import type { AnyRoute, GatewayDeps, Method, Plugin, Reply } from './types.ts';
import { compileValidator } from './validation.ts';
import {
  assertEmpty, deprecationHeaders, errorReply, parseBody, parseQuery, readBody, serialize, STATUS_LINE, writeHeaders,
} from './wire.ts';

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

interface Compiled {
  route: AnyRoute;
  body?: (v: unknown) => void;
  query?: (v: unknown) => void;
  params?: (v: unknown) => void;
}

/** What a raw (non-API) route answers: health checks, metrics, documents. */
export interface RawReply { status: number; contentType: string; body: string | Buffer; headers?: Record<string, string> }
export type RawRoute = (req: { headers: Record<string, string>; body: Buffer | null; query: string; readonly remote: string }) => Promise<RawReply> | RawReply;
/** How a raw route answers a failure outside its handler's own answers: a body over MAX_BODY_BYTES (400, "body too
 *  large"), a handler that threw (500, "internal error") or one that could not reach PostgreSQL or Redis (503,
 *  "service unavailable", with Retry-After added). The default is that reason as text/plain. */
export type RawFailure = (status: 400 | 500 | 503, reason: string) => RawReply;
const textFailure: RawFailure = (status, reason) => ({ status, contentType: 'text/plain', body: reason });
interface RawEntry { handler: RawRoute; failure: RawFailure }

interface Incoming {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  /** The client address, read on demand (only unauthenticated requests are limited by it). */
  readonly remote: string;
}

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
}

export class HttpGateway {
  readonly router = new Router();
  readonly metrics = new GatewayMetrics();
  private readonly accessLog: AccessLog;
  readonly auth: Authenticator;
  private readonly compiled = new Map<AnyRoute, Compiled>();
  /** Raw routes by path, then method. */
  private readonly raw = new Map<string, Map<string, RawEntry>>();
  private readonly admission: Admission;
  private readonly idempotency: IdempotencyStore;
  /** Recording downloads in flight on this gateway (RECORDING_STREAMS_MAX). */
  readonly fileStreams: StreamSlots;
  private listenSocket: uWS.us_listen_socket | null = null;
  private listenPort = 0;
  private app: uWS.TemplatedApp | null = null;

  constructor(readonly deps: GatewayDeps) {
    this.auth = new Authenticator(deps.db, deps.key, deps.config);
    this.admission = new Admission(deps.redis, deps.key);
    this.idempotency = new IdempotencyStore(deps.redis, deps.key, deps.db, deps.config.idempotencyLeaseMs);
    this.accessLog = new AccessLog(deps.log);
    this.fileStreams = new StreamSlots(deps.config.recordingStreamsMax);
  }

  register(plugin: Plugin): this {
    plugin({ add: (r) => this.addRoute(r as AnyRoute) });
    return this;
  }

  addRaw(method: Method, path: string, handler: RawRoute, o: { failure?: RawFailure } = {}): this {
    let byMethod = this.raw.get(path);
    if (!byMethod) this.raw.set(path, (byMethod = new Map()));
    byMethod.set(method, { handler, failure: o.failure ?? textFailure });
    return this;
  }

  private addRoute(route: AnyRoute): void {
    this.router.add(route);
    this.compiled.set(route, {
      route,
      body: route.body ? compileValidator(route.body, 'body') : undefined,
      query: route.query ? compileValidator(route.query, 'query') : undefined,
      params: route.params ? compileValidator(route.params, 'params') : undefined,
    });
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
    this.accessLog.flush();
    await this.auth.close();
  }

  private onRequest(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    // Everything uWS hands out here is valid only during this call, so it is copied before anything awaits.
    const ex = new Exchange(res, req);
    const inc: Incoming = ex;
    const needsBody = MUTATING.has(inc.method);
    const raw = this.raw.get(inc.path)?.get(inc.method);
    if (raw) {
      if (!needsBody) return void this.serveRaw(ex, raw, null);
      return readBody(res, inc.headers, (body, tooBig) => {
        if (tooBig) return void this.serveRaw(ex, { ...raw, handler: () => raw.failure(400, 'body too large') }, null);
        void this.serveRaw(ex, raw, body);
      });
    }
    if (!needsBody) return void this.handle(inc, null, false).then((out) => this.respond(ex, out));
    readBody(res, inc.headers, (body, tooBig) => void this.handle(inc, body, tooBig).then((out) => this.respond(ex, out)));
  }

  private respond(ex: Exchange, out: Outcome): void {
    if (out.file && ex.aborted) out.file.release();
    if (!ex.aborted) {
      const res = ex.res;
      res.cork(() => {
        res.writeStatus(STATUS_LINE[out.status] ?? `${out.status} `);
        writeHeaders(res, out.headers, this.deps.log);
        if (!out.file) res.end(out.body);
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

  /** The request pipeline: match, body, authenticate, rate-limit, scope, validate, idempotency, handler. */
  private async handle(inc: Incoming, rawBody: Buffer | null, tooBig: boolean) {
    const requestId = newRequestId();
    const headers: Record<string, string> = { 'X-Request-Id': requestId, 'content-type': 'application/json' };
    let routeLabel = 'unmatched';
    let principal: Principal | null = null;
    let status = 500;
    let body: string | Buffer = '';
    let file: FilePlan | undefined;
    try {
      const match = this.router.match(inc.method, inc.path);
      // Unknown paths and methods are requests too: counted (against the key when one is valid), so that these
      // answers carry the rate-limit headers like every other.
      if (!match || 'allowed' in match) {
        principal = await this.admission.unrouted(this.auth, inc.headers.authorization, () => inc.remote, headers);
      }
      if (!match) throw new ApiError('not_found', `No endpoint ${inc.method} ${inc.path}.`);
      if ('allowed' in match) {
        headers.Allow = match.allowed.join(', ');
        throw new ApiError('method_not_allowed', `${inc.method} is not allowed on ${inc.path}; use ${match.allowed.join(' or ')}.`);
      }
      const { route } = match;
      const c = this.compiled.get(route)!;
      routeLabel = route.path;

      // Authenticate and count the request before anything else can fail, so every answer carries rate headers.
      if (route.scope) {
        principal = this.auth.cached(inc.headers.authorization) ?? null;
        if (!principal) {
          try {
            principal = await this.auth.authenticate(inc.headers.authorization);
          } catch (err) {
            await this.admission.anonymous(inc.remote, headers);
            throw err;
          }
        }
        const admitted = this.admission.credential(principal, headers);
        if (admitted) await admitted;
        requireScope(principal, route.scope);
      }

      const query = parseQuery(inc.query);
      const params = match.params;
      const parsedBody = parseBody(inc, rawBody, tooBig, !!c.body);
      // One pass for rules that hold for every route (undecodable path ids, NUL anywhere), before the schemas.
      assertCleanText(inc.query, query, params, match.undecodable, rawBody, parsedBody);
      c.query ? c.query(query) : assertEmpty(query, 'query');
      c.params?.(params);
      if (c.body) c.body(parsedBody);

      const ctx = new HandlerContext(this, principal!, parsedBody, query, params, requestId, inc.headers, inc);
      let reply: StoredResponse;
      const idemKey = inc.headers['idempotency-key'];
      if (idemKey !== undefined && MUTATING.has(inc.method) && principal) {
        IdempotencyStore.validateKey(idemKey);
        const fingerprint = sha256hex(`${inc.method} ${inc.path}?${inc.query}\n${canonicalJson(parsedBody ?? null)}`);
        const claim = await this.idempotency.claim(principal.credentialId ?? principal.keyId, idemKey, fingerprint, requestId);
        if (claim.kind === 'replay') {
          reply = claim.response;
          headers['Idempotency-Replay'] = 'true';
        } else {
          ctx.claim = claim;
          let lost = false;
          try {
            // What the handler recorded with its effect is what every replay will send: send exactly that now too.
            const r = serialize(await route.handler(ctx));
            reply = r.status < 300 && claim.recorded ? claim.recorded : r;
          } catch (err) {
            // Another attempt with this key committed first: this one rolled back; answer with the winner's response.
            if (err instanceof IdempotencyRecordExists) {
              reply = await claim.replayCommitted(); lost = true; headers['Idempotency-Replay'] = 'true';
            } else {
              reply = serialize(errorReply(err, this.deps.log, requestId));
              // A 409 can be the effect of a racing twin (same key and request) that committed first: replay it.
              const twin = reply.status === 409 ? await claim.committedTwin() : null;
              if (twin) { reply = twin; lost = true; headers['Idempotency-Replay'] = 'true'; }
            }
          }
          if (this.deps.config.faults.gateway === 'kill-after-commit' && reply.status < 300) process.kill(process.pid, 'SIGKILL');
          if (!lost) await claim.finish(reply);
        }
      } else {
        const r = await route.handler(ctx);
        if (r.file) file = planFile(r.file, inc.headers.range, this.fileStreams);
        reply = serialize(r);
      }
      // This gateway's own writes show in the organization's account snapshot on the very next request, without
      // waiting for the database's change notice; a footprint change, on every gateway's.
      if (principal && route.changesAccount && reply.status < 300) {
        await announceAccountChange(this.deps.db, this.deps.redis, this.deps.key, principal.organizationId);
      } else if (principal && MUTATING.has(inc.method)) forgetAccount(this.deps.db, principal.organizationId);
      if (route.deprecated) Object.assign(headers, deprecationHeaders(route.deprecated));
      Object.assign(headers, reply.headers);
      status = reply.status;
      body = reply.body;
      if (file) {
        Object.assign(headers, file.headers);
        status = file.status;
      }
    } catch (err) {
      file?.release();
      file = undefined;
      const r = serialize(errorReply(err, this.deps.log, requestId));
      if (err instanceof AuthError) headers['WWW-Authenticate'] = err.wwwAuthenticate(this.baseUrl);
      Object.assign(headers, r.headers);
      status = r.status;
      body = r.body;
    }
    if (status === 204) delete headers['content-type'];
    return { status, headers, body, requestId, routeLabel, orgId: principal?.organizationId, file };
  }
}

/** What a route handler gets (Ctx); the base URL is worked out only for handlers that read it. */
class HandlerContext {
  readonly deps: GatewayDeps;
  constructor(private readonly gateway: HttpGateway, readonly principal: Principal, readonly body: unknown,
    readonly query: Record<string, string>, readonly params: Record<string, string>, readonly requestId: string,
    readonly headers: Record<string, string>, private readonly incoming: { readonly remote: string }) {
    this.deps = gateway.deps;
  }

  get clientAddress(): string { return this.incoming.remote; }

  /** The idempotency claim of this request, when it carries an Idempotency-Key and runs for the first time. */
  claim: NewClaim | null = null;

  /** See Ctx.idempotent. */
  idempotent<T>(reply: (result: T) => Reply): WithinTx<T> | undefined {
    const claim = this.claim;
    if (!claim) return undefined;
    return (tx: Tx, result: T) => claim.recordInTx(tx, serialize(reply(result)));
  }

  get baseUrl(): string { return this.gateway.baseUrl; }
}

