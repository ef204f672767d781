// No URL is ever built from a request: whatever Host, X-Forwarded-Host or X-Forwarded-Proto a client sends, every
// absolute URL in an answer names PUBLIC_URL, else the listen address — WWW-Authenticate (401 and 403), the OpenAPI
// `servers`, the protected-resource metadata, the Link of a deprecated spelling, the Optimize snippet, the publicly
// cached tag.js, the softphone and docs pages (recording_url: test/calls/recording-stream.test.ts). Without PUBLIC_URL
// the gateway says at start which base it uses.
import t from 'tap';
import { urlHost } from '../../gateway/http/public-url.ts';
import { testEnv, httpCall, type Response } from '../helpers/env.ts';
import { parseChallenge } from '../helpers/header-syntax.ts';
import type { TapTest } from '../helpers/pool.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ scopes: ['account:read', 'calls:write', 'optimize:read', 'optimize:write'], numbers: 1 });
const listen = env.url; // http://127.0.0.1:<port>
// Each round of answers() places a call (the deprecated spelling): room for all of them at once.
await env.db.none('UPDATE organizations SET channel_limit = 100, calls_per_minute = 600 WHERE id = $1', [org.organization_id]);
const property = (await env.request('POST', '/v1/optimize/properties', { key: org.api_key, body: { domain: 'shop.example.com' } })).body.data;

// Hostile values, and well-formed ones a shared cache would key on nothing but the path: neither may show up.
const HOSTS = ['evil.example", error="x', 'evil.example/x?y', 'a,b', 'e\\vil', 'evil.example', 'evil.example:8443',
  '[2001:db8::e]:8080', '192.0.2.66'];
const FORWARDED = { 'x-forwarded-host': 'evil-forwarded.example', 'x-forwarded-proto': 'https' };

/** Every answer that carries an absolute URL, asked with one Host (and optional extra headers). */
async function answers(base: string, host: string, extra: Record<string, string> = {}) {
  const headers = { host, ...extra };
  const unauth = await httpCall(base, 'GET', '/v1/account', { headers });
  const scope = await httpCall(base, 'GET', '/v1/agents', { key: org.api_key, headers });
  const doc = await httpCall(base, 'GET', '/v1/openapi.json', { headers });
  const meta = await httpCall(base, 'GET', '/.well-known/oauth-protected-resource', { headers });
  const snippet = await httpCall(base, 'GET', '/v1/optimize/snippet', { key: org.api_key, headers });
  const tag = await httpCall(base, 'GET', `/v1/optimize/tag.js?k=${property.public_key}`, { headers });
  const legacy = await httpCall(base, 'POST', '/v1/calls', { key: org.api_key, headers,
    body: { caller_id: org.phone_numbers[0], destination: '+14155550001', agent: { greeting: 'Hi.' } } });
  // Pages whose bytes are built once at start: nothing of a request may get into them either.
  const softphone = await httpCall(base, 'GET', '/softphone', { headers });
  const docs = await httpCall(base, 'GET', '/docs', { headers });
  return { unauth, scope, doc, meta, snippet, tag, legacy, softphone, docs };
}

function challengeBase(t: TapTest, r: Response, status: number, error: string | null): string {
  t.equal(r.status, status);
  const c = parseChallenge(r.headers['www-authenticate']);
  t.equal(c.scheme, 'Bearer');
  t.same(Object.keys(c.params).sort(), [...(error ? ['error', 'error_description'] : []), 'realm', 'resource_metadata',
    ...(error === 'insufficient_scope' ? ['scope'] : [])].sort(), 'exactly the parameters the gateway writes');
  if (error) t.equal(c.params.error, error);
  return c.params.resource_metadata.replace(/\/\.well-known\/oauth-protected-resource$/, '');
}

