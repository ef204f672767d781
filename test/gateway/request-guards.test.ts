// Rules every route obeys, checked over the gateway's whole route table (a route added later is covered without
// touching this file): NUL (U+0000) in path ids, query values and every string of a body is 400 validation_error
// naming the field; an undecodable path id is 400 on its own route (never 405); numeric ids and query numbers are
// exact decimal; __proto__ / constructor / toString / hasOwnProperty keys are plain data, named in `fields`.
import type { TSchema } from '@sinclair/typebox';
import t from 'tap';
import { SCOPES } from '../../shared/scopes.ts';
import { NUL_MESSAGE, UNDECODABLE_MESSAGE } from '../../gateway/http/request-guards.ts';
import type { AnyRoute } from '../../gateway/http/types.ts';
import { testEnv, type Response } from '../helpers/env.ts';
import type { TapTest } from '../helpers/pool.ts';

const env = await testEnv(t);
const org = await env.bootstrap();
// Every scope (compliance:write too, which no key gets by default), and room for the few hundred requests below.
const { apiKey: key } = await env.createKey({
  organizationId: org.organization_id, userId: org.user_id, scopes: [...SCOPES], rateLimitPerMinute: 100_000,
});
const routes: AnyRoute[] = env.gateway!.gateway.router.routes;
const PROTO_KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];

const paramNames = (r: AnyRoute) => [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
const fill = (r: AnyRoute, values: Record<string, string>) => r.path.replace(/\{(\w+)\}/g, (_, n) => values[n] ?? '1');
const schemaProps = (s: TSchema | undefined): Record<string, TSchema> => (s as { properties?: Record<string, TSchema> })?.properties ?? {};

/** Paths (as the validator names them) of every string a body schema accepts, with a body holding only it. */
function stringLeaves(schema: TSchema, at: string[] = []): string[][] {
  const s = schema as { type?: string; anyOf?: TSchema[]; items?: TSchema };
  if (s.type === 'string') return [at];
  if (s.type === 'object') return Object.entries(schemaProps(schema)).flatMap(([k, p]) => stringLeaves(p, [...at, k]));
  if (s.type === 'array' && s.items) return stringLeaves(s.items, [...at, '0']);
  if (s.anyOf) return stringLeaves(s.anyOf.find((b) => ['string', 'object', 'array'].includes((b as { type?: string }).type ?? '')) ?? {} as TSchema, at);
  return [];
}
const fieldName = (path: string[]) => path.reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '');
function bodyAt(path: string[], leaf: unknown): unknown {
  if (!path.length) return leaf;
  const [head, ...rest] = path;
  return /^\d+$/.test(head) ? [bodyAt(rest, leaf)] : { [head]: bodyAt(rest, leaf) };
}

function rejected(t: TapTest, r: Response, field: string, message: string | RegExp, why: string) {
  t.equal(r.status, 400, r.status === 400 ? `${why}: 400` : `${why}: 400 (got ${r.status} ${r.text.slice(0, 200)})`);
  t.equal(r.body?.error?.code, 'validation_error', `${why}: validation_error`);
  const fields = r.body?.error?.fields;
  t.ok(fields && Object.prototype.hasOwnProperty.call(fields, field), `${why}: fields names ${JSON.stringify(field)} (${JSON.stringify(fields)})`);
  if (fields && Object.prototype.hasOwnProperty.call(fields, field)) {
    if (typeof message === 'string') t.equal(fields[field], message, `${why}: message`);
    else t.match(fields[field], message, `${why}: message`);
  }
}

const send = (r: AnyRoute, path: string, o: { body?: unknown; rawBody?: string } = {}) =>
  env.request(r.method, path, { key, ...(o.rawBody !== undefined ? { rawBody: o.rawBody, headers: { 'content-type': 'application/json' } } : o) });

const counts = () => env.db.one(`SELECT (SELECT count(*) FROM agents)::int AS agents,
  (SELECT count(*) FROM webhook_subscriptions)::int AS subscriptions, (SELECT count(*) FROM phone_numbers)::int AS numbers,
  (SELECT count(*) FROM calls)::int AS calls`);
const before = await counts();

t.test('the route table is the gateway\'s', async (t) => {
  t.ok(routes.length >= 20, `${routes.length} routes`);
  t.ok(routes.some((r) => r.path === '/v1/agents/{id}'), 'includes parameterised routes');
});

t.test('NUL and undecodable bytes in path ids: 400 naming the id, on the matched route', async (t) => {
  for (const r of routes) {
    for (const name of paramNames(r)) {
      for (const [raw, message] of [['%00', NUL_MESSAGE], ['a%00b', NUL_MESSAGE], ['%ff', UNDECODABLE_MESSAGE],
        ['%E0%A4%A', UNDECODABLE_MESSAGE], ['%', UNDECODABLE_MESSAGE]] as const) {
        const res = await send(r, fill(r, { [name]: raw }), r.body ? { body: {} } : {});
        rejected(t, res, name, message, `${r.method} ${r.path} with ${name}=${raw}`);
        t.notOk(res.headers.allow, 'not a 405');
      }
    }
  }
});

