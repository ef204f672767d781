// Before `npm start` touches anything: every port the platform will listen on must be free. uWebSockets.js listens
// with SO_REUSEPORT, so a second copy's gateway would share the first one's port instead of failing; a plain bind
// (Node sets no SO_REUSEPORT) fails while anyone holds the port, which is the check wanted here.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Config } from '../shared/config.ts';

/** A port the platform listens on and the setting that chooses it. */
export interface PlannedPort { port: number; setting: string }

/** The fixed ports of the Procfile's processes (0 means "any free port" and needs no check). */
export function plannedPorts(config: Config): PlannedPort[] {
  return [
    { port: config.port, setting: 'PORT' },
    { port: config.signalingPort, setting: 'SIGNALING_PORT' },
    { port: config.mediaPort, setting: 'MEDIA_PORT' },
    { port: config.workersPort, setting: 'WORKERS_PORT' },
  ].filter((p) => p.port !== 0);
}

/** null when host:port can be bound right now, else the error code (EADDRINUSE, EACCES, EADDRNOTAVAIL ...). */
export function tryBind(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ host, port }, () => server.close(() => resolve(null)));
  });
}

/** Inodes of the TCP sockets listening on `port` (any address, IPv4 or IPv6), from /proc/net/tcp{,6}. */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try { text = readFileSync(file, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // f[1] local address "ADDR:PORT" (hex), f[3] state (0A = LISTEN), f[9] inode
      if (f.length < 10 || f[3] !== '0A') continue;
      if (parseInt(f[1].slice(f[1].lastIndexOf(':') + 1), 16) === port && f[9] !== '0') inodes.add(f[9]);
    }
  }
  return inodes;
}

/** The process holding a listening socket on `port`, when this user may see it (other users' /proc/<pid>/fd is
 *  closed to us); null otherwise. */
export function portHolder(port: number): { pid: number; command: string } | null {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return null;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try { fds = readdirSync(`/proc/${entry}/fd`); } catch { continue; }
    for (const fd of fds) {
      let target: string;
      try { target = readlinkSync(`/proc/${entry}/fd/${fd}`); } catch { continue; }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (!m || !inodes.has(m[1])) continue;
      let command = '';
      try { command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim(); } catch { /* gone */ }
      return { pid: Number(entry), command: command || '?' };
    }
  }
  return null;
}

/** Throws one line naming the first port that cannot be bound and who holds it (and any other taken ones). */
export async function assertPortsFree(config: Config): Promise<void> {
  const taken: (PlannedPort & { code: string })[] = [];
  for (const p of plannedPorts(config)) {
    const code = await tryBind(config.host, p.port);
    if (code) taken.push({ ...p, code });
  }
  if (taken.length === 0) return;
  const [first, ...rest] = taken;
  const also = rest.length ? ` (also taken: ${rest.map((p) => `${p.port} (${p.setting})`).join(', ')})` : '';
  if (first.code !== 'EADDRINUSE') {
    throw new Error(`cannot listen on ${config.host}:${first.port} (${first.setting}): ${first.code}${also}; choose another ${first.setting} or HOST.`);
  }
  const holder = portHolder(first.port);
  const who = holder ? `pid ${holder.pid} (${holder.command})` : 'another process';
  throw new Error(`port ${first.port} (${first.setting}) on ${config.host} is in use by ${who}${also}: ` +
    `is openline already running? Stop it, or set PORT, SIGNALING_PORT, MEDIA_PORT and WORKERS_PORT to free ports.`);
}
