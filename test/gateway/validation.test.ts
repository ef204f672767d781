// Request validation through test-only routes (testEnv `plugins`): unknown query parameters, content type, malformed
// and oversized bodies, schema errors named in `fields` (never a 500); unknown routes (404) and wrong methods
// (405) in the error envelope; deprecation headers on a route marked deprecated.
import { request as httpRequest } from 'node:http';
import { Type } from '@sinclair/typebox';
import t from 'tap';
import { MAX_BODY_BYTES } from '../../gateway/http/wire.ts';
import type { Plugin } from '../../gateway/http/types.ts';
import { httpCall, testEnv, type Response } from '../helpers/env.ts';
import { parseSfList } from '../helpers/header-syntax.ts';
import type { TapTest } from '../helpers/pool.ts';

/** The success envelope of this file's test-only routes (checked by the suite's response check). */
const Data = Type.Object({ data: Type.Object({}) });

const SINCE = new Date('2026-01-15T00:00:00Z');
const SUNSET = new Date('2027-07-01T00:00:00Z');

const testRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/test/echo', scope: 'account:read', tag: 'Test', summary: 'Test-only: echoes a valid body.',
    body: Type.Object({
      name: Type.String({ minLength: 1, maxLength: 2_000_000 }),
      count: Type.Optional(Type.Integer({ minimum: 1 })),
      tags: Type.Optional(Type.Array(Type.String())),
      nested: Type.Optional(Type.Object({ a: Type.Integer() }, { additionalProperties: false })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Data },
    handler: async ({ body }) => ({ status: 200, body: { data: { name_length: body.name.length, count: body.count ?? null } } }),
  });
  routes.add({
    method: 'POST', path: '/v1/test/nobody', scope: 'account:read', tag: 'Test', summary: 'Test-only: takes no body.',
    response: { status: 204 },
    handler: async () => ({ status: 204 }),
  });
  routes.add({
    method: 'GET', path: '/v1/test/headers', scope: 'account:read', tag: 'Test', summary: 'Test-only: headers a handler sets.',
    response: { status: 200, schema: Data },
    handler: async () => ({
      status: 200, body: { data: {} },
      headers: { 'X-First': 'one', 'X-Smuggle': 'x\r\nSet-Cookie: session=stolen', 'X-Second': 'two, with: colons' },
    }),
  });
  routes.add({
    method: 'GET', path: '/v1/test/items/{id}', scope: 'account:read', tag: 'Test', summary: 'Test-only: one item.',
    params: Type.Object({ id: Type.Integer({ minimum: 1 }) }),
    response: { status: 200, schema: Data },
    handler: async ({ params }) => ({ status: 200, body: { data: { id: params.id } } }),
  });
  routes.add({
    method: 'GET', path: '/v1/test/old', scope: 'account:read', tag: 'Test', summary: 'Test-only: a deprecated route.',
    deprecated: { since: SINCE, sunset: SUNSET, link: 'https://docs.example.test/deprecations/old' },
    response: { status: 200, schema: Data },
    handler: async () => ({ status: 200, body: { data: { old: true } } }),
  });
  routes.add({
    method: 'GET', path: '/v1/test/spelling', scope: 'account:read', tag: 'Test', summary: 'Test-only: a deprecated parameter.',
    query: Type.Object({ colour: Type.Optional(Type.String()), color: Type.Optional(Type.String()) }, { additionalProperties: false }),
    response: { status: 200, schema: Data },
    handler: async ({ query }) => ({
      status: 200, body: { data: { color: query.color ?? query.colour ?? null } },
      deprecation: query.colour !== undefined
        ? { since: SINCE, sunset: SUNSET, link: 'https://docs.example.test/deprecations/colour' } : undefined,
    }),
  });
};

const env = await testEnv(t, { plugins: [testRoutes] });
const org = await env.bootstrap({ scopes: ['account:read'] });
const key = org.api_key;

function invalid(t: TapTest, r: Response, field: string, why: string) {
  t.equal(r.status, 400, `${why}: 400`);
  t.equal(r.body?.error?.code, 'validation_error', `${why}: validation_error`);
  t.type(r.body?.error?.message, 'string');
  t.ok(r.body?.error?.fields && typeof r.body.error.fields[field] === 'string', `${why}: fields.${field} (${JSON.stringify(r.body?.error?.fields)})`);
  t.match(r.headers['content-type'], /^application\/json/);
}

const echo = (o: { body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> }) =>
  env.request('POST', '/v1/test/echo', { key, ...o });

t.test('a valid body passes (control)', async (t) => {
  const r = await echo({ body: { name: 'x', count: 2, tags: ['a'], nested: { a: 1 } } });
  t.equal(r.status, 200);
  t.same(r.body, { data: { name_length: 1, count: 2 } });
  const withCharset = await echo({ rawBody: '{"name":"y"}', headers: { 'content-type': 'application/json; charset=utf-8' } });
  t.equal(withCharset.status, 200, 'a charset parameter is fine');
});

