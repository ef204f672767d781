// What the gateway's stages share about one request: what it said, who sent it, what it parsed to and what it is
// answered with. One object per request, filled in stage by stage (gateway/http/server.ts builds the stage lists).
import type { Principal } from '../../../shared/accounts/principal.ts';
import type { NewClaim, StoredResponse } from '../../../shared/idempotency/idempotency-store.ts';
import { newRequestId } from '../../../shared/ids.ts';
import type { StreamPlan } from '../event-stream.ts';
import type { FilePlan } from '../file-response.ts';
import type { AnyRoute, UploadedFile } from '../types.ts';

/** The request as read off the socket. */
export interface Incoming {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  /** The client address, read on demand (only unauthenticated requests are limited by it). */
  readonly remote: string;
}

export const MUTATING: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export class ApiRequest {
  readonly requestId = newRequestId();
  /** The answer's headers so far (stages add theirs: rate limits, Allow, Idempotency-Replay, Deprecation...). */
  readonly headers: Record<string, string> = { 'X-Request-Id': this.requestId, 'content-type': 'application/json' };
  /** Set once matched; the stages of a route always see it. */
  route!: AnyRoute;
  /** Set with the route. */
  params!: Record<string, string>;
  /** Path parameters that are not valid percent-encoded UTF-8 (kept raw in params). */
  undecodable: string[] | undefined;
  principal: Principal | null = null;
  /** Set by the validate stage. */
  query!: Record<string, string>;
  /** The parsed JSON body (undefined when the route takes none and none was sent); a multipart body's text fields. */
  body: unknown;
  /** A multipart body's file parts (routes with `upload`). */
  files: Record<string, UploadedFile> = {};
  /** The idempotency claim of a first attempt with an Idempotency-Key. */
  claim: NewClaim | null = null;
  /** This attempt lost a race to a twin with the same key and answers with the winner's response. */
  lost = false;
  /** The answer decided so far (the handler's, a replay's). */
  reply: StoredResponse | null = null;
  /** A file to stream instead of reply.body. */
  file: FilePlan | undefined;
  /** An event stream to keep open instead of reply.body (GET /v1/calls/stream). */
  stream: StreamPlan | undefined;

  constructor(readonly inc: Incoming, readonly rawBody: Buffer | null, readonly tooBig: boolean) {}
}
