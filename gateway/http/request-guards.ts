// Rules every request's text obeys before schema validation, applied once in the pipeline for every route:
// - no U+0000 anywhere (PostgreSQL cannot store it in text, so it would surface as a 500): body strings and keys,
//   query names and values, path parameters;
// - no unpaired UTF-16 surrogate in a body string or key (JSON's "\ud800": PostgreSQL refuses it in jsonb, and text
//   would silently store U+FFFD instead). Query and path text cannot hold one: their bytes decode to U+FFFD or fail;
// - path parameters are valid percent-encoded UTF-8 (answered on the matched route, never as a 405 or 404).
// Field names follow the validator's spelling: "agent.name", "members[0].phone_id", "id".
import { validationError } from '../../shared/errors.ts';

export const NUL_MESSAGE = 'must not contain NUL (U+0000)';
export const UNDECODABLE_MESSAGE = 'is not valid percent-encoded UTF-8';
export const SURROGATE_MESSAGE = 'must not contain an unpaired UTF-16 surrogate (U+D800 to U+DFFF)';

// Maps whose prototype has no properties at all, so any name is plain data ("__proto__", "constructor" included).
// Made with `new` rather than Object.create(null), whose objects start in V8's slow dictionary mode (measured:
// ~150 ns more per request, and every request parses a query map).
const FieldMap = function FieldMap() { /* empty: the prototype does the work */ } as unknown as new () => Record<string, string>;
FieldMap.prototype = Object.create(null);

/** A fields (or query) map that takes any name as plain data. */
export const fieldMap = (): Record<string, string> => new FieldMap();

/** Field names show NUL and unpaired surrogates as escapes (the answer's JSON stays readable). */
const visible = (key: string) => key.replace(/\u0000|[\ud800-\udfff]/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
const child = (at: string, key: string) => (at ? `${at}.${visible(key)}` : visible(key));

/** What is wrong with a piece of text, or null. With the u flag a surrogate class matches only an unpaired one. */
function textProblem(s: string): string | null {
  if (s.includes('\u0000')) return NUL_MESSAGE;
  return /[\ud800-\udfff]/u.test(s) ? SURROGATE_MESSAGE : null;
}

/** Adds a field for every string (or object key) under `value` that holds NUL or an unpaired surrogate. */
function collectBad(value: unknown, at: string, out: Record<string, string>): void {
  if (typeof value === 'string') {
    const why = textProblem(value);
    if (why) out[at] = why;
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => collectBad(v, `${at}[${i}]`, out));
  } else if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) {
      const path = child(at, key);
      const why = textProblem(key);
      if (why) out[path] = why;
      collectBad((value as Record<string, unknown>)[key], path, out);
    }
  }
}

// JSON can carry U+0000 only as the escape \u0000 (a raw control character is a parse error), and an unpaired
// surrogate only as an escape \uD800 to \uDFFF (raw bytes that are not UTF-8 decode to U+FFFD), so a body without
// \u0000, \ud or \uD needs no walk; the same holds for %00 in a query string. A request without any of these (the
// cached GETs of the hot path) costs a few comparisons and no allocation.
const ESCAPED_NUL = Buffer.from('\\u0000');
const ESCAPED_SURROGATE = [Buffer.from('\\ud'), Buffer.from('\\uD')];

/** Throws validation_error naming every undecodable path parameter (names in `undecodable`) and every place that
 *  holds NUL: path parameters, the query (raw string and its parsed form), the body (raw bytes and parsed JSON); and
 *  every body string or key holding an unpaired surrogate. */
export function assertCleanText(rawQuery: string, query: Record<string, string>, params: Record<string, string>,
  undecodable: string[] | undefined, rawBody: Buffer | null, body: unknown): void {
  let nulParam = false;
  for (const name in params) if (params[name].includes('\u0000')) nulParam = true;
  const nulQuery = rawQuery !== '' && (rawQuery.includes('%00') || rawQuery.includes('\u0000'));
  const walkBody = body !== undefined && rawBody !== null
    && (rawBody.includes(ESCAPED_NUL) || rawBody.includes(ESCAPED_SURROGATE[0]) || rawBody.includes(ESCAPED_SURROGATE[1]));
  if (!undecodable && !nulParam && !nulQuery && !walkBody) return;
  const fields = fieldMap();
  for (const name of undecodable ?? []) fields[name] = UNDECODABLE_MESSAGE;
  for (const name in params) if (params[name].includes('\u0000')) fields[name] = NUL_MESSAGE;
  if (nulQuery) collectBad(query, '', fields);
  if (walkBody) collectBad(body, '', fields);
  for (const _ in fields) throw validationError(fields);
}