t.test('unknown query parameters', async (t) => {
  const r = await env.request('GET', '/v1/account?verbose=1&expand=user', { key });
  invalid(t, r, 'verbose', 'unknown query on a route without query parameters');
  t.ok(r.body.error.fields.expand, 'every unknown parameter is named');
  invalid(t, await env.request('GET', '/v1/phone-numbers?sort=name', { key: (await env.bootstrap()).api_key }), 'sort', 'unknown query on a list');
  invalid(t, await env.request('POST', '/v1/test/echo?dry_run=1', { key, body: { name: 'x' } }), 'dry_run', 'unknown query on a POST');
});

t.test('content type', async (t) => {
  invalid(t, await echo({ rawBody: '{"name":"x"}', headers: { 'content-type': 'text/plain' } }), 'content-type', 'text/plain');
  invalid(t, await echo({ rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 'content-type', 'form');
  invalid(t, await echo({ rawBody: '{"name":"x"}' }), 'content-type', 'no content type');
});

t.test('malformed JSON', async (t) => {
  for (const raw of ['{"name":', '{name: "x"}', "{'name':'x'}", '{"name":"x"}}', 'nul', '\u0000']) {
    invalid(t, await echo({ rawBody: raw, headers: { 'content-type': 'application/json' } }), 'body', `malformed ${JSON.stringify(raw)}`);
  }
});

t.test('JSON that is not the expected object', async (t) => {
  for (const raw of ['[]', 'null', '"name"', '42', 'true']) {
    invalid(t, await echo({ rawBody: raw, headers: { 'content-type': 'application/json' } }), 'body', `body ${raw}`);
  }
  invalid(t, await env.request('POST', '/v1/test/echo', { key }), 'body', 'missing body');
});

t.test('schema errors name each field', async (t) => {
  invalid(t, await echo({ body: { name: 'x', colour: 'red' } }), 'colour', 'unknown field');
  invalid(t, await echo({ body: {} }), 'name', 'missing required field');
  invalid(t, await echo({ body: { name: 5 } }), 'name', 'wrong type');
  invalid(t, await echo({ body: { name: 'x', count: '2' } }), 'count', 'string for integer (bodies are not coerced)');
  invalid(t, await echo({ body: { name: 'x', count: 0 } }), 'count', 'below minimum');
  invalid(t, await echo({ body: { name: 'x', count: 1.5 } }), 'count', 'not an integer');
  invalid(t, await echo({ body: { name: 'x', tags: ['a', 7] } }), 'tags[1]', 'array item');
  invalid(t, await echo({ body: { name: 'x', nested: { a: 'b' } } }), 'nested.a', 'nested field');
  invalid(t, await echo({ body: { name: 'x', nested: { a: 1, z: 1 } } }), 'nested.z', 'unknown nested field');
  const many = await echo({ body: { count: 0, extra: true } });
  invalid(t, many, 'name', 'several errors');
  t.same(Object.keys(many.body.error.fields).sort(), ['count', 'extra', 'name'], 'all of them are named at once');
  invalid(t, await env.request('POST', '/v1/test/nobody', { key, body: { a: 1 } }), 'body', 'a body where none is taken');
  t.equal((await env.request('POST', '/v1/test/nobody', { key, body: {} })).status, 204, 'an empty object is tolerated');
  t.equal((await env.request('POST', '/v1/test/nobody', { key })).status, 204);
});

t.test('path parameters are validated', async (t) => {
  t.same((await env.request('GET', '/v1/test/items/42', { key })).body, { data: { id: 42 } }, 'coerced to integer');
  invalid(t, await env.request('GET', '/v1/test/items/abc', { key }), 'id', 'non-numeric id');
  invalid(t, await env.request('GET', '/v1/test/items/0', { key }), 'id', 'id below minimum');
  const weird = await env.request('GET', '/v1/test/items/%E0%A4%A', { key });
  t.not(weird.status, 500, 'bad percent-encoding is not a 500');
  t.ok(weird.status >= 400 && weird.status < 500, `a client error (${weird.status})`);
});

/** Sends a body without going through httpCall, so a server that answers early cannot fail the client write. */
function sendBody(path: string, body: Buffer, headers: Record<string, string>): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(env.url + path, { method: 'POST', agent: false,
      headers: { connection: 'close', authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = raw.toString();
        resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body: JSON.parse(text), text, raw });
      });
    });
    req.on('error', (e) => { if ((e as NodeJS.ErrnoException).code !== 'EPIPE' && (e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e); });
    if (headers['transfer-encoding']) {
      // Several chunks, as a streaming client would send them.
      for (let off = 0; off < body.length; off += 256 * 1024) req.write(body.subarray(off, off + 256 * 1024));
      req.end();
    } else {
      req.end(body);
    }
  });
}

