// GET /softphone (the browser softphone page) and its assets: static bytes read once at start-up from the SDK bundle
// (dist/sdk, built on install or here when missing or stale), each with an ETag that answers 304 on a match.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { ensureSdkBuilt, SDK_DIST_DIR } from '../../infra/build-sdk.ts';
import type { Config } from '../../shared/config.ts';
import type { HttpGateway, RawReply } from '../http/server.ts';
import { asset, escapeAttribute, serve, version } from '../http/static-asset.ts';

/** Path of the softphone WebSocket on the signaling process, for the default URL when SIGNALING_PUBLIC_URL is unset. */
export const SIGNALING_PATH = '/v1/softphone';

// The page and its assets load only from this origin; the page talks to signaling over ws(s) and plays a stream.
const PAGE_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", 'img-src data:', "media-src 'self' blob: mediastream:",
  "connect-src 'self' ws: wss:", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

/** The default signaling URL written into the page; the page replaces "{host}" with its own host name. */
export function signalingUrlFor(config: Config): string {
  return config.signalingPublicUrl ?? `ws://{host}:${config.signalingPort}${SIGNALING_PATH}`;
}

export async function registerSoftphone(gateway: HttpGateway, config: Config, log: Logger): Promise<void> {
  let files: Record<'html' | 'css' | 'js' | 'map', Buffer>;
  try {
    if (await ensureSdkBuilt()) log.info({ dir: SDK_DIST_DIR }, 'softphone: built the browser SDK');
    const read = (name: string) => readFile(join(SDK_DIST_DIR, name));
    const [html, css, js, map] = await Promise.all(['softphone.html', 'softphone.css', 'sdk.js', 'sdk.js.map'].map(read));
    files = { html, css, js, map };
  } catch (err) {
    // The API does not depend on the page: serve the rest and say why the page is missing.
    log.error({ err }, 'softphone: the browser SDK could not be built or read; /softphone answers 503');
    const unavailable = (): RawReply => ({ status: 503, contentType: 'text/plain; charset=utf-8', body: 'softphone unavailable: SDK not built\n' });
    for (const path of ['/softphone', '/softphone/sdk.js', '/softphone/sdk.js.map', '/softphone/softphone.css']) gateway.addRaw('GET', path, unavailable);
    return;
  }

  // Assets are referenced with ?v=<hash>, so a new build is a new URL and each version can be cached for good.
  const forever = { 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' };
  const js = asset(files.js, 'application/javascript; charset=utf-8', forever);
  const css = asset(files.css, 'text/css; charset=utf-8', forever);
  const map = asset(files.map, 'application/json; charset=utf-8', forever);
  const html = files.html.toString('utf8')
    .replaceAll('{{SIGNALING_URL}}', escapeAttribute(signalingUrlFor(config)))
    .replaceAll('{{SDK_VERSION}}', version(js))
    .replaceAll('{{CSS_VERSION}}', version(css));
  const page = asset(Buffer.from(html), 'text/html; charset=utf-8', {
    'cache-control': 'public, max-age=300',
    'content-security-policy': PAGE_CSP,
    // The page URL may carry a ticket: never send it on as a referrer.
    'referrer-policy': 'no-referrer',
    'permissions-policy': 'microphone=(self), camera=()',
    'x-content-type-options': 'nosniff',
  });

  gateway
    .addRaw('GET', '/softphone', (req) => serve(page, req.headers))
    .addRaw('GET', '/softphone/sdk.js', (req) => serve(js, req.headers))
    .addRaw('GET', '/softphone/sdk.js.map', (req) => serve(map, req.headers))
    .addRaw('GET', '/softphone/softphone.css', (req) => serve(css, req.headers));
}
