// The Host header is reflected only when it is a valid host[:port]: WWW-Authenticate (401 and 403), the OpenAPI
// `servers`, the protected-resource metadata and the Link of a deprecated spelling. A hostile Host falls back to the
// listen address; PUBLIC_URL wins over any Host. (recording_url: test/calls/recording-stream.test.ts.)
import t from 'tap';
import { testEnv, httpCall, type Response } from '../helpers/env.ts';
import { parseChallenge } from '../helpers/header-syntax.ts';
import type { TapTest } from '../helpers/pool.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ scopes: ['account:read', 'calls:write'], numbers: 1 });
const listen = env.url; // http://127.0.0.1:<port>

const HOSTILE = ['evil.example", error="x', 'evil.example/x?y', 'evil.example:99999', 'a,b', 'evil.example:80:80', '[::1', 'e\\vil'];
const VALID: [string, string][] = [['api.example.com:8443', 'http://api.example.com:8443'], ['[::1]:8080', 'http://[::1]:8080'],
  ['192.0.2.7', 'http://192.0.2.7']];

/** Every place the base URL is reflected, seen through one Host (and optional extra headers). */
async function reflected(base: string, host: string, extra: Record<string, string> = {}) {
  const headers = { host, ...extra };
  const unauth = await httpCall(base, 'GET', '/v1/account', { headers });
  const scope = await httpCall(base, 'GET', '/v1/agents', { key: org.api_key, headers });
  const doc = await httpCall(base, 'GET', '/v1/openapi.json', { headers });
  const meta = await httpCall(base, 'GET', '/.well-known/oauth-protected-resource', { headers });
  return { unauth, scope, doc, meta };
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

t.test('a hostile Host is never reflected', async (t) => {
  for (const host of HOSTILE) {
    const r = await reflected(env.url, host);
    t.equal(challengeBase(t, r.unauth, 401, null), listen, `${host}: 401 challenge names the listen address`);
    t.equal(challengeBase(t, r.scope, 403, 'insufficient_scope'), listen, `${host}: 403 challenge names the listen address`);
    t.same(r.doc.body.servers.map((s: { url: string }) => s.url), [listen], `${host}: OpenAPI servers`);
    t.equal(r.meta.body.resource, listen, `${host}: resource metadata`);
    for (const x of [r.unauth, r.scope, r.doc, r.meta]) t.notMatch(x.text + JSON.stringify(x.headers), /evil/, `${host}: nothing of it echoed`);
  }
});

t.test('a valid Host is used (and X-Forwarded-Proto: https)', async (t) => {
  for (const [host, base] of VALID) {
    const r = await reflected(env.url, host);
    t.equal(challengeBase(t, r.unauth, 401, null), base, `${host}: challenge`);
    t.same(r.doc.body.servers.map((s: { url: string }) => s.url), [base], `${host}: servers`);
    t.equal(r.meta.body.resource, base);
  }
  const https = await reflected(env.url, 'api.example.com', { 'x-forwarded-proto': 'https' });
  t.same(https.doc.body.servers.map((s: { url: string }) => s.url), ['https://api.example.com']);
});

t.test('the Link of a deprecated spelling', async (t) => {
  const r = await httpCall(env.url, 'POST', '/v1/calls', { key: org.api_key, headers: { host: HOSTILE[0] },
    body: { caller_id: org.phone_numbers[0], destination: '+14155550001', agent: { greeting: 'Hi.' } } });
  t.equal(r.status, 202, r.text);
  t.equal(r.headers.link, `<${listen}/v1/openapi.json>; rel="sunset"`);
});

t.test('PUBLIC_URL wins over any Host; its quotes are escaped in the challenge', async (t) => {
  const gw = env.spawn('gateway', { PUBLIC_URL: 'https://api.example.test/"q\\' });
  await gw.ready();
  const url = /"url":"([^"]+)"/.exec(gw.output)![1];
  for (const host of [HOSTILE[0], VALID[0][0]]) {
    const r = await reflected(url, host);
    t.equal(challengeBase(t, r.unauth, 401, null), 'https://api.example.test/"q\\', `${host}: challenge carries PUBLIC_URL, escaped`);
    t.match(r.unauth.headers['www-authenticate'], /resource_metadata="https:\/\/api\.example\.test\/\\"q\\\\\/\.well-known/);
    t.same(r.doc.body.servers.map((s: { url: string }) => s.url), ['https://api.example.test/"q\\']);
  }
  await gw.kill();
});
