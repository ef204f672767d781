// Static bytes served by the gateway itself (the softphone page and its SDK bundle, the /docs reference page and its
// renderer): read once at start-up, each with a strong ETag that answers 304 on a matching If-None-Match.
import { createHash } from 'node:crypto';
import type { RawReply } from './server.ts';

export interface Asset { body: Buffer; contentType: string; etag: string; headers: Record<string, string> }

/** Response headers of an asset referenced with ?v=<version>: each version is a new URL, cacheable for good. */
export const IMMUTABLE = { 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' };

export function asset(body: Buffer, contentType: string, headers: Record<string, string>): Asset {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  return { body, contentType, etag, headers: { ...headers, etag } };
}

/** A short version string of an asset's bytes, for ?v= in the URLs that reference it. */
export function version(a: Asset): string {
  return a.etag.slice(1, 13);
}

export function serve(a: Asset, headers: Record<string, string>): RawReply {
  if (matches(headers['if-none-match'], a.etag)) return { status: 304, contentType: a.contentType, body: '', headers: a.headers };
  return { status: 200, contentType: a.contentType, body: a.body, headers: a.headers };
}

/** If-None-Match: "*" or a list of (possibly weak) tags; weak comparison, as RFC 9110 asks for GET. */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag.replace(/^W\//, '') === etag;
  });
}

export function escapeAttribute(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
