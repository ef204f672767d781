// The suite's response check (RESPONSE_SCHEMA_CHECK=1, set for every test by test/helpers/env.ts): an answer that
// is not what its route declares for that status becomes a 500 internal_error, so the test that made the request
// fails; answers as declared pass unchanged. Off, the same answers go out as the handler made them.
import { Type } from '@sinclair/typebox';
import t from 'tap';
import { DomainError } from '../../shared/errors.ts';
import type { Plugin } from '../../gateway/http/types.ts';
import { testEnv } from '../helpers/env.ts';

const Thing = Type.Object({ data: Type.Object({ id: Type.Integer(), name: Type.String() }) });

// The wrong bodies are cast (as never): the compiler would refuse them, and the point is the check at run time.
const routes: Plugin = (r) => {
  r.add({ method: 'GET', path: '/v1/test/check/right', scope: 'account:read', tag: 'Test', summary: 'As declared.',
    response: { status: 200, schema: Thing }, handler: async () => ({ status: 200, body: { data: { id: 1, name: 'a' } } }) });
  r.add({ method: 'GET', path: '/v1/test/check/wrong-type', scope: 'account:read', tag: 'Test', summary: 'id is a string.',
    response: { status: 200, schema: Thing }, handler: async () => ({ status: 200, body: { data: { id: '1', name: 'a' } } as never }) });
  r.add({ method: 'GET', path: '/v1/test/check/missing', scope: 'account:read', tag: 'Test', summary: 'name is missing.',
    response: { status: 200, schema: Thing }, handler: async () => ({ status: 200, body: { data: { id: 1 } } as never }) });
  r.add({ method: 'GET', path: '/v1/test/check/other-status', scope: 'account:read', tag: 'Test', summary: 'Answers 201.',
    response: { status: 200, schema: Thing }, handler: async () => ({ status: 201, body: { data: { id: 1, name: 'a' } } }) });
  r.add({ method: 'GET', path: '/v1/test/check/no-schema', scope: 'account:read', tag: 'Test', summary: 'Declares no body.',
    response: { status: 200 }, handler: async () => ({ status: 200, body: { data: {} } }) });
  r.add({ method: 'DELETE', path: '/v1/test/check/gone', scope: 'account:read', tag: 'Test', summary: 'A 204.',
    response: { status: 204 }, handler: async () => ({ status: 204 }) });
  r.add({ method: 'GET', path: '/v1/test/check/declared-error', scope: 'account:read', tag: 'Test', summary: 'A declared code.',
    response: { status: 200, schema: Thing }, errors: ['number_unavailable'],
    handler: async () => { throw new DomainError('number_unavailable', 'Held.'); } });
  r.add({ method: 'GET', path: '/v1/test/check/undeclared-error', scope: 'account:read', tag: 'Test', summary: 'An undeclared code.',
    response: { status: 200, schema: Thing }, handler: async () => { throw new DomainError('number_unavailable', 'Held.'); } });
};

const mismatch = /did not match its declared schema/;

t.test('with the check on (the suite)', async (t) => {
  const env = await testEnv(t, { plugins: [routes] });
  t.equal(env.config.faults.responseSchemaCheck, true, 'test/helpers/env.ts turns it on');
  const { api_key: key } = await env.bootstrap({ scopes: ['account:read'] });
  const right = await env.request('GET', '/v1/test/check/right', { key });
  t.equal(right.status, 200);
  t.same(right.body, { data: { id: 1, name: 'a' } }, 'a body as declared passes unchanged');
  for (const path of ['wrong-type', 'missing', 'other-status', 'no-schema', 'undeclared-error']) {
    const r = await env.request('GET', `/v1/test/check/${path}`, { key });
    t.equal(r.status, 500, `${path}: 500`);
    t.equal(r.body.error.code, 'internal_error', `${path}: internal_error`);
    t.match(r.body.error.message, mismatch, `${path}: says why`);
    t.ok(r.headers['x-request-id'], `${path}: keeps its request id`);
  }
  const declared = await env.request('GET', '/v1/test/check/declared-error', { key });
  t.equal(declared.status, 409, 'a declared error code passes');
  t.equal(declared.body.error.code, 'number_unavailable');
  const gone = await env.request('DELETE', '/v1/test/check/gone', { key });
  t.equal(gone.status, 204, 'an empty 204 passes');
  t.equal(gone.text, '');
  const scope = await env.request('GET', '/v1/test/check/right', { key: (await env.bootstrap({ scopes: ['calls:read'] })).api_key });
  t.equal(scope.status, 403, 'the pipeline\'s own codes are declared on every route');
  const unknown = await env.request('GET', '/v1/test/check/nowhere', { key });
  t.equal(unknown.status, 404, 'an unrouted request answers its envelope');
  t.equal(unknown.body.error.code, 'not_found');
});

t.test('with the check off (production)', async (t) => {
  const env = await testEnv(t, { plugins: [routes], env: { RESPONSE_SCHEMA_CHECK: '0' } });
  const { api_key: key } = await env.bootstrap({ scopes: ['account:read'] });
  const r = await env.request('GET', '/v1/test/check/wrong-type', { key });
  t.equal(r.status, 200, 'nothing is checked');
  t.same(r.body, { data: { id: '1', name: 'a' } });
});