t.test('oversized bodies are 400 naming body, at exactly the 1 MiB boundary', async (t) => {
  t.equal(MAX_BODY_BYTES, 1024 * 1024);
  const sized = (n: number) => {
    const pre = '{"name":"';
    const post = '"}';
    return Buffer.from(pre + 'x'.repeat(n - pre.length - post.length) + post);
  };
  const exact = await sendBody('/v1/test/echo', sized(MAX_BODY_BYTES), { 'content-length': String(MAX_BODY_BYTES) });
  t.equal(exact.status, 200, 'exactly 1 MiB is accepted');
  t.equal(exact.body.data.name_length, MAX_BODY_BYTES - 11);

  const over = sized(MAX_BODY_BYTES + 1);
  invalid(t, await sendBody('/v1/test/echo', over, { 'content-length': String(over.length) }), 'body', '1 MiB + 1 byte with Content-Length');
  invalid(t, await sendBody('/v1/test/echo', over, { 'transfer-encoding': 'chunked' }), 'body', '1 MiB + 1 byte, chunked (no length)');
  const huge = Buffer.alloc(3 * MAX_BODY_BYTES, 0x20);
  invalid(t, await sendBody('/v1/test/echo', huge, { 'transfer-encoding': 'chunked' }), 'body', '3 MiB chunked');
  t.equal((await echo({ body: { name: 'still fine' } })).status, 200, 'the gateway keeps serving');
});

t.test('unknown routes: 404 not_found in the envelope', async (t) => {
  for (const path of ['/v1/nope', '/v1/account/extra', '/nope', '/v2/account', '/v1/test/items/1/2']) {
    const r = await env.request('GET', path, { key });
    t.equal(r.status, 404, `${path}: 404`);
    t.same(Object.keys(r.body), ['error'], `${path}: envelope`);
    t.equal(r.body.error.code, 'not_found');
    t.type(r.body.error.message, 'string');
    t.ok(r.headers['x-request-id'], 'request id');
  }
  t.equal((await env.request('GET', '/v1/nope')).status, 404, 'also without a credential');
});

t.test('wrong method: 405 in the envelope with Allow', async (t) => {
  const cases: [string, string, string][] = [
    ['DELETE', '/v1/account', 'GET'], ['POST', '/v1/account', 'GET'], ['PUT', '/v1/test/items/5', 'GET'],
    ['GET', '/v1/test/echo', 'POST'], ['PATCH', '/v1/me', 'GET'],
  ];
  for (const [method, path, allow] of cases) {
    const r = await env.request(method, path, { key, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
    t.equal(r.status, 405, `${method} ${path}: 405`);
    t.equal(r.body?.error?.code, 'method_not_allowed');
    t.type(r.body.error.message, 'string');
    t.equal(r.headers.allow, allow, `${method} ${path}: Allow: ${allow}`);
  }
});

t.test('every header arrives as its own field; a value with CR or LF is not written', async (t) => {
  const r = await env.request('GET', '/v1/test/headers', { key: org.api_key });
  t.equal(r.status, 200);
  t.equal(r.headers['x-first'], 'one');
  t.equal(r.headers['x-second'], 'two, with: colons');
  t.notOk(r.headers['x-smuggle'], 'the header carrying CR LF is dropped');
  t.notOk(r.headers['set-cookie'], 'nothing is smuggled into the response');
  t.equal(r.headers['content-type'], 'application/json');
  t.match(r.headers['x-request-id'], /^req_/);
  for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']) {
    t.ok(r.headers[h], `${h} present`);
  }
  t.same(r.body, { data: {} });
});

t.test('nothing above was a 500', async (t) => {
  const metrics = await httpCall(env.gateway!.metricsUrl, 'GET', '/metrics');
  t.match(metrics.text, /http_requests_total\{/, 'the scrape answered the request counters');
  t.notMatch(metrics.text, /http_requests_total\{[^}]*status="5\d\d"/, 'no 5xx recorded by the gateway');
});

t.test('deprecated route: Deprecation, Sunset and Link rel="sunset"', async (t) => {
  const r = await env.request('GET', '/v1/test/old', { key });
  t.equal(r.status, 200);
  const dep = parseSfList(r.headers.deprecation);
  t.same(dep.map((i) => i.value), [{ date: SINCE.getTime() / 1000 }], 'Deprecation is an sf-date (RFC 9745) of the deprecation time');
  t.match(r.headers.sunset, /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/,
    'Sunset is an IMF-fixdate (RFC 8594)');
  t.equal(Date.parse(r.headers.sunset), SUNSET.getTime());
  t.equal(r.headers.link, '<https://docs.example.test/deprecations/old>; rel="sunset"');

  for (const path of ['/v1/account', '/v1/me']) {
    const live = await env.request('GET', path, { key });
    t.notOk(live.headers.deprecation || live.headers.sunset || live.headers.link, `${path} is not deprecated`);
  }
});

t.test('a deprecated spelling inside a live route', async (t) => {
  const old = await env.request('GET', '/v1/test/spelling?colour=red', { key });
  t.equal(old.status, 200);
  t.ok(old.headers.deprecation && old.headers.sunset, 'the old spelling is flagged');
  t.equal(old.headers.link, '<https://docs.example.test/deprecations/colour>; rel="sunset"');
  const cur = await env.request('GET', '/v1/test/spelling?color=red', { key });
  t.notOk(cur.headers.deprecation, 'the current spelling is not');
});
