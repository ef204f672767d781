import type { AccountReader } from '../../shared/accounts/snapshot.ts';
import type { Mailer } from '../../shared/mail/mailer.ts';
import type { FixedWindowLimiter } from '../../shared/ratelimit/fixed-window-limiter.ts';
import type { CallRuntime } from '../../shared/calls/runtime.ts';
import type { ReputationProvider } from '../../shared/caller-trust/reputation/provider.ts';
import type { ProcessDeps } from '../../shared/process.ts';
import type { Static, TSchema } from '@sinclair/typebox';
import type { Principal } from '../../shared/accounts/principal.ts';
import type { Clock } from '../../shared/clock.ts';
import type { WithinTx } from '../../shared/db.ts';
import type { ErrorCode } from '../../shared/errors.ts';
import type { Cursors } from '../../shared/pagination.ts';
import type { Config } from '../../shared/config.ts';
import type { DocumentStorage } from '../../shared/documents/storage.ts';
import type { Scope } from '../../shared/scopes.ts';

/** A route's scope: one scope, or a list of which the credential must hold at least one (any-of). */
export type RouteScope = Scope | readonly Scope[];

/** A file part of a multipart/form-data body. */
export interface UploadedFile { filename: string | null; contentType: string | null; data: Buffer }

/** A route that also accepts its body as multipart/form-data (uploads). */
export interface UploadSpec {
  /** The largest body read for this route (the gateway's 1 MiB otherwise), from the process's settings. */
  maxBodyBytes(config: Config): number;
  /** The form's fields for the OpenAPI document (file parts: type string, format binary). */
  form: TSchema;
  /** A description of the form for the reference. */
  formDescription?: string;
  /** OpenAPI encoding of the form's parts (e.g. the content types a file part may have). */
  encoding?: Record<string, { contentType: string }>;
  /** An example of the form's text fields. */
  formExample?: unknown;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The standard methods a client may send. uWS accepts any token as a method; the rest are logged escaped and
 *  share one metrics label. */
export const STANDARD_METHODS: ReadonlySet<string> = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);

/** What every route handler can reach: the process's shared resources. */
export interface GatewayDeps extends ProcessDeps {
  clock: Clock;
  cursors: Cursors;
  /** The process's call runtime (no carrier: carrier work goes to the workers' queues). */
  calls: CallRuntime;
  /** The process's number-reputation provider (shared/caller-trust/reputation/settings.ts). */
  reputation: ReputationProvider;
  /** What this gateway keeps of accounts (GET /v1/account, /v1/me), kept in step by watchAccountChanges. */
  accounts: AccountReader;
  /** How invitations and password resets are sent (shared/mail/mailer.ts). */
  mailer: Mailer;
  /** Password-reset requests per email and per address, counted in Redis across gateways (hourly windows). */
  passwordResets: FixedWindowLimiter;
  /** Where documents' bytes are kept (DOCUMENTS_DIR on local disk; shared/documents/storage.ts). */
  documents: DocumentStorage;
}

export interface Deprecation {
  /** When the route was deprecated (Deprecation header). */
  since: Date;
  /** When it stops working (Sunset header). */
  sunset: Date;
  /** Where to read about it (Link rel="sunset"). */
  link: string;
}

import type { CallStreamSpec } from './event-stream.ts';

/** What a handler returns to send a file: Reply.file. */
export interface FileBody { path: string; size: number }

export interface Reply<B = unknown> {
  status: number;
  /** Sent as JSON; typed from the route's response schema where the route declares one. */
  body?: B;
  /** Sent as is instead of JSON (set content-type in headers); for GET routes such as recordings. */
  raw?: Buffer;
  /** A file sent from disk (GET only): the pipeline answers Range requests and streams it (file-response.ts). */
  file?: FileBody;
  /** An event stream of the organization's call changes (text/event-stream), kept open (event-stream.ts). */
  stream?: CallStreamSpec;
  /** The JSON body, already serialized (for bodies a route keeps ready to send). */
  json?: string | Buffer;
  headers?: Record<string, string>;
  /** Marks this response deprecated (a deprecated spelling inside a live route): Deprecation, Sunset, Link. */
  deprecation?: Deprecation;
}

type StaticOr<S, D> = S extends TSchema ? Static<S> : D;

