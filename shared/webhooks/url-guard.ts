import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

// SSRF rule for webhook URLs. A receiver must be a public HTTPS endpoint: only globally reachable unicast
// addresses pass. The check runs when a subscription is created and again on every new connection at delivery
// time (the `lookup` hook below; IP literals in http-post.ts), so a DNS answer that changes after creation (DNS
// rebinding) cannot reach an internal address. WEBHOOK_ALLOW_INSECURE=1 turns the rule off and also allows plain
// http:// (local development and tests only).
//
// Allowlist view, from the IANA IPv4 and IPv6 special-purpose address registries:
// - IPv4: every address except the special-purpose blocks below (private, loopback, CGNAT, link-local with the
//   169.254.169.254 metadata service, documentation, benchmarking, 6to4 relay, multicast, reserved, broadcast),
//   and the few special blocks IANA marks global but that are never a web receiver (AS112, AMT).
// - IPv6: only global unicast 2000::/3 passes, minus its special-purpose blocks (2001::/23 IETF protocol
//   assignments: Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID; 2001:db8::/32 and 3fff::/20
//   documentation; 2002::/16 6to4; 5f00::/16 SRv6 SIDs; AS112). Everything outside 2000::/3 is refused
//   (loopback, unspecified, ::/96 IPv4-compatible, ::ffff:0:0:0/96 SIIT, 64:ff9b:1::/48 local NAT64, 100::/64
//   discard, fc00::/7, fe80::/10, fec0::/10, ff00::/8, ...) with two exceptions that carry an IPv4 address and
//   are judged by it: IPv4-mapped ::ffff:0:0/96 and the well-known NAT64 prefix 64:ff9b::/96 (what a DNS64
//   resolver answers for an IPv4-only receiver on an IPv6-only network).

const blockedV4 = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.31.196.0', 24], ['192.52.193.0', 24], ['192.88.99.0', 24],
  ['192.168.0.0', 16], ['192.175.48.0', 24], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blockedV4.addSubnet(net, bits, 'ipv4');
// Special-purpose blocks inside global unicast 2000::/3.
const blockedV6 = new BlockList();
for (const [net, bits] of [
  ['2001::', 23], ['2001:db8::', 32], ['2002::', 16], ['2620:4f:8000::', 48], ['3fff::', 20], ['5f00::', 16],
] as const) blockedV6.addSubnet(net, bits, 'ipv6');

/** 16 bytes of an IPv6 address (accepts a trailing dotted quad), or null. */
function v6bytes(addr: string): number[] | null {
  let s = addr.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    s = s.slice(0, dotted.index) + ((a << 8) | b).toString(16) + ':' + ((c << 8) | d).toString(16);
  }
  const parts = s.split('::');
  if (parts.length > 2) return null;
  const h = parts[0] ? parts[0].split(':') : [];
  const r = parts.length === 2 && parts[1] ? parts[1].split(':') : [];
  const groups = parts.length === 2 ? [...h, ...Array(Math.max(0, 8 - h.length - r.length)).fill('0'), ...r] : h;
  if (groups.length !== 8) return null;
  const bytes: number[] = [];
  for (const g of groups) {
    if (!/^[0-9a-f]{1,4}$/.test(g)) return null;
    const n = parseInt(g, 16);
    bytes.push(n >> 8, n & 0xff);
  }
  return bytes;
}

const NAT64_WKP = [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0];
const V4_MAPPED = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/** True for every address a webhook must never reach (and for anything that is not an IP address). */
export function isForbiddenAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '');
  const family = isIP(a);
  if (family === 4) return blockedV4.check(a, 'ipv4');
  if (family !== 6) return true;
  const b = v6bytes(a);
  if (!b) return true;
  const prefixed = (p: number[]) => p.every((x, i) => b[i] === x);
  if (prefixed(V4_MAPPED) || prefixed(NAT64_WKP)) return blockedV4.check(b.slice(12).join('.'), 'ipv4');
  if ((b[0] & 0xe0) !== 0x20) return true; // outside global unicast 2000::/3
  return blockedV6.check(a.replace(/%.*$/, ''), 'ipv6');
}

function resolveAll(host: string, timeoutMs = 5000): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(Object.assign(new Error('DNS lookup timed out'), { code: 'ETIMEOUT' })), timeoutMs);
    dnsLookup(host, { all: true, verbatim: true }, (err, addrs) => {
      clearTimeout(timer);
      if (err) reject(err); else resolve(addrs);
    });
  });
}

/** `insecureWouldAllow`: refused only by the rule WEBHOOK_ALLOW_INSECURE switches off (http://, private address). */
export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string; insecureWouldAllow?: boolean };

/** What to tell a developer whose local receiver was refused. */
export const LOCAL_RECEIVER_HINT = 'For local development (a receiver on localhost or a private network), run the platform with '
  + 'WEBHOOK_ALLOW_INSECURE=1, which allows http:// and private addresses; never set it in production. Otherwise expose the '
  + 'receiver on a public https:// URL (for example through a tunnel).';

/** Validates a webhook URL against the scheme and SSRF rules (resolving its host). */
export async function checkWebhookUrl(raw: string, allowInsecure: boolean): Promise<UrlCheck> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'must be an absolute URL' };
  }
  if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:')) {
    return allowInsecure ? { ok: false, reason: 'must be an http or https URL' }
      : { ok: false, reason: 'must be an https:// URL', insecureWouldAllow: url.protocol === 'http:' };
  }
  if (url.username || url.password) return { ok: false, reason: 'must not contain a user name or password' };
  if (!url.hostname) return { ok: false, reason: 'must name a host' };
  if (allowInsecure) return { ok: true, url };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    return isForbiddenAddress(host)
      ? { ok: false, reason: `must not point to a loopback, private, link-local or metadata address (${host})`, insecureWouldAllow: true }
      : { ok: true, url };
  }
  let addrs: LookupAddress[];
  try {
    addrs = await resolveAll(host);
  } catch {
    return { ok: false, reason: `host ${host} does not resolve` };
  }
  const bad = addrs.find((a) => isForbiddenAddress(a.address));
  if (bad) return { ok: false, reason: `host ${host} resolves to a loopback, private, link-local or metadata address (${bad.address})`, insecureWouldAllow: true };
  if (!addrs.length) return { ok: false, reason: `host ${host} does not resolve` };
  return { ok: true, url };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for http(s).request that refuses forbidden addresses at connection time (DNS rebinding). */
export function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addrs) => {
    if (err) return callback(err, '');
    const bad = addrs.find((a) => isForbiddenAddress(a.address));
    if (bad) {
      const e: NodeJS.ErrnoException = new Error(`${hostname} resolves to a forbidden address (${bad.address})`);
      e.code = 'EFORBIDDENADDRESS';
      return callback(e, '');
    }
    if (!addrs.length) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), '');
    if (options.all) callback(null, addrs);
    else callback(null, addrs[0].address, addrs[0].family);
  });
}
