// GET /docs: the human-readable API reference. The page and its renderer (redoc's standalone bundle) are served by
// the gateway itself with the right content types and ETags, the page references nothing on another host, and in real
// Chromium (when installed) it renders every operation of /v1/openapi.json with no failed request and no request
// leaving the gateway.
import t from 'tap';
import { chromiumSkip, launchChromium, openPage, pageEventually } from '../helpers/browser.ts';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t);
const page = await env.request('GET', '/docs', { key: null });

/** Every src= and href= of the page. */
const refs = (html: string) => [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]);
const assetRefs = (html: string) => refs(html).filter((r) => !r.startsWith('data:'));

t.test('the page is HTML that references only local assets', async (t) => {
  t.equal(page.status, 200);
  t.match(page.headers['content-type'], /^text\/html; charset=utf-8/);
  t.ok(page.headers.etag, 'ETag');
  t.match(page.headers['content-security-policy'], /default-src 'none'/);
  t.match(page.headers['content-security-policy'], /script-src 'self'(;|$)/, 'scripts only from this origin');
  t.notMatch(page.text, /https?:\/\//, 'no absolute URL at all in the page');
  t.match(page.text, /spec-url="\/v1\/openapi.json"/, 'renders the served document');
  const list = refs(page.text);
  t.ok(list.length >= 2, `references its assets: ${list.join(', ')}`);
  for (const r of list) t.match(r, /^(\/docs\/assets\/|data:)/, `${r} is served here (or inline)`);
});

t.test('assets are served with their content type, ETag and cache headers', async (t) => {
  const types: Record<string, RegExp> = { '.js': /^application\/javascript/, '.css': /^text\/css/ };
  for (const r of assetRefs(page.text)) {
    const res = await env.request('GET', r, { key: null });
    t.equal(res.status, 200, `${r}: 200`);
    const ext = /\.(js|css)(\?|$)/.exec(r)![0].replace('?', '');
    t.match(res.headers['content-type'], types[ext], `${r}: content type`);
    t.equal(res.headers['x-content-type-options'], 'nosniff');
    t.ok(res.headers.etag, `${r}: ETag`);
    if (r.includes('?v=')) t.match(res.headers['cache-control'], /immutable/, `${r}: versioned, cached for good`);
    const again = await env.request('GET', r, { key: null, headers: { 'if-none-match': res.headers.etag } });
    t.equal(again.status, 304, `${r}: 304 on a matching ETag`);
    t.equal(again.raw.length, 0);
    if (ext === '.js') {
      t.ok(res.raw.length > 500_000, 'the renderer bundle');
      t.notMatch(res.text, /cdn\.redoc\.ly/, 'the renderer loads no image from the vendor CDN');
      t.notMatch(res.text, /\/\/# sourceMappingURL=redoc\.standalone\.js\.map\s*$/, 'no pointer to a source map that is not served');
      const license = await env.request('GET', '/docs/assets/redoc.standalone.js.LICENSE.txt', { key: null });
      t.equal(license.status, 200, 'the bundle\'s license notices are served beside it');
      t.match(license.headers['content-type'], /^text\/plain/);
    }
  }
  const missing = await env.request('GET', '/docs/assets/nope.js', { key: null });
  t.equal(missing.status, 404);
});

t.test('renders every operation in Chromium, all from this gateway', { skip: chromiumSkip }, async (t) => {
  const doc = (await env.request('GET', '/v1/openapi.json', { key: null })).body;
  const opIds = Object.values<Record<string, { operationId: string }>>(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
  t.ok(opIds.length >= 20, `${opIds.length} operations`);
  const browser = await launchChromium(t);
  const { page: p, problems } = await openPage(browser, t);
  const elsewhere: string[] = [];
  const origin = new URL(env.url).origin;
  p.on('request', (r) => { if (!r.url().startsWith(origin) && !/^(data|blob):/.test(r.url())) elsewhere.push(r.url()); });
  await p.goto(`${env.url}/docs`);
  // Redoc marks each operation's section with data-section-id ".../operation/<operationId>".
  const rendered = await pageEventually(p, () => {
    const ids = [...document.querySelectorAll('[data-section-id]')].map((e) => e.getAttribute('data-section-id') ?? '');
    return ids.filter((id) => id.includes('/operation/')).length ? ids : null;
  }, 90_000);
  for (const id of opIds) t.ok(rendered.some((s) => s.endsWith(`/operation/${id}`)), `operation ${id} rendered`);
  const text = await p.evaluate(() => document.body.innerText);
  t.match(text, /Authentication/, 'the guide is rendered');
  t.match(text, /channel_limit_exceeded/, 'error codes are rendered');
  t.same(problems, [], 'no console errors, page errors or failed requests');
  t.same(elsewhere, [], 'no request to another origin');
});
