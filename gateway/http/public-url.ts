// The public base URL of the API, named by WWW-Authenticate, the OpenAPI `servers`, the protected-resource metadata,
// recording_url, Link headers, the Optimize tag and every other absolute link: PUBLIC_URL, else the address this
// gateway listens on. Never the request's Host or X-Forwarded-* headers: a response naming them could be stored by
// a shared cache and served to everyone else (cache poisoning), and a client could write into what others read.
import type { Config } from '../../shared/config.ts';

/** A URL host for a listen address: an unspecified address (0.0.0.0, ::) becomes the loopback address of its
 *  family, the one address certain to reach the gateway from its own machine; IPv6 is bracketed. */
export function urlHost(listenHost: string): string {
  const host = listenHost.replace(/^\[(.*)\]$/, '$1');
  if (host === '' || host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '::0') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** http://<listen host>:<port>, as a client on the gateway's machine reaches it. */
export const listenUrl = (listenHost: string, port: number) => `http://${urlHost(listenHost)}:${port}`;

/** The base URL (no trailing slash) for absolute links: PUBLIC_URL, else the listen address. */
export function publicBaseUrl(config: Config, listenPort: number): string {
  return config.publicUrl ?? listenUrl(config.host, listenPort || config.port);
}
