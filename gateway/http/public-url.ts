// The public base URL of the API, as reflected into WWW-Authenticate, the OpenAPI `servers`, the protected-resource
// metadata, recording_url and Link headers. PUBLIC_URL wins; otherwise the request's Host is used only when it is a
// syntactically valid host[:port], so a client cannot write quotes, commas or paths into what others read.
import type { Config } from '../../shared/config.ts';

// RFC 3986 host: an IP-literal ([IPv6] only; IPvFuture is not served), an IPv4 address, or a reg-name. The reg-name
// is narrowed to unreserved characters (letters, digits, "-", ".", "_", "~"): its percent-encodings and
// sub-delimiters (!$&'()*+,;=) never appear in a real host name and are exactly what could break out of a header.
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const REG_NAME = /^[A-Za-z0-9\-._~]{1,253}$/;
const IPV6_CHARS = /^[0-9A-Fa-f:.]{2,45}$/;

function validIpv6(s: string): boolean {
  if (!IPV6_CHARS.test(s) || !s.includes(':')) return false;
  // An IPv4 tail ("::ffff:192.0.2.1") stands for two groups.
  const v4 = /:(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4 && !IPV4.test(v4[1])) return false;
  const text = v4 ? s.slice(0, s.length - v4[1].length) + '0:0' : s;
  const halves = text.split('::');
  if (halves.length > 2) return false;
  const groups = halves.flatMap((h) => (h === '' ? [] : h.split(':')));
  if (!groups.every((g) => /^[0-9A-Fa-f]{1,4}$/.test(g))) return false;
  return halves.length === 2 ? groups.length <= 7 : groups.length === 8;
}

const validPort = (p: string) => /^\d{1,5}$/.test(p) && Number(p) <= 65535;

/** True when `value` is a Host header value of the form host[:port] (RFC 3986 / RFC 9110 section 7.2). */
export function isValidHostHeader(value: string): boolean {
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end < 0) return false;
    const rest = value.slice(end + 1);
    if (rest !== '' && !(rest.startsWith(':') && validPort(rest.slice(1)))) return false;
    return validIpv6(value.slice(1, end));
  }
  const colon = value.lastIndexOf(':');
  const host = colon < 0 ? value : value.slice(0, colon);
  if (colon >= 0 && !validPort(value.slice(colon + 1))) return false;
  // All digits and dots is an IPv4 address or nothing (RFC 3986 takes the IPv4 reading first).
  return /^[\d.]+$/.test(host) ? IPV4.test(host) : REG_NAME.test(host);
}

/** The base URL (no trailing slash) for absolute links in a response to a request with these headers. */
export function publicBaseUrl(config: Config, headers: Record<string, string>, listenPort: number): string {
  if (config.publicUrl) return config.publicUrl;
  const proto = headers['x-forwarded-proto'] === 'https' ? 'https' : 'http';
  const host = headers.host;
  if (host !== undefined && isValidHostHeader(host)) return `${proto}://${host}`;
  const listenHost = config.host.includes(':') ? `[${config.host}]` : config.host;
  return `${proto}://${listenHost}:${listenPort || config.port}`;
}
