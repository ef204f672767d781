// GET /v1/openapi.json: validates as OpenAPI 3.1 (@seriousme/openapi-schema-validator), lists every route the
// gateway serves with its scope and error responses, and its response schemas describe what the routes answer.
import { Validator } from '@seriousme/openapi-schema-validator';
import { Type } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import t from 'tap';
import { OPTIMIZE_PUBLIC_DOCS } from '../../gateway/routes/optimize.ts';
import type { Plugin } from '../../gateway/http/types.ts';
import { testEnv } from '../helpers/env.ts';

/** The success envelope of this file's test-only routes (checked by the suite's response check). */
const Data = Type.Object({ data: Type.Object({}) });

const addFormats = (addFormatsModule as unknown as { default: (a: Ajv2020) => Ajv2020 }).default;

const extra: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/test/things/{id}/notes', scope: 'calls:write', tag: 'Test', summary: 'Test-only: a mutating route.',
    params: Type.Object({ id: Type.Integer() }),
    body: Type.Object({ text: Type.String() }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: Type.Object({ id: Type.Integer() }) }) },
    handler: async ({ params }) => ({ status: 201, body: { data: { id: params.id } } }),
  });
  routes.add({
    method: 'GET', path: '/v1/test/legacy', scope: 'account:read', tag: 'Test', summary: 'Test-only: deprecated.',
    deprecated: { since: new Date('2026-01-01T00:00:00Z'), sunset: new Date('2027-01-01T00:00:00Z'), link: 'https://docs.example.test/legacy' },
    response: { status: 200, schema: Data },
    handler: async () => ({ status: 200, body: { data: {} } }),
  });
};

const env = await testEnv(t, { plugins: [extra] });
const org = await env.bootstrap({ numbers: 2 });
const res = await env.request('GET', '/v1/openapi.json');
const doc = res.body;

t.test('served as JSON without a credential', async (t) => {
  t.equal(res.status, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  t.type(doc, 'object');
});

t.test('validates as OpenAPI 3.1', async (t) => {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc));
  t.same(result.errors ?? [], [], 'no schema errors');
  t.equal(result.valid, true);
  t.equal(validator.version, '3.1');
  t.match(doc.openapi, /^3\.1\.\d+$/);
  t.equal(doc.info.version, '1.0.0', 'the API description version of the reference');
  t.same(doc.servers.map((s: { url: string }) => s.url), [env.url]);
});

