// /healthz, /readyz (Postgres and Redis reachable, 503 when either is not; the result is kept about a second) and
// /metrics (Prometheus text: http_requests_total by method, route template and status; the latency histogram; call
// transitions applied by the gateway), served on the admin listener (METRICS_PORT), not on the public API port, and
// behind METRICS_TOKEN when it is set.
import { Type } from '@sinclair/typebox';
import t from 'tap';
import { startGateway } from '../../gateway/start.ts';
import type { Plugin } from '../../gateway/http/types.ts';
import { createLogger } from '../../shared/log.ts';
import { eventually, httpCall, testEnv } from '../helpers/env.ts';
import { assertMetricsRefused, find, parseProm, scrape, total, type Sample } from '../helpers/prometheus.ts';

/** The success envelope of this file's test-only routes (checked by the suite's response check). */
const Data = Type.Object({ data: Type.Object({}) });

const items: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/test/items/{id}', scope: 'account:read', tag: 'Test', summary: 'Test-only.',
    params: Type.Object({ id: Type.Integer() }),
    response: { status: 200, schema: Data },
    handler: async ({ params }) => ({ status: 200, body: { data: { id: params.id } } }),
  });
};

const env = await testEnv(t, { plugins: [items] });
const org = await env.bootstrap({ scopes: ['account:read'] });

async function metrics() {
  return scrape(env.gateway!.metricsUrl);
}
const requestsTotal = (s: Sample[], route: string, status: string) => total(s, 'http_requests_total', { method: 'GET', route, status });

t.test('/healthz: the process is up', async (t) => {
  const r = await env.request('GET', '/healthz');
  t.equal(r.status, 200);
  t.same(r.body, { status: 'ok' });
});

t.test('/readyz: Postgres and Redis reachable', async (t) => {
  const r = await env.request('GET', '/readyz');
  t.equal(r.status, 200);
  t.same(r.body, { status: 'ready', postgres: 'ok', redis: 'ok' });
});

t.test('/readyz: 503 when Redis or Postgres is unreachable', async (t) => {
  const g = await startGateway(env.config, createLogger('gateway', 'silent'));
  t.teardown(() => g.stop().catch(() => undefined));
  t.equal((await httpCall(g.url, 'GET', '/readyz')).status, 200, 'ready at first');
  g.redis.disconnect();
  // The checks' result is kept for about a second: poll until the cached "ready" has lapsed.
  const noRedis = await eventually(async () => { const r = await httpCall(g.url, 'GET', '/readyz'); return r.status === 503 ? r : null; }, 10_000);
  t.same(noRedis.body, { status: 'not_ready', postgres: 'ok', redis: 'down' });
  g.db.$pool.on('error', () => undefined);
  await g.db.$pool.end();
  const neither = await eventually(async () => {
    const r = await httpCall(g.url, 'GET', '/readyz');
    return r.body?.postgres === 'down' ? r : null;
  }, 10_000);
  t.equal(neither.status, 503);
  t.same(neither.body, { status: 'not_ready', postgres: 'down', redis: 'down' });
  t.equal((await httpCall(g.url, 'GET', '/healthz')).status, 200, '/healthz only says the process is up');
});

