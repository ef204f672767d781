// /healthz, /readyz (Postgres and Redis reachable, 503 when either is not; the result is kept about a second) and
// /metrics (Prometheus text: http_requests_total by method, route template and status; the latency histogram).
import { Type } from '@sinclair/typebox';
import t from 'tap';
import { startGateway } from '../../gateway/app.ts';
import type { Plugin } from '../../gateway/http/types.ts';
import { createLogger } from '../../shared/log.ts';
import { eventually, httpCall, testEnv } from '../helpers/env.ts';

const items: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/test/items/{id}', scope: 'account:read', tag: 'Test', summary: 'Test-only.',
    params: Type.Object({ id: Type.Integer() }),
    response: { status: 200 },
    handler: async ({ params }) => ({ status: 200, body: { data: { id: params.id } } }),
  });
};

const env = await testEnv(t, { plugins: [items] });
const org = await env.bootstrap({ scopes: ['account:read'] });

interface Sample { name: string; labels: Record<string, string>; value: number }

/** Parses the Prometheus text exposition format (samples only), checking each line's syntax. */
function parseProm(text: string): { samples: Sample[]; types: Record<string, string> } {
  const samples: Sample[] = [];
  const types: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const ty = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (ty) { types[ty[1]] = ty[2]; continue; }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!m) throw new Error(`bad exposition line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g;
      let consumed = 0;
      for (const l of m[2].matchAll(re)) { labels[l[1]] = l[2]; consumed += l[0].length; }
      if (consumed !== m[2].length) throw new Error(`bad labels: ${line}`);
    }
    samples.push({ name: m[1], labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return { samples, types };
}

async function metrics() {
  const r = await env.request('GET', '/metrics');
  t.equal(r.status, 200);
  return parseProm(r.text);
}
const find = (s: Sample[], name: string, labels: Record<string, string>) =>
  s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
const requestsTotal = (s: Sample[], route: string, status: string) =>
  find(s, 'http_requests_total', { method: 'GET', route, status }).reduce((a, x) => a + x.value, 0);

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
  const g = await startGateway({ config: env.config, log: createLogger('gateway', 'silent') });
  t.teardown(() => g.close().catch(() => undefined));
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

  const r = await env.request('GET', '/metrics');
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
