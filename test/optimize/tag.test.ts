// Serving the tag: size with config, caching (ETag, max-age), CORS, verification by Origin/Referer, unknown keys.
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { httpCall, testEnv } from '../helpers/env.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ org: 'Tag Serve Co' });
const key = org.api_key;
const prop = (await env.request('POST', '/v1/optimize/properties', { key, body: { domain: 'www.example.com' } })).body.data;
const tag = (headers: Record<string, string> = {}, k = prop.public_key) => httpCall(env.url, 'GET', `/v1/optimize/tag.js?k=${k}`, { headers });

t.test('a page with a few tests: at most 6 KB gzipped, cacheable, CORS-correct', async (t) => {
  for (let i = 0; i < 4; i++) {
    const r = await env.request('POST', '/v1/optimize/tests', { key, body: {
      name: `Test ${i}`, page_url: `https://www.example.com/page-${i}`, start: true,
      goal: i % 2 ? { type: 'url_visit', url_match_type: 'regex', url_pattern: '^https://www\\.example\\.com/thanks' } : { type: 'cta_click', selector: '.hero a.button' },
      variants: [{ name: 'Control' }, { name: 'B', ops: [
        { op: 'setText', selector: '.hero h1', value: 'A much better headline for the landing page of our store' },
        { op: 'setStyle', selector: '.hero a.button', property: 'background-color', value: '#0a7f3f' },
        { op: 'replaceHref', selector: '.hero a.button', value: 'https://www.example.com/checkout?plan=pro' },
      ] }, { name: 'C', ops: [{ op: 'hide', selector: '.testimonials' }, { op: 'addClass', selector: 'body', value: 'compact' }] }],
    } });
    t.equal(r.status, 201);
  }
  const r = await tag();
  t.equal(r.status, 200);
  t.match(r.headers['content-type'], /^application\/javascript/);
  t.equal(r.headers['cache-control'], 'public, max-age=60');
  t.equal(r.headers['access-control-allow-origin'], '*');
  t.equal(r.headers['x-content-type-options'], 'nosniff');
  t.ok(r.headers.etag);
  const gz = gzipSync(r.raw, { level: 9 }).length;
  t.ok(gz <= 6 * 1024, `gzipped with 4 tests of config: ${gz} bytes`);
  t.ok(r.text.includes(prop.public_key));
  const again = await tag({ 'if-none-match': r.headers.etag });
  t.equal(again.status, 304);
  t.equal(again.text, '');
  t.equal((await tag({}, 'olpk_unknownkey')).status, 404);
  t.equal((await tag({}, '../../etc')).status, 404);
});

t.test('verified_at: only from a page on the domain (Origin or Referer)', async (t) => {
  const verified = async () => (await env.request('GET', '/v1/optimize/properties', { key })).body.data[0].verified_at;
  await tag();
  t.equal(await verified(), null, 'no Origin or Referer');
  await tag({ referer: 'https://evil.example.net/page' });
  await tag({ referer: 'https://notwww.example.com/' });
  t.equal(await verified(), null, 'another domain');
  await new Promise((r) => setTimeout(r, 1100)); // the property cache
  await tag({ referer: 'https://www.example.com/landing?x=1' });
  const at = await verified();
  t.ok(at, 'set from the domain');
  await new Promise((r) => setTimeout(r, 1100));
  await tag({ referer: 'https://shop.www.example.com/' });
  t.equal(await verified(), at, 'set once');
});

t.test('the script carries no markup that could end its own script element', async (t) => {
  const r = await env.request('POST', '/v1/optimize/tests', { key, body: {
    name: 'Breakout', page_url: 'https://www.example.com/x', start: true, goal: { type: 'form_submit' },
    variants: [{ name: 'A' }, { name: 'B', ops: [{ op: 'setText', selector: 'h1', value: '</script><script>alert(1)</script>' }] }],
  } });
  t.equal(r.status, 201);
  await new Promise((res) => setTimeout(res, 1100));
  const js = (await tag()).text;
  t.notOk(/<\/script/i.test(js), 'no </script> in the served tag');
  t.ok(js.includes('\\u003c/script>'), 'the text is escaped');
});

t.test('the collector answers a CORS preflight', async (t) => {
  const r = await httpCall(env.url, 'OPTIONS', '/v1/optimize/collect', { headers: { origin: 'https://www.example.com',
    'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
  t.equal(r.status, 204);
  t.equal(r.headers['access-control-allow-origin'], '*');
  t.equal(r.headers['access-control-allow-methods'], 'POST');
  t.equal(r.headers['access-control-allow-headers'], 'content-type');
});