t.test('/metrics: requests by route and status, and the latency histogram', async (t) => {
  const before = (await metrics()).samples;
  for (let i = 0; i < 3; i++) t.equal((await env.request('GET', '/v1/account', { key: org.api_key })).status, 200);
  t.equal((await env.request('GET', '/v1/account')).status, 401);
  t.equal((await env.request('GET', '/v1/test/items/1', { key: org.api_key })).status, 200);
  t.equal((await env.request('GET', '/v1/test/items/2', { key: org.api_key })).status, 200);
  t.equal((await env.request('GET', '/v1/no-such-thing', { key: org.api_key })).status, 404);

  const r = await httpCall(env.gateway!.metricsUrl, 'GET', '/metrics');
  t.equal(r.status, 200);
  t.match(r.headers['content-type'], /^text\/plain/, 'Prometheus text format');
  const { samples, types } = parseProm(r.text);
  t.equal(types.http_requests_total, 'counter');
  t.equal(types.http_request_duration_seconds, 'histogram');

  t.equal(requestsTotal(samples, '/v1/account', '200') - requestsTotal(before, '/v1/account', '200'), 3, 'three 200s on /v1/account');
  t.equal(requestsTotal(samples, '/v1/account', '401') - requestsTotal(before, '/v1/account', '401'), 1, 'one 401');
  t.equal(requestsTotal(samples, '/v1/test/items/{id}', '200') - requestsTotal(before, '/v1/test/items/{id}', '200'), 2,
    'labelled by route template, not by raw path');
  t.notOk(samples.some((s) => s.labels.route === '/v1/test/items/1'), 'no per-id series');
  t.ok(requestsTotal(samples, 'unmatched', '404') >= 1, 'unknown paths share one label');

  const buckets = find(samples, 'http_request_duration_seconds_bucket', { method: 'GET', route: '/v1/account' });
  t.ok(buckets.length >= 5, 'several buckets');
  const les = buckets.map((b) => (b.labels.le === '+Inf' ? Infinity : Number(b.labels.le)));
  t.ok(les.every((le, i) => i === 0 || le > les[i - 1]), 'bucket bounds ascend');
  t.ok(buckets.every((b, i) => i === 0 || b.value >= buckets[i - 1].value), 'buckets are cumulative');
  const count = find(samples, 'http_request_duration_seconds_count', { method: 'GET', route: '/v1/account' })[0];
  const sum = find(samples, 'http_request_duration_seconds_sum', { method: 'GET', route: '/v1/account' })[0];
  t.equal(buckets[buckets.length - 1].labels.le, '+Inf');
  t.equal(buckets[buckets.length - 1].value, count.value, '+Inf bucket equals _count');
  t.ok(count.value >= 4, '_count covers every request to the route');
  t.ok(sum.value > 0 && sum.value < count.value * 5, '_sum is in seconds');
});

t.test('/metrics is not on the public API port: it is not an API route', async (t) => {
  const r = await env.request('GET', '/metrics');
  t.equal(r.status, 404);
  t.equal(r.body?.error?.code, 'not_found');
  t.notMatch(r.text, /http_requests_total/);
});

t.test('the admin listener answers /healthz and /readyz as well', async (t) => {
  const h = await httpCall(env.gateway!.metricsUrl, 'GET', '/healthz');
  t.equal(h.status, 200);
  t.match(h.body, { status: 'ok', proc: 'gateway' });
  const r = await httpCall(env.gateway!.metricsUrl, 'GET', '/readyz');
  t.equal(r.status, 200);
  t.same(r.body, { status: 'ready', postgres: 'ok', redis: 'ok' });
});

t.test('call transitions applied by the gateway are counted (a queued call hung up)', async (t) => {
  const caller = await env.bootstrap();
  const key = (labels: Record<string, string>) => async () => total((await metrics()).samples, 'openline_call_transitions_total', labels);
  const canceled = key({ from: 'QUEUED', to: 'CANCELED' });
  const before = await canceled();
  // No workers run in this file: the call stays QUEUED until the hang-up, which the gateway applies itself.
  const dial = await env.request('POST', '/v1/calls/dial', { key: caller.api_key,
    body: { from_number: caller.phone_numbers[0], to_number: '+14155550123', connect_number: '+14155550124' } });
  t.equal(dial.status, 202, 'dial accepted');
  const hangup = await env.request('POST', `/v1/calls/${dial.body.data.call_id}/hangup`, { key: caller.api_key });
  t.equal(hangup.status, 200, 'hang-up applied');
  t.equal(await canceled() - before, 1, 'one QUEUED -> CANCELED transition');
  t.equal((await metrics()).types.openline_call_transitions_total, 'counter');
  await env.request('POST', `/v1/calls/${dial.body.data.call_id}/hangup`, { key: caller.api_key });
  t.equal(await canceled() - before, 1, 'a second hang-up changes nothing and is not counted');
});

t.test('METRICS_TOKEN: /metrics needs the bearer token; health checks do not', async (t) => {
  const token = 'metrics-token-0123456789abcdef';
  const g = await startGateway({ ...env.config, metrics: { host: '127.0.0.1', port: 0, token } }, createLogger('gateway', 'silent'));
  t.teardown(() => g.stop().catch(() => undefined));
  t.not(g.metricsUrl, g.url, 'its own listener');
  await assertMetricsRefused(t, g.metricsUrl, [undefined, 'Bearer wrong-token-0123456789abcd', token, `Basic ${token}`]);
  const ok = await scrape(g.metricsUrl, token);
  t.ok(find(ok.samples, 'process_cpu_user_seconds_total').length, 'the process metrics with the token');
  t.equal((await httpCall(g.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${token}` } })).status, 404,
    'still nothing on the public port');
  t.equal((await httpCall(g.metricsUrl, 'GET', '/healthz')).status, 200);
  t.equal((await httpCall(g.metricsUrl, 'GET', '/readyz')).status, 200);
});
