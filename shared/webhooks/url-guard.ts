import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

// SSRF rule for webhook URLs. A receiver must be a public HTTPS endpoint: the URL is refused when its host is,
// or resolves to, an address on a loopback, private, link-local (including the 169.254.169.254 metadata
// service), CGNAT, unique-local, multicast or reserved range. The check runs when a subscription is created and
// again on every new connection at delivery time (the `lookup` hook below), so a DNS answer that changes after
// creation (DNS rebinding) cannot reach an internal address. WEBHOOK_ALLOW_INSECURE=1 turns the rule off and
// also allows plain http:// (local development and tests only).

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) blocked.addSubnet(net, bits, 'ipv6');

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

/** The IPv4 address carried inside an IPv6 one (mapped, compatible, NAT64, 6to4), or null. */
function embeddedV4(addr: string): string | null {
  const b = v6bytes(addr);
  if (!b) return null;
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12).join('.');
  if (zero(0, 12)) return b.slice(12).join('.');
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return b.slice(12).join('.');
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6).join('.');
  return null;
}

/** True for every address a webhook must never reach (and for anything that is not an IP address). */
export function isForbiddenAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '');
  const family = isIP(a);
  if (family === 4) return blocked.check(a, 'ipv4');
  if (family === 6) {
    const v4 = embeddedV4(a);
    if (v4 !== null) return blocked.check(v4, 'ipv4');
    return blocked.check(a, 'ipv6');
  }
  return true;
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

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Validates a webhook URL against the scheme and SSRF rules (resolving its host). */
export async function checkWebhookUrl(raw: string, allowInsecure: boolean): Promise<UrlCheck> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'must be an absolute URL' };
  }
  if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:')) {
    return { ok: false, reason: allowInsecure ? 'must be an http or https URL' : 'must be an https:// URL' };
  }
  if (url.username || url.password) return { ok: false, reason: 'must not contain a user name or password' };
  if (!url.hostname) return { ok: false, reason: 'must name a host' };
  if (allowInsecure) return { ok: true, url };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    return isForbiddenAddress(host)
      ? { ok: false, reason: `must not point to a loopback, private, link-local or metadata address (${host})` }
      : { ok: true, url };
  }
  let addrs: LookupAddress[];
  try {
    addrs = await resolveAll(host);
  } catch {
    return { ok: false, reason: `host ${host} does not resolve` };
  }
  const bad = addrs.find((a) => isForbiddenAddress(a.address));
  if (bad) return { ok: false, reason: `host ${host} resolves to a loopback, private, link-local or metadata address (${bad.address})` };
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
