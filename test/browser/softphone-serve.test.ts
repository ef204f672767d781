// The gateway serves the softphone page and its SDK bundle: content types, cache headers, ETag and 304, the default
// signaling URL filled into the page; and the bundle builds from sdk/.
import { mkdtemp, readdir, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildSdk, SDK_FILES, SDK_SOURCE_DIR, sdkIsStale } from '../../infra/build-sdk.ts';
import { loadConfig } from '../../shared/config.ts';
import { testEnv } from '../helpers/env.ts';

const SIGNALING = 'wss://signal.example.test/v1/softphone';
const env = await testEnv(t, { env: { SIGNALING_PUBLIC_URL: SIGNALING } });

t.test('GET /softphone: the page, cacheable for five minutes, with the signaling URL filled in', async (t) => {
  const r = await env.request('GET', '/softphone');
  t.equal(r.status, 200);
  t.equal(r.headers['content-type'], 'text/html; charset=utf-8');
  t.equal(r.headers['cache-control'], 'public, max-age=300');
  t.match(r.headers.etag, /^"[A-Za-z0-9_-]{22}"$/);
  t.match(r.headers['content-security-policy'], /script-src 'self'/);
  t.equal(r.headers['referrer-policy'], 'no-referrer', 'a ticket in the URL never leaks as a referrer');
  t.match(r.text, `<meta name="openline-signaling" content="${SIGNALING}">`);
  t.notMatch(r.text, /\{\{/, 'every placeholder filled');
  t.notMatch(r.text, /https?:\/\/(?!127\.0\.0\.1)/, 'no external resources');
  const script = /<script src="(\/softphone\/sdk\.js\?v=[\w-]+)"><\/script>/.exec(r.text);
  t.ok(script, 'the page loads the versioned bundle');
  const js = await env.request('GET', script![1]);
  t.equal(js.status, 200, 'the versioned URL serves the bundle');
});

t.test('GET /softphone: If-None-Match answers 304 without a body', async (t) => {
  const first = await env.request('GET', '/softphone');
  const etag = first.headers.etag;
  for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
    const r = await env.request('GET', '/softphone', { headers: { 'if-none-match': inm } });
    t.equal(r.status, 304, `If-None-Match: ${inm}`);
    t.equal(r.raw.length, 0);
    t.equal(r.headers.etag, etag);
    t.equal(r.headers['cache-control'], 'public, max-age=300');
  }
  const changed = await env.request('GET', '/softphone', { headers: { 'if-none-match': '"stale"' } });
  t.equal(changed.status, 200, 'another tag gets the page');
  t.equal(changed.text, first.text);
});

t.test('GET /softphone/sdk.js and its assets: long-cached, with ETags', async (t) => {
  const js = await env.request('GET', '/softphone/sdk.js');
  t.equal(js.status, 200);
  t.equal(js.headers['content-type'], 'application/javascript; charset=utf-8');
  t.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable');
  t.equal(js.headers['x-content-type-options'], 'nosniff');
  t.match(js.text, /var Openline=/, 'the bundle defines the Openline global');
  t.match(js.text, /sourceMappingURL=sdk\.js\.map/);
  t.ok(js.raw.length > 50_000, 'mediasoup-client is bundled in');
  const again = await env.request('GET', '/softphone/sdk.js', { headers: { 'if-none-match': js.headers.etag } });
  t.equal(again.status, 304);
  t.equal(again.raw.length, 0);

  const css = await env.request('GET', '/softphone/softphone.css');
  t.equal(css.status, 200);
  t.equal(css.headers['content-type'], 'text/css; charset=utf-8');
  const map = await env.request('GET', '/softphone/sdk.js.map');
  t.equal(map.status, 200);
  t.ok(JSON.parse(map.text).sources.some((s: string) => s.endsWith('sdk/softphone.ts')), 'the source map names the SDK sources');
  t.not(js.headers.etag, css.headers.etag);
});

t.test('the default signaling URL: the page host and SIGNALING_PORT when SIGNALING_PUBLIC_URL is unset', async (t) => {
  const { signalingUrlFor } = await import('../../gateway/routes/softphone.ts');
  t.equal(signalingUrlFor(loadConfig({ SIGNALING_PORT: '9181' })), 'ws://{host}:9181/v1/softphone');
  t.equal(signalingUrlFor(loadConfig({ SIGNALING_PUBLIC_URL: SIGNALING })), SIGNALING);
  t.throws(() => loadConfig({ SIGNALING_PUBLIC_URL: 'https://signal.example.test' }), /SIGNALING_PUBLIC_URL must be a ws/);
});

t.test('the bundle builds from sdk/ and is rebuilt when a source is newer', async (t) => {
  const out = await mkdtemp(join(tmpdir(), 'ol-sdk-'));
  t.teardown(() => rm(out, { recursive: true, force: true }));
  t.ok(await sdkIsStale(out), 'an empty folder is stale');
  await buildSdk(out);
  t.same((await readdir(out)).sort(), [...SDK_FILES].sort(), 'exactly the served files, no temporary leftovers');
  t.notOk(await sdkIsStale(out), 'fresh after a build');
  await utimes(join(out, 'sdk.js'), new Date(0), new Date(0));
  t.ok(await sdkIsStale(out), `stale when a source in ${SDK_SOURCE_DIR} is newer than the bundle`);
});
