// The wire: what goes between a uWS request/response and the pipeline's plain values. Reading bodies, parsing
// query strings and JSON bodies, serializing replies and errors, writing status lines and headers.
import type uWS from 'uWebSockets.js';
import { ApiError, validationError } from '../../shared/errors.ts';
import { outageReason, storeUnavailable, unreachableStore } from '../../shared/unavailable.ts';
import type { StoredResponse } from '../../shared/idempotency/idempotency-store.ts';
import { fieldMap } from './request-guards.ts';
import type { Deprecation, GatewayDeps, Reply } from './types.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 206: 'Partial Content', 304: 'Not Modified', 400: 'Bad Request', 401: 'Unauthorized',
  402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict',
  416: 'Range Not Satisfiable', 422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway',
  503: 'Service Unavailable',
};
export const STATUS_LINE: Record<number, string> = Object.fromEntries(
  Object.entries(STATUS_TEXT).map(([code, text]) => [code, `${code} ${text}`]));

/** Writes a response's headers in one native call. uWS writes writeHeader(name, value) as "name: value\r\n" into
 *  the corked response, and every call costs a crossing into C++ plus a UTF-8 conversion of both strings, so the
 *  headers after the first ride in the first one's value as "\r\nName: value" lines (measured: ~7% more requests
 *  per second on GET /v1/account). Framing is only safe if no value carries CR or LF, which uWS itself never
 *  checks: such a header is dropped and logged instead of being written. */
export function writeHeaders(res: uWS.HttpResponse, headers: Record<string, string>, log: GatewayDeps['log']): void {
  let first: string | null = null;
  let block = '';
  for (const name in headers) {
    const value = headers[name];
    if (value.indexOf('\r') !== -1 || value.indexOf('\n') !== -1 || name.indexOf('\r') !== -1 || name.indexOf('\n') !== -1) {
      log.error({ header: name }, 'header with CR or LF not sent');
      continue;
    }
    if (first === null) { first = name; block = value; } else block += '\r\n' + name + ': ' + value;
  }
  if (first !== null) res.writeHeader(first, block);
}

/** Reads the whole request body, up to MAX_BODY_BYTES (uWS hands out chunks that are only valid during the call). */
export function readBody(res: uWS.HttpResponse, headers: Record<string, string>, done: (body: Buffer | null, tooBig: boolean) => void): void {
  if (Number(headers['content-length'] ?? 0) > MAX_BODY_BYTES) return done(null, true);
  const chunks: Buffer[] = [];
  let size = 0;
  let tooBig = false;
  res.onData((chunk, isLast) => {
    if (!tooBig) {
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) tooBig = true;
      else chunks.push(Buffer.from(chunk.slice(0)));
    }
    if (isLast) done(tooBig ? null : Buffer.concat(chunks), tooBig);
  });
}

export function serialize(r: Reply): StoredResponse {
  const body = r.raw ?? r.json ?? (r.body === undefined ? '' : JSON.stringify(r.body));
  const headers = r.deprecation ? { ...deprecationHeaders(r.deprecation), ...r.headers } : r.headers ?? {};
  return { status: r.status, body, headers };
}

export function deprecationHeaders(d: Deprecation): Record<string, string> {
  return { Deprecation: `@${Math.floor(d.since.getTime() / 1000)}`, Sunset: d.sunset.toUTCString(), Link: `<${d.link}>; rel="sunset"` };
}

export function errorReply(err: unknown, log: GatewayDeps['log'], requestId: string): Reply {
  if (err instanceof ApiError) return { status: err.status, body: err.toBody(), headers: err.headers };
  // An unreachable store is an outage, not a bug: 503 with Retry-After, one warning line per request (no stack).
  const store = unreachableStore(err);
  if (store) {
    log.warn({ req_id: requestId, store, reason: outageReason(err) }, 'store unreachable');
    const e = storeUnavailable(store);
    return { status: e.status, body: e.toBody(), headers: e.headers };
  }
  log.error({ err, req_id: requestId }, 'unhandled error');
  return {
    status: 500,
    body: new ApiError('internal_error', `An unexpected error occurred. Quote request id ${requestId} when reporting it.`).toBody(),
  };
}

// Maps without a prototype, so that names such as __proto__ or constructor are plain data.
export function parseQuery(qs: string): Record<string, string> {
  const out: Record<string, string> = fieldMap();
  if (!qs) return out;
  const fields = fieldMap();
  for (const [k, v] of new URLSearchParams(qs)) {
    if (k in out) fields[k] = 'must be given once';
    out[k] = v;
  }
  if (Object.keys(fields).length) throw validationError(fields);
  return out;
}

export function assertEmpty(obj: Record<string, string>, where: string): void {
  const extra = Object.keys(obj);
  if (extra.length) {
    const fields = fieldMap();
    for (const k of extra) fields[k] = `is not a recognized ${where} parameter`;
    throw validationError(fields);
  }
}

/** JSON only: a wrong content type, oversized, malformed or unexpected body is a 400 naming `body`. */
export function parseBody(inc: { headers: Record<string, string> }, raw: Buffer | null, tooBig: boolean, expects: boolean): unknown {
  if (tooBig) {
    throw validationError({ body: `exceeds the ${MAX_BODY_BYTES} byte limit` }, 'The request body is too large.');
  }
  const empty = !raw || raw.length === 0;
  if (empty) {
    if (expects) throw validationError({ body: 'is required (a JSON object)' }, 'This endpoint needs a JSON body.');
    return undefined;
  }
  const ct = (inc.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (ct !== 'application/json') {
    throw validationError({ 'content-type': 'must be application/json' }, 'Send the body as JSON with Content-Type: application/json.');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw!.toString('utf8'));
  } catch (e) {
    throw validationError({ body: `is not valid JSON (${(e as Error).message})` }, 'The request body is not valid JSON.');
  }
  if (!expects) {
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed) && Object.keys(parsed).length === 0) return undefined;
    throw validationError({ body: 'must be empty; this endpoint takes no body' });
  }
  return parsed;
}
