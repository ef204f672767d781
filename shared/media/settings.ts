// Settings of the media process and of its control API's clients (signaling), read once from the environment by
// loadConfig (config.media).
import { availableParallelism } from 'node:os';
import { recordingsDirOf } from '../calls/recording-store.ts';

/** The control API's secret when MEDIA_CONTROL_SECRET is unset: fine on loopback, refused on any other address. */
export const DEV_CONTROL_SECRET = 'openline-local-media-control';

export interface MediaSettings {
  /** mediasoup workers in the pool (MEDIA_WORKERS, default one per core). */
  workers: number;
  /** Address the browser transports listen on (MEDIA_LISTEN_IP, default 127.0.0.1). */
  listenIp: string;
  /** Address announced to browsers in ICE candidates when it differs from listenIp, e.g. behind NAT
   *  (MEDIA_ANNOUNCED_IP). */
  announcedIp: string | null;
  /** UDP/TCP port range of every transport (MEDIA_RTC_MIN_PORT..MEDIA_RTC_MAX_PORT, default 40000..49999). */
  rtcMinPort: number;
  rtcMaxPort: number;
  /** Bearer secret of the control API (MEDIA_CONTROL_SECRET). */
  controlSecret: string;
  /** Whether controlSecret is the built-in development default. */
  controlSecretIsDefault: boolean;
  /** Where clients reach the control API (MEDIA_CONTROL_URL, default http://HOST:MEDIA_PORT). */
  controlUrl: string;
  /** Interval of the heartbeat line on the control event stream (MEDIA_HEARTBEAT_MS, default 5000). */
  heartbeatMs: number;
  /** A session is closed after this long whatever happens, so a lost signaling process leaks nothing forever
   *  (MEDIA_SESSION_MAX_MS, default 4 hours; a create request may ask for less). */
  sessionMaxMs: number;
  /** Length of the sandbox far end's tone before it starts echoing (MEDIA_SANDBOX_TONE_MS, default 1000). */
  sandboxToneMs: number;
  /** Where SIP calls' recordings are written (RECORDINGS_DIR, shared with the gateway that serves them). */
  recordingsDir: string;
  /** SIP_RTP_LATCHING=1: a SIP leg's RTP goes through a relay in the media process that latches to the first sender
   *  inside SIP_TRUNK_ALLOW (far ends behind NAT). Default 0: straight into mediasoup, heard only from the SDP's
   *  address and port, at about twice the calls per core. */
  sipRtpLatching: boolean;
  /** MEDIA_FLEET=1: media processes announce themselves and their load in Redis (media/fleet-announcer.ts) and each
   *  signaling process places each new call on the least-loaded one (signaling/media-fleet.ts). Default 0: one media
   *  process at MEDIA_CONTROL_URL, no Redis in media. Set it alike on media and signaling. */
  fleet: boolean;
  /** The control URL a media process announces to the fleet (MEDIA_ADVERTISE_URL); null: its own listen address
   *  (http://HOST:port, so HOST must then be an address signaling can reach, not 0.0.0.0 or ::). */
  advertiseUrl: string | null;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer in ${min}..${max}, got "${raw}"`);
  return n;
}

function zeroOrOne(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === '0') return false;
  if (raw === '1') return true;
  throw new Error(`${name} must be 0 or 1, got "${raw}"`);
}

export function loadMediaSettings(env: NodeJS.ProcessEnv): MediaSettings {
  const rtcMinPort = int(env, 'MEDIA_RTC_MIN_PORT', 40000, 1024, 65535);
  const rtcMaxPort = int(env, 'MEDIA_RTC_MAX_PORT', 49999, 1024, 65535);
  if (rtcMaxPort < rtcMinPort) throw new Error(`MEDIA_RTC_MAX_PORT (${rtcMaxPort}) is below MEDIA_RTC_MIN_PORT (${rtcMinPort})`);
  const host = env.HOST || '127.0.0.1';
  const port = env.MEDIA_PORT || '8082';
  return {
    workers: int(env, 'MEDIA_WORKERS', 0, 0, 256) || availableParallelism(),
    listenIp: env.MEDIA_LISTEN_IP || '127.0.0.1',
    announcedIp: env.MEDIA_ANNOUNCED_IP || null,
    rtcMinPort,
    rtcMaxPort,
    controlSecret: env.MEDIA_CONTROL_SECRET || DEV_CONTROL_SECRET,
    controlSecretIsDefault: !env.MEDIA_CONTROL_SECRET,
    controlUrl: (env.MEDIA_CONTROL_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, ''),
    heartbeatMs: int(env, 'MEDIA_HEARTBEAT_MS', 5000, 100),
    sessionMaxMs: int(env, 'MEDIA_SESSION_MAX_MS', 4 * 3600_000, 1000),
    sandboxToneMs: int(env, 'MEDIA_SANDBOX_TONE_MS', 1000, 0, 60_000),
    recordingsDir: recordingsDirOf(env),
    sipRtpLatching: zeroOrOne(env, 'SIP_RTP_LATCHING'),
    fleet: zeroOrOne(env, 'MEDIA_FLEET'),
    advertiseUrl: advertiseUrl(env),
  };
}

/** MEDIA_ADVERTISE_URL: an http(s) URL with a host that says where this one process is (no path, query or
 *  credentials), or unset. */
function advertiseUrl(env: NodeJS.ProcessEnv): string | null {
  const raw = env.MEDIA_ADVERTISE_URL;
  if (raw === undefined || raw === '') return null;
  let u: URL;
  try { u = new URL(raw); } catch { throw new Error(`MEDIA_ADVERTISE_URL must be an http(s) URL, got "${raw}"`); }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`MEDIA_ADVERTISE_URL must be an http(s) URL, got "${raw}"`);
  if (u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== '')) {
    throw new Error(`MEDIA_ADVERTISE_URL must be scheme://host:port only, got "${raw}"`);
  }
  if (isUnspecified(u.hostname.replace(/^\[|\]$/g, ''))) throw new Error(`MEDIA_ADVERTISE_URL must name a reachable host, not ${u.hostname}`);
  return `${u.protocol}//${u.host}`;
}

/** 0.0.0.0 and ::, which a process may listen on but nobody can reach. */
export function isUnspecified(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]';
}

/** True for 127.0.0.0/8, ::1 and localhost: the only addresses the development secret may be served on. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
