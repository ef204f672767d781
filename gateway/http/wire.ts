// The API's wire formats: parsing query strings and JSON bodies, serializing replies. Reading bodies, the error
// envelope and writing status lines and headers are shared by every HTTP stack (shared/http/).
import { validationError } from '../../shared/errors.ts';
import type { StoredResponse } from '../../shared/idempotency/idempotency-store.ts';
import { fieldMap } from './request-guards.ts';
import type { Deprecation, Reply, UploadedFile } from './types.ts';

// The body limit and reader live in shared/http/body.ts (every HTTP stack reads bodies there).
export { MAX_BODY_BYTES } from '../../shared/http/body.ts';
import { MAX_BODY_BYTES } from '../../shared/http/body.ts';

export function serialize(r: Reply): StoredResponse {
  const body = r.raw ?? r.json ?? (r.body === undefined ? '' : JSON.stringify(r.body));
  const headers = r.deprecation ? { ...deprecationHeaders(r.deprecation), ...r.headers } : r.headers ?? {};
  return { status: r.status, body, headers };
}

export function deprecationHeaders(d: Deprecation): Record<string, string> {
  return { Deprecation: `@${Math.floor(d.since.getTime() / 1000)}`, Sunset: d.sunset.toUTCString(), Link: `<${d.link}>; rel="sunset"` };
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

/** Whether the request's body is multipart/form-data (only routes with `upload` read it so). */
export const isMultipart = (headers: Record<string, string>) =>
  (headers['content-type'] ?? '').split(';')[0].trim().toLowerCase() === 'multipart/form-data';

/** A multipart/form-data body (RFC 7578), parsed by Node's own fetch implementation (undici): text fields as the
 *  body (each given once), file parts by field name. A body over the route's limit, without a boundary or malformed
 *  is a 400 naming `body`. */
export async function parseMultipart(headers: Record<string, string>, raw: Buffer | null, tooBig: boolean):
  Promise<{ fields: Record<string, string>; files: Record<string, UploadedFile> }> {
  if (tooBig) throw validationError({ file: 'the request body exceeds this endpoint\'s size limit' }, 'The request body is too large.');
  if (!raw || raw.length === 0) throw validationError({ body: 'is required (a multipart/form-data body)' });
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength) as unknown as BodyInit, { headers: { 'content-type': headers['content-type'] } }).formData();
  } catch {
    throw validationError({ body: 'is not a well-formed multipart/form-data body (RFC 7578) with the boundary of its Content-Type' },
      'The multipart body could not be parsed.');
  }
  const fields: Record<string, string> = fieldMap();
  const files: Record<string, UploadedFile> = Object.create(null);
  const bad = fieldMap();
  for (const [name, value] of form) {
    if (name in fields || name in files) { bad[name] = 'must be given once'; continue; }
    if (typeof value === 'string') {
      if (value.includes('\u0000')) bad[name] = 'must not contain NUL characters';
      else fields[name] = value;
    } else {
      files[name] = { filename: value.name || null, contentType: value.type || null, data: Buffer.from(await value.arrayBuffer()) };
    }
  }
  for (const _ in bad) throw validationError(bad);
  return { fields, files };
}
