// The staged pipeline (shared/http/pipeline.ts): each route's stages are compiled once at registration and a route
// carries only the stages it needs (no authentication on a public route, no idempotency on a GET, deprecation only
// on a deprecated route); a cached credential goes through every stage before the handler without a promise; and
// media's control API, on the same router, body reader and envelope, answers 401/404/405/413 in the gateway's
// error envelope.
import { Type } from '@sinclair/typebox';
import t from 'tap';
import type { Plugin } from '../../gateway/http/types.ts';
import { ApiRequest } from '../../gateway/http/stages/state.ts';
import { Pipeline, runStages, type Stage } from '../../shared/http/pipeline.ts';
import { httpCall, testEnv } from '../helpers/env.ts';
import { startMedia } from '../media/helpers.ts';

const Pong = Type.Object({ pong: Type.Boolean() });

const testRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/test/public-ping', scope: null, tag: 'Test', summary: 'Test-only public route.',
    response: { status: 200, schema: Pong }, handler: async () => ({ status: 200, body: { pong: true } }),
  });
  routes.add({
    method: 'GET', path: '/v1/test/old-ping', scope: 'account:read', tag: 'Test', summary: 'Test-only deprecated route.',
    deprecated: { since: new Date('2026-01-01T00:00:00Z'), sunset: new Date('2027-01-01T00:00:00Z'), link: 'https://example.test/sunset' },
    response: { status: 200, schema: Pong }, handler: async () => ({ status: 200, body: { pong: true } }),
  });
};

const env = await testEnv(t, { plugins: [testRoutes] });
const org = await env.bootstrap({ scopes: ['account:read', 'calls:write'] });
const gateway = env.gateway!.gateway;

t.test('each route keeps only the stages it needs, in request order', async (t) => {
  const names = (method: string, path: string) => gateway.pipeline.stageNames(method, path);
  t.same(names('GET', '/v1/test/public-ping'), ['validate', 'handler'], 'a public route: no auth, admission or scope');
  t.same(names('GET', '/v1/account'), ['auth', 'admission', 'scope', 'validate', 'handler'], 'a GET: no idempotency, no broadcast');
  t.same(names('POST', '/v1/calls'),
    ['auth', 'admission', 'scope', 'validate', 'idempotency', 'handler', 'idempotency-record', 'broadcast'],
    'an idempotent POST: claim before the handler, record and broadcast after it (no fault hook unless configured)');
  t.same(names('GET', '/v1/test/old-ping'), ['auth', 'admission', 'scope', 'validate', 'handler', 'deprecation']);
  t.equal(names('GET', '/v1/nothing-here'), undefined);
});

t.test('the stages are compiled once: the same list serves every request', async (t) => {
  const route = gateway.router.routes.find((r) => r.method === 'GET' && r.path === '/v1/account')!;
  t.equal(gateway.pipeline.stagesOf(route), gateway.pipeline.stagesOf(route));
  const first = await httpCall(env.url, 'GET', '/v1/account', { key: org.api_key });
  t.equal(first.status, 200);
  t.equal(first.headers['x-ratelimit-limit'], '600', 'admission ran');
  const old = await httpCall(env.url, 'GET', '/v1/test/old-ping', { key: org.api_key });
  t.equal(old.status, 200);
  t.match(old.headers.deprecation, /^@\d+$/, 'the deprecation stage ran');
  const pub = await httpCall(env.url, 'GET', '/v1/test/public-ping');
  t.same([pub.status, pub.body], [200, { pong: true }]);
  t.equal(pub.headers['x-ratelimit-limit'], undefined, 'a public route has no admission stage');
});

t.test('a cached credential passes every stage before the handler without a promise', async (t) => {
  const route = gateway.router.routes.find((r) => r.method === 'GET' && r.path === '/v1/account')!;
  await httpCall(env.url, 'GET', '/v1/account', { key: org.api_key }); // caches the key and leases rate tokens
  const x = new ApiRequest({ method: 'GET', path: '/v1/account', query: '', headers: { authorization: `Bearer ${org.api_key}` }, remote: '127.0.0.1' }, null, false);
  x.route = route;
  const before = gateway.pipeline.stagesOf(route).filter((s) => s.name !== 'handler');
  for (const stage of before) t.equal(stage.run(x), undefined, `${stage.name} answered synchronously`);
  t.equal(x.principal?.organizationId, org.organization_id);
});

