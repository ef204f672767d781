// The domain knows no HTTP: shared/ throws DomainError (code, message, fields), and the one table of statuses is
// shared/http/error-status.ts. This guards both: every code has a status, and no module under shared/ other than
// shared/http/ and shared/errors.ts names an HTTP-edge error, an error status or an HTTP error header.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { DomainError, ERROR_CODES, ERROR_MEANINGS, stateConflict, type ErrorCode } from '../../shared/errors.ts';
import { ApiError, ERROR_STATUS, httpError, statusOf } from '../../shared/http/error-status.ts';

const ROOT = join(import.meta.dirname, '../..');
const SHARED = join(ROOT, 'shared');

const FORBIDDEN: [RegExp, string][] = [
  [/\bApiError\b/, 'the HTTP-edge error ApiError (throw DomainError)'],
  [/\bstatus(Code)?\s*:\s*[45]\d\d\b/, 'an error status literal'],
  [/writeHead\(\s*[45]\d\d\b/, 'an error status written'],
  [/headers\s*:\s*\{\s*['"]retry-after['"]/i, 'a Retry-After header (give DomainError retryAfterSeconds)'],
  [/\[\s*['"]retry-after['"]\s*\]\s*=/i, 'a Retry-After header written'],
  [/\b(statusOf|ERROR_STATUS|httpError)\b|\/http\/error-status/, 'the status table (only the HTTP edge reads it)'],
];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** The code without its comments (a comment may well explain that a refusal is a 409). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

t.test('every code has one status, a meaning and nothing else', async (t) => {
  const codes = Object.keys(ERROR_CODES).sort();
  t.same(Object.keys(ERROR_STATUS).sort(), codes, 'the status table lists exactly the codes');
  t.same(Object.keys(ERROR_MEANINGS).sort(), codes, 'every code has a meaning');
  for (const c of codes as ErrorCode[]) {
    t.ok(statusOf(c) >= 400 && statusOf(c) <= 599, `${c}: an error status (${statusOf(c)})`);
    t.notOk('status' in ERROR_CODES[c], `${c}: no status in the domain's code list`);
  }
});

t.test('one code for every illegal state change', async (t) => {
  for (const old of ['test_state_conflict', 'invalid_state', 'enterprise_status_conflict', 'brand_status_conflict',
    'texting_registration_conflict']) t.notOk(old in ERROR_CODES, `${old} is folded into state_conflict`);
  const e = stateConflict('optimize_test', 'archived', 'The test is archived; it cannot move to running.');
  t.same(httpError(e), { status: 409, headers: undefined, body: { error: { code: 'state_conflict',
    message: 'The test is archived; it cannot move to running.', fields: { entity: 'optimize_test', status: 'archived' } } } });
});

t.test('a DomainError answers its code\'s status, the envelope and Retry-After', async (t) => {
  const e = new DomainError('rate_limited', 'Too fast.', { category: 'account_limit', retryAfterSeconds: 7, fields: { to: 'x' } });
  t.notOk('status' in e, 'the domain error carries no status');
  t.same(httpError(e), { status: 429, headers: { 'Retry-After': '7' },
    body: { error: { code: 'rate_limited', message: 'Too fast.', category: 'account_limit', fields: { to: 'x' } } } });
  t.same(httpError(new DomainError('not_found', 'Gone.')), { status: 404, headers: undefined, body: { error: { code: 'not_found', message: 'Gone.' } } });
  const edge = new ApiError('validation_error', 'Range.', { status: 416, headers: { 'Content-Range': 'bytes */10' } });
  t.same(httpError(edge).status, 416, 'the HTTP edge may answer a status of its own');
  t.same(httpError(edge).headers, { 'Content-Range': 'bytes */10' });
});

t.test('shared/ outside shared/http/ and shared/errors.ts knows no HTTP status of an error', async (t) => {
  const files = sources(SHARED).map((p) => relative(ROOT, p).split('\\').join('/'))
    .filter((p) => !p.startsWith('shared/http/') && p !== 'shared/errors.ts');
  t.ok(files.length > 100, `${files.length} domain files read`);
  const found: string[] = [];
  for (const file of files) {
    const lines = code(readFileSync(join(ROOT, file), 'utf8')).split('\n');
    lines.forEach((line, i) => {
      for (const [re, what] of FORBIDDEN) if (re.test(line)) found.push(`${file}:${i + 1}: ${what}: ${line.trim()}`);
    });
  }
  t.same(found, [], 'no HTTP statuses, headers or ApiError in the domain');
});

t.test('the guard sees what it guards against', async (t) => {
  const hits = (text: string) => FORBIDDEN.filter(([re]) => re.test(code(text))).length;
  t.equal(hits("throw new ApiError('forbidden', 'no');"), 1);
  t.equal(hits("return { status: 409, body };"), 1);
  t.equal(hits("res.writeHead(503).end();"), 1);
  t.equal(hits("{ headers: { 'Retry-After': '5' } }"), 1);
  t.equal(hits("into['Retry-After'] = '5';"), 1);
  t.equal(hits("import { statusOf } from '../http/error-status.ts';"), 1);
  t.equal(hits("// answers 409 state_conflict (a comment)"), 0);
  t.equal(hits("const url = 'http://x/409'; /* status: 409 */"), 0);
});