t.test('numeric path ids are exact decimal', async (t) => {
  for (const r of routes) {
    for (const [name, schema] of Object.entries(schemaProps(r.params))) {
      if ((schema as { type?: string }).type !== 'integer') continue;
      for (const raw of ['0x10', '%20%2010', '10%20', '1e1', '+10', '10.0', '0b1', '9007199254740993', '']) {
        if (raw === '') continue; // an empty segment does not match the route at all
        rejected(t, await send(r, fill(r, { [name]: raw }), r.body ? { body: {} } : {}), name, /decimal integer/,
          `${r.method} ${r.path} with ${name}=${raw}`);
      }
    }
  }
  const ok = await env.request('GET', '/v1/phone-numbers/999999', { key });
  t.equal(ok.status, 404, 'a well-formed id that does not exist is not_found');
});

t.test('NUL in query values, numbers in the query are exact decimal', async (t) => {
  for (const r of routes) {
    const names = Object.keys(schemaProps(r.query));
    for (const name of [...names, 'note']) {
      rejected(t, await send(r, `${fill(r, {})}?${name}=a%00b`, r.body ? { body: {} } : {}), name, NUL_MESSAGE,
        `${r.method} ${r.path}?${name}=NUL`);
    }
    for (const [name, schema] of Object.entries(schemaProps(r.query))) {
      if ((schema as { type?: string }).type !== 'integer') continue;
      rejected(t, await send(r, `${fill(r, {})}?${name}=0x10`), name, /decimal integer/, `${r.method} ${r.path}?${name}=0x10`);
    }
  }
});

t.test('NUL in any string of a body', async (t) => {
  for (const r of routes.filter((x) => x.body)) {
    const leaves = stringLeaves(r.body!);
    t.ok(leaves.length, `${r.method} ${r.path} has string fields`);
    for (const leaf of leaves) {
      const field = fieldName(leaf);
      rejected(t, await send(r, fill(r, {}), { body: bodyAt(leaf, 'a\u0000b') }), field, NUL_MESSAGE, `${r.method} ${r.path} ${field}`);
    }
    rejected(t, await send(r, fill(r, {}), { body: { 'na\u0000me': 'x' } }), 'na\\u0000me', NUL_MESSAGE, `${r.method} ${r.path} NUL in a key`);
  }
  // The names the hardening issue lists.
  const agent = routes.find((r) => r.method === 'POST' && r.path === '/v1/calls')!;
  rejected(t, await send(agent, '/v1/calls', { body: { to_number: '+14155550001', agent: { name: 'A\u0000', greeting: 'Hi' } } }),
    'agent.name', NUL_MESSAGE, 'POST /v1/calls agent.name');
});

t.test('__proto__, constructor, toString, hasOwnProperty are named as unknown fields, never a prototype', async (t) => {
  for (const r of routes) {
    for (const k of PROTO_KEYS) {
      const q = await send(r, `${fill(r, {})}?${k}=1`, r.body ? { body: {} } : {});
      rejected(t, q, k, /not a recognized/, `${r.method} ${r.path}?${k}=1`);
      if (!r.body) continue;
      rejected(t, await send(r, fill(r, {}), { rawBody: `{${JSON.stringify(k)}: "x"}` }), k, /not a recognized field/,
        `${r.method} ${r.path} body key ${k}`);
      for (const [prop, schema] of Object.entries(schemaProps(r.body))) {
        const inner = (schema as { type?: string; anyOf?: { type?: string }[] });
        if (inner.type !== 'object') continue;
        rejected(t, await send(r, fill(r, {}), { rawBody: `{"${prop}": {${JSON.stringify(k)}: {"polluted": true}}}` }),
          `${prop}.${k}`, /not a recognized field/, `${r.method} ${r.path} body key ${prop}.${k}`);
      }
    }
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched (in-process gateway)');
});

t.test('a GET with an undecodable id answers 400, not 405 (the issue\'s case)', async (t) => {
  const r = await env.request('GET', '/v1/agents/%ff', { key });
  rejected(t, r, 'id', UNDECODABLE_MESSAGE, 'GET /v1/agents/%ff');
  t.notOk(r.headers.allow);
});

t.test('nothing was written, nothing was a 500', async (t) => {
  t.same(await counts(), before);
  const metrics = await env.request('GET', '/metrics');
  t.notMatch(metrics.text, /http_requests_total\{[^}]*status="5\d\d"/, 'no 5xx recorded');
});