t.test('runStages goes on synchronously until a stage escapes into a promise', async (t) => {
  const seen: string[] = [];
  const sync = (name: string): Stage<string[]> => ({ name, run: (x) => { x.push(name); } });
  const later = (name: string): Stage<string[]> => ({ name, run: (x) => Promise.resolve().then(() => { x.push(name); }) });
  t.equal(runStages([sync('a'), sync('b')], seen), undefined);
  t.same(seen, ['a', 'b']);
  const pending = runStages([sync('c'), later('d'), sync('e')], seen);
  t.ok(pending instanceof Promise);
  t.same(seen, ['a', 'b', 'c'], 'stages after the escape wait for it');
  await pending;
  t.same(seen, ['a', 'b', 'c', 'd', 'e']);
  const boom = new Error('stop');
  t.throws(() => runStages([sync('f'), { name: 'g', run: () => { throw boom; } }, sync('h')], seen), boom);
  t.notOk(seen.includes('h'), 'a failing stage ends the list');
  const p = new Pipeline<{ method: string; path: string; open?: boolean }, string[]>([
    (r) => (r.open ? undefined : sync('guard')), () => sync('handler')]);
  p.add({ method: 'GET', path: '/a', open: true });
  p.add({ method: 'GET', path: '/b/{id}' });
  t.same(p.stageNames('GET', '/a'), ['handler']);
  t.same(p.stageNames('GET', '/b/{id}'), ['guard', 'handler']);
  t.match(p.match('GET', '/b/x%20y'), { params: { id: 'x y' } });
  t.same(p.match('POST', '/b/1'), { allowed: ['GET'] });
});

t.test("media's control API answers on the shared router and envelope", async (t) => {
  const media = await startMedia(t);
  const auth = { authorization: `Bearer ${media.secret}` };
  const gw404 = await httpCall(env.url, 'GET', '/v1/nothing-here', { key: org.api_key });
  t.equal(gw404.status, 404);

  const stranger = await httpCall(media.url, 'GET', '/v1/nothing-here');
  t.equal(stranger.status, 401, 'without the secret nothing about the paths is told');
  t.equal(stranger.body.error.code, 'unauthorized');

  const missing = await httpCall(media.url, 'GET', '/v1/nothing-here', { headers: auth });
  t.equal(missing.status, 404);
  t.match(missing.headers['content-type'], /^application\/json/);
  t.same(Object.keys(missing.body), ['error']);
  t.same(Object.keys(missing.body.error), ['code', 'message']);
  t.equal(missing.body.error.code, 'not_found');
  for (const k of Object.keys(missing.body.error)) t.type(gw404.body.error[k], 'string', `the gateway's envelope has ${k} too`);

  const wrongMethod = await httpCall(media.url, 'PUT', '/v1/sessions', { headers: auth });
  t.equal(wrongMethod.status, 405);
  t.equal(wrongMethod.headers.allow, 'POST, GET', 'Allow lists the methods of the path, like the gateway');
  t.equal(wrongMethod.body.error.code, 'method_not_allowed');
  const gw405 = await httpCall(env.url, 'PUT', '/v1/account', { key: org.api_key });
  t.equal(gw405.status, 405);
  t.ok(gw405.headers.allow, 'the gateway sends Allow as well');

  const big = await httpCall(media.url, 'POST', '/v1/sessions', { headers: auth, body: { callId: 'x'.repeat(70_000) } });
  t.equal(big.status, 413);
  t.same(big.body, { error: { code: 'payload_too_large', message: 'the body exceeds 65536 bytes' } });

  const bad = await httpCall(media.url, 'POST', '/v1/sessions', { headers: auth, rawBody: '{nope', });
  t.equal(bad.status, 400);
  t.same(bad.body.error.fields, { body: 'is not valid JSON' });

  const health = await httpCall(media.url, 'GET', '/healthz');
  t.equal(health.status, 200, '/healthz needs no secret');
  t.match(health.body, { status: 'ok', proc: 'media' });
});