t.test('lists every implemented route with its scope and error responses', async (t) => {
  const routes = env.gateway!.gateway.router.routes;
  t.ok(routes.some((r) => r.path === '/v1/account') && routes.some((r) => r.path === '/v1/phone-numbers'));
  const documented = Object.entries<Record<string, unknown>>(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
  // The router's API routes, plus the raw routes documented beside them (the public Optimize tag and collector).
  const rawDocumented = OPTIMIZE_PUBLIC_DOCS.map((d) => `${d.method} ${d.path}`);
  t.same(documented.sort(), [...routes.map((r) => `${r.method} ${r.path}`), ...rawDocumented].sort(), 'exactly the routes the gateway serves');
  const opIds = new Set<string>();
  for (const r of routes) {
    const op = doc.paths[r.path][r.method.toLowerCase()];
    const label = `${r.method} ${r.path}`;
    t.ok(op.operationId && !opIds.has(op.operationId), `${label}: unique operationId`);
    opIds.add(op.operationId);
    t.equal(op.summary, r.summary, `${label}: summary`);
    t.same(op.tags, [r.tag], `${label}: tag`);
    t.ok(op.responses[String(r.response.status)], `${label}: success response ${r.response.status}`);
    if (r.scope) {
      // One scope, or an any-of list: one security requirement per scope (OpenAPI: any one of them suffices).
      const scopes: string[] = typeof r.scope === 'string' ? [r.scope] : [...r.scope];
      t.same(op.security, scopes.map((s) => ({ bearer: [s] })), `${label}: bearer security with scope ${scopes.join(' or ')}`);
      t.same(op['x-required-scope'], r.scope);
      for (const st of ['400', '401', '403', '429', '500']) {
        t.equal(op.responses[st]?.content?.['application/json']?.schema?.$ref, '#/components/schemas/Error', `${label}: ${st} uses the error envelope`);
      }
      t.match(op.responses['403'].description, /scope_missing/, `${label}: 403 names scope_missing`);
      for (const h of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit', 'RateLimit-Policy']) {
        t.ok(op.responses[String(r.response.status)].headers?.[h], `${label}: documents ${h}`);
      }
    } else {
      t.same(op.security, [], `${label}: public`);
    }
    if (r.method !== 'GET' && r.scope) {
      t.ok((op.parameters ?? []).some((p: { $ref?: string }) => p.$ref === '#/components/parameters/IdempotencyKey'), `${label}: Idempotency-Key`);
      t.ok(op.responses['409'], `${label}: 409 idempotency_conflict`);
    }
    if (r.deprecated) t.equal(op.deprecated, true, `${label}: deprecated`);
    else t.notOk(op.deprecated, `${label}: not deprecated`);
  }
  t.same(doc.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer', description: doc.components.securitySchemes.bearer.description });
});

t.test('parameters and bodies come from the validation schemas', async (t) => {
  const list = doc.paths['/v1/phone-numbers'].get;
  const names = list.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort();
  t.same(names, ['query:cursor', 'query:limit', 'query:order', 'query:sub_entity_id']);
  const limit = list.parameters.find((p: { name: string }) => p.name === 'limit');
  t.same([limit.schema.minimum, limit.schema.maximum, limit.schema.default], [1, 100, 20]);
  const notes = doc.paths['/v1/test/things/{id}/notes'].post;
  t.ok(notes.parameters.some((p: { name: string; in: string; required: boolean }) => p.in === 'path' && p.name === 'id' && p.required));
  t.same(notes.requestBody.content['application/json'].schema.required, ['text']);
  // An upload route documents its multipart form beside the JSON body, and its any-of scope.
  const upload = doc.paths['/v1/documents'].post;
  t.same(Object.keys(upload.requestBody.content).sort(), ['application/json', 'multipart/form-data']);
  const form = upload.requestBody.content['multipart/form-data'];
  t.same(form.schema.properties.file, { type: 'string', format: 'binary', description: form.schema.properties.file.description });
  t.same(form.schema.required, ['file']);
  t.ok(form.example && upload.requestBody.content['application/json'].example, 'examples of both bodies');
  t.same(upload.security, [{ bearer: ['caller_trust:write'] }, { bearer: ['agents:write'] }]);
  t.equal(notes.requestBody.content['application/json'].schema.additionalProperties, false);
});

t.test('live responses match the documented schemas', async (t) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'doc', components: doc.components } as object);
  const schemaOf = (path: string, status: string) => {
    const s = doc.paths[path].get.responses[status].content['application/json'].schema;
    return s.$ref ? { $ref: `doc${s.$ref}` } : s;
  };
  for (const path of ['/v1/account', '/v1/me', '/v1/phone-numbers']) {
    const r = await env.request('GET', path, { key: org.api_key });
    t.equal(r.status, 200);
    const validate = ajv.compile(schemaOf(path, '200'));
    t.ok(validate(r.body), `${path}: 200 body matches (${ajv.errorsText(validate.errors)})`);
  }
  const denied = await env.request('GET', '/v1/account');
  const validateErr = ajv.compile(schemaOf('/v1/account', '401'));
  t.ok(validateErr(denied.body), `401 body matches the Error schema (${ajv.errorsText(validateErr.errors)})`);
  // The account snapshot admits no additional properties: the document enforces the reference's field list.
  const acct = ajv.compile(schemaOf('/v1/account', '200'));
  const okBody = (await env.request('GET', '/v1/account', { key: org.api_key })).body;
  t.notOk(acct({ data: { ...okBody.data, extra: 1 } }), 'an extra snapshot field would not match');
});