/** Each place names `base`, and nothing of the Host or forwarded headers appears anywhere in any answer. */
async function expectBase(t: TapTest, r: Awaited<ReturnType<typeof answers>>, base: string, label: string) {
  t.equal(challengeBase(t, r.unauth, 401, null), base, `${label}: 401 challenge`);
  t.equal(challengeBase(t, r.scope, 403, 'insufficient_scope'), base, `${label}: 403 challenge`);
  t.equal(r.doc.status, 200);
  t.same(r.doc.body.servers.map((s: { url: string }) => s.url), [base], `${label}: OpenAPI servers`);
  t.equal(r.meta.status, 200);
  t.equal(r.meta.body.resource, base, `${label}: resource metadata`);
  t.equal(r.meta.body.resource_documentation, `${base}/v1/openapi.json`);
  t.equal(r.snippet.status, 200, r.snippet.text);
  t.equal(r.snippet.body.data.script_tag, `<script src="${base}/v1/optimize/tag.js?k=${property.public_key}"></script>`, `${label}: snippet`);
  t.equal(r.tag.status, 200);
  t.equal(r.tag.headers['cache-control'], 'public, max-age=60', 'tag.js is cached publicly, so it must not vary by Host');
  t.ok(r.tag.text.includes(JSON.stringify(`${base}/v1/optimize/collect`)), `${label}: tag.js posts to ${base}`);
  t.equal(r.legacy.status, 202, r.legacy.text);
  t.equal(r.legacy.headers.link, `<${base}/v1/openapi.json>; rel="sunset"`, `${label}: Link of a deprecated spelling`);
  t.equal(r.softphone.status, 200);
  t.equal(r.docs.status, 200);
  for (const x of Object.values(r)) {
    t.notMatch(x.text + JSON.stringify(x.headers), /evil|2001:db8|192\.0\.2\.66/, `${label}: nothing of the request's host echoed`);
  }
}

t.test('no Host, valid or not, is reflected: every absolute URL names the listen address', async (t) => {
  for (const host of HOSTS) await expectBase(t, await answers(env.url, host), listen, host);
  await expectBase(t, await answers(env.url, 'evil.example', FORWARDED), listen, 'X-Forwarded-Host/Proto');
});

t.test('PUBLIC_URL wins over any Host; its quotes are escaped in the challenge; no warning at start', async (t) => {
  const gw = env.spawn('gateway', { PUBLIC_URL: 'https://api.example.test/"q\\' });
  t.teardown(() => gw.kill());
  await gw.ready();
  const url = /"url":"([^"]+)"/.exec(gw.output)![1];
  for (const host of [HOSTS[0], 'api.example.com:8443']) {
    const r = await answers(url, host, FORWARDED);
    t.equal(challengeBase(t, r.unauth, 401, null), 'https://api.example.test/"q\\', `${host}: challenge carries PUBLIC_URL, escaped`);
    t.match(r.unauth.headers['www-authenticate'], /resource_metadata="https:\/\/api\.example\.test\/\\"q\\\\\/\.well-known/);
    t.same(r.doc.body.servers.map((s: { url: string }) => s.url), ['https://api.example.test/"q\\']);
    t.equal(r.legacy.headers.link, '<https://api.example.test/"q\\/v1/openapi.json>; rel="sunset"');
  }
  t.notMatch(gw.output, /PUBLIC_URL is unset/, 'no warning when PUBLIC_URL is set');
});

t.test('without PUBLIC_URL the gateway warns once at start, naming the base it uses; 0.0.0.0 renders as 127.0.0.1', async (t) => {
  const gw = env.spawn('gateway', { HOST: '0.0.0.0' });
  t.teardown(() => gw.kill());
  await gw.ready();
  const url = /"url":"([^"]+)"/.exec(gw.output)![1];
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, 'the unspecified address is shown as the loopback address');
  const warnings = gw.output.split('\n').filter((l) => l.includes('PUBLIC_URL is unset'));
  t.equal(warnings.length, 1, 'one warning line');
  const line = JSON.parse(warnings[0]);
  t.equal(line.level, 40, 'at warn');
  t.equal(line.base_url, url);
  t.match(line.msg, `name the listen address ${url}`);
  await expectBase(t, await answers(url, 'evil.example', FORWARDED), url, 'HOST=0.0.0.0');
});

t.test('how a listen address is written in a URL', async (t) => {
  t.equal(urlHost('0.0.0.0'), '127.0.0.1');
  t.equal(urlHost('::'), '[::1]');
  t.equal(urlHost('[::]'), '[::1]');
  t.equal(urlHost('::1'), '[::1]');
  t.equal(urlHost('2001:db8::5'), '[2001:db8::5]');
  t.equal(urlHost('10.0.0.5'), '10.0.0.5');
  t.equal(urlHost('api.internal'), 'api.internal');
});