export interface Ctx<B, Q, P> {
  deps: GatewayDeps;
  principal: Principal;
  body: B;
  query: Q;
  params: P;
  requestId: string;
  headers: Record<string, string>;
  /** The file parts of a multipart/form-data body, by field name (empty otherwise; only routes with `upload`). */
  files: Record<string, UploadedFile>;
  /** The peer address of the connection (the socket's, not a forwarded claim), e.g. for signature audit trails. */
  readonly clientAddress: string;
  /** Public base URL of this API (PUBLIC_URL, else the listen address; never the request's Host), for absolute links. */
  readonly baseUrl: string;
  /** For a request with an Idempotency-Key: the hook that writes its durable idempotency record, to be run inside
   *  the transaction of the handler's effect (pass it to the shared function that owns that transaction), given
   *  how the handler turns the transaction's result into its reply. Undefined without a key (no extra writes). */
  idempotent<T, B>(reply: (result: T) => Reply<B>): WithinTx<T> | undefined;
}

export interface RouteDef<BS extends TSchema | undefined = TSchema | undefined,
  QS extends TSchema | undefined = TSchema | undefined, PS extends TSchema | undefined = TSchema | undefined,
  RS extends TSchema | undefined = TSchema | undefined> {
  method: Method;
  /** OpenAPI-style path: /v1/calls/{id}. */
  path: string;
  /** Required scope; a list: any one of them (the handler's domain narrows by what the key holds); null for public
   *  routes (no credential). */
  scope: RouteScope | null;
  /** 'scoped': the route narrows what it reads and writes to a credential limited to a sub-entity (shared/sub-entities/
   *  limit.ts); 'organization': it serves the whole organization, so such a credential is refused (403 forbidden).
   *  Set per area at registration (gateway/app.ts SUB_ENTITY_SCOPED), or on a route to differ from its area. */
  subEntities?: 'scoped' | 'organization';
  summary: string;
  /** A paragraph for the reference: what the operation does, its rules and the state it changes (Markdown). */
  description?: string;
  tag: string;
  body?: BS;
  /** The body may also come as multipart/form-data: text fields are validated as `body`, file parts go to ctx.files. */
  upload?: UploadSpec;
  query?: QS;
  params?: PS;
  /** Success status and schema, for the OpenAPI document (and the suite's response check). `also`: other success
   *  statuses answered with the same schema, each with what it means (e.g. 200 for a record that already existed). */
  response: { status: number; schema?: RS; description?: string; contentType?: string; also?: Record<number, string> };
  /** Realistic example values for the reference: the request body and the success response body. */
  examples?: { request?: unknown; response?: unknown };
  /** Error codes this route can answer besides the general ones. */
  errors?: ErrorCode[];
  deprecated?: Deprecation;
  /** A success changes the organization's account footprint (GET /v1/account): the reply waits until every gateway
   *  dropped its copy, so the next read on any replica shows the change. */
  changesAccount?: boolean;
  /** false: the answer holds a secret shown once (a new API key), so it is never stored for replay and a request with
   *  an Idempotency-Key is refused (validation_error). */
  idempotency?: false;
  handler(ctx: Ctx<StaticOr<BS, undefined>, StaticOr<QS, Record<string, never>>, StaticOr<PS, Record<string, never>>>): Promise<Reply<StaticOr<RS, unknown>>>;
}

export type AnyRoute = RouteDef<any, any, any, any>;

/** A raw route (served outside the API pipeline: its own authentication, no validation) described for the OpenAPI
 *  document; `security` names a scheme of the document's components. */
/** How a raw route is documented in OpenAPI. security: how a caller proves who it is (public: nobody needs to). */
export type RawRouteDoc = Pick<RouteDef, 'method' | 'path' | 'summary' | 'description' | 'tag' | 'body' | 'query' | 'response' | 'errors' | 'examples'>
  & { security: 'livekitWebhook' | 'public';
    /** Answers that are not the error envelope (public routes answer plain bodies), by status: what they mean. */
    plainErrors?: Record<number, string>;
    /** When the plainErrors answers are JSON of the route's own (not the envelope): its schema and an example per status. */
    plainJson?: { schema: TSchema; examples: Record<number, unknown> } };

/** An API area: registers its routes (Fastify-style plugin; the area owns its schemas and thin handlers). */
export type Plugin = (routes: { add<B extends TSchema | undefined, Q extends TSchema | undefined, P extends TSchema | undefined,
  R extends TSchema | undefined>(r: RouteDef<B, Q, P, R>): void }) => void;
