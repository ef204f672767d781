// GET /console and everything under it: the console's web front end (dist/console, built by infra/build-console.ts
// on install or here when missing or stale). Assets have hashed names and are cached for good; index.html is
// revalidated every time (no-cache, with its ETag); any other /console/... path is a page of the single-page app and
// answers index.html. Files are read once at start-up.
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative } from 'node:path';
import type { Logger } from 'pino';
import type { HttpGateway, RawReply } from '../http/server.ts';
import { asset, IMMUTABLE, serve, type Asset } from '../http/static-asset.ts';

export const CONSOLE_PATH = '/console';

// The pages load only from this origin and talk only to this origin's API (cookie session + X-CSRF-Token); the Phone
// page also opens the softphone WebSocket (signaling runs on its own port or host: ws: / wss:) and plays a stream; the
// Caller trust page previews the LOA PDF (GET /v1/caller-trust/enterprise/{id}/loa) in a same-origin <iframe>.
const PAGE_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "media-src 'self' blob: mediastream:", "font-src 'self'",
  "connect-src 'self' ws: wss:", "frame-src 'self'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'", "manifest-src 'self'",
].join('; ');

const TYPES: Record<string, string> = {
  '.js': 'application/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.woff2': 'font/woff2', '.json': 'application/json; charset=utf-8',
};

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...await filesUnder(p));
    else out.push(p);
  }
  return out;
}

/** The console's files as served: path → asset. */
export async function loadConsole(dir: string): Promise<{ index: Asset; assets: Map<string, Asset> }> {
  const index = asset(await readFile(join(dir, 'index.html')), 'text/html; charset=utf-8', {
    'cache-control': 'no-cache',
    'content-security-policy': PAGE_CSP,
    // Reset and invitation links carry their token in the fragment; never send a page URL on as a referrer.
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
  });
  const assets = new Map<string, Asset>();
  for (const file of await filesUnder(join(dir, 'assets')).catch(() => [])) {
    const url = `${CONSOLE_PATH}/${relative(dir, file).split('\\').join('/')}`;
    assets.set(url, asset(await readFile(file), TYPES[extname(file)] ?? 'application/octet-stream', IMMUTABLE));
  }
  return { index, assets };
}

const notFound = (): RawReply => ({ status: 404, contentType: 'text/plain; charset=utf-8', body: 'not found\n', headers: { 'cache-control': 'no-cache' } });

export async function registerConsoleUi(gateway: HttpGateway, log: Logger): Promise<void> {
  let files: Awaited<ReturnType<typeof loadConsole>>;
  try {
    // Imported here: the build script loads the gateway's routes for the OpenAPI document, so a static import would
    // be a cycle (and a deadlock when the script runs as the main module).
    const { CONSOLE_DIST_DIR, ensureConsoleBuilt } = await import('../../infra/build-console.ts');
    if (await ensureConsoleBuilt()) log.info({ dir: CONSOLE_DIST_DIR }, 'console: built the web front end');
    files = await loadConsole(CONSOLE_DIST_DIR);
  } catch (err) {
    // The API does not depend on the pages: serve the rest and say why the console is missing.
    log.error({ err }, 'console: the web front end could not be built or read; /console answers 503');
    const unavailable = (): RawReply => ({ status: 503, contentType: 'text/plain; charset=utf-8',
      body: 'console unavailable: not built (npm run build:console)\n' });
    gateway.addRaw('GET', CONSOLE_PATH, unavailable).addRawPrefix(`${CONSOLE_PATH}/`, unavailable);
    return;
  }
  const { index, assets } = files;
  gateway
    .addRaw('GET', CONSOLE_PATH, (req) => serve(index, req.headers))
    .addRawPrefix(`${CONSOLE_PATH}/`, (req, path) => {
      const a = assets.get(path);
      if (a) return serve(a, req.headers);
      // A missing asset is a 404 (an old page asking for a file of a previous build), never the page itself.
      if (path.startsWith(`${CONSOLE_PATH}/assets/`)) return notFound();
      return serve(index, req.headers);
    });
}
