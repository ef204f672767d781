// GET /docs: the API reference, human-readable. A static page that renders GET /v1/openapi.json with Redoc
// (redoc's standalone browser bundle, MIT, from node_modules), served by the gateway itself: the page loads nothing
// from another origin. Bytes are read once at start-up; each asset has an ETag (304 on a match) and, being referenced
// with ?v=<hash>, is cached for good.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import type { HttpGateway, RawReply } from '../http/server.ts';
import { asset, IMMUTABLE, serve, version } from '../http/static-asset.ts';

export const DOCS_PATH = '/docs';
const ASSETS = `${DOCS_PATH}/assets`;

// Redoc injects its styles at run time (styled-components) and runs its search index in a blob: worker.
const PAGE_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "font-src 'self' data:",
  "connect-src 'self'", "worker-src 'self' blob:", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

const require = createRequire(import.meta.url);

/** The renderer's bytes, made to load nothing from elsewhere: its footer logo is an image from the vendor's CDN (an
 *  empty src hides it), and its source map is not served. */
export function localRedoc(bundle: string): string {
  return bundle
    .replaceAll('https://cdn.redoc.ly/redoc/logo-mini.svg', '')
    .replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
}

const page = (scriptUrl: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>openline API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS}/docs.css">
</head>
<body>
<redoc spec-url="/v1/openapi.json" required-props-first="true" expand-responses="200,201,202" sort-tags-alphabetically="false"></redoc>
<script src="${scriptUrl}"></script>
</body>
</html>
`;

const CSS = 'body { margin: 0; padding: 0; font-family: system-ui, sans-serif; }\n';

export async function registerDocs(gateway: HttpGateway, log: Logger): Promise<void> {
  let js: Buffer;
  let license: Buffer;
  try {
    const path = require.resolve('redoc/bundles/redoc.standalone.js');
    [js, license] = await Promise.all([
      readFile(path, 'utf8').then((s) => Buffer.from(localRedoc(s))),
      readFile(`${path}.LICENSE.txt`),
    ]);
  } catch (err) {
    // The API does not depend on its docs page: serve the rest and say why the page is missing.
    log.error({ err }, 'docs: the redoc bundle could not be read; /docs answers 503 (/v1/openapi.json still works)');
    const unavailable = (): RawReply => ({ status: 503, contentType: 'text/plain; charset=utf-8',
      body: 'docs unavailable: the redoc package is not installed (npm ci); the document is at /v1/openapi.json\n' });
    gateway.addRaw('GET', DOCS_PATH, unavailable);
    return;
  }
  const script = asset(js, 'application/javascript; charset=utf-8', IMMUTABLE);
  const licenseTxt = asset(license, 'text/plain; charset=utf-8', IMMUTABLE);
  const css = asset(Buffer.from(CSS), 'text/css; charset=utf-8', { 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' });
  const html = asset(Buffer.from(page(`${ASSETS}/redoc.standalone.js?v=${version(script)}`)), 'text/html; charset=utf-8', {
    'cache-control': 'public, max-age=300',
    'content-security-policy': PAGE_CSP,
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
  });
  gateway
    .addRaw('GET', DOCS_PATH, (req) => serve(html, req.headers))
    .addRaw('GET', `${ASSETS}/redoc.standalone.js`, (req) => serve(script, req.headers))
    // The bundle's own pointer to its third-party licenses ("see redoc.standalone.js.LICENSE.txt") resolves here.
    .addRaw('GET', `${ASSETS}/redoc.standalone.js.LICENSE.txt`, (req) => serve(licenseTxt, req.headers))
    .addRaw('GET', `${ASSETS}/docs.css`, (req) => serve(css, req.headers));
}
