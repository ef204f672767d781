// Every setting comes from the environment, read once. Ports are separate so two copies can run side by side.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isIP } from 'node:net';
import sipLib from 'sip';
import { loadMediaSettings, type MediaSettings } from './media/settings.ts';
import { recordingsDirOf } from './calls/recording-store.ts';
/** Settings of the production (LiveKit) carrier; present exactly when CARRIER=livekit. */
export interface LiveKitSettings {
  /** Server URL, e.g. https://my-project.livekit.cloud */
  url: string;
  apiKey: string;
  apiSecret: string;
  /** Outbound SIP trunk used for every PSTN leg. */
  sipTrunkId: string;
  pricePerMinuteCents: number;
}

/** Number reputation (shared/caller-trust/reputation), read by the gateway and the workers alike. */
export interface ReputationSettings {
  /** REPUTATION_PROVIDER: sandbox (default) or telnyx. */
  provider: 'sandbox' | 'telnyx';
  /** Evidence older than this is stale: the background refresh re-checks it (REPUTATION_FRESHNESS_SECONDS, 24 h). */
  freshnessMs: number;
  /** How often the background refresh looks for stale numbers (REPUTATION_SCAN_MS, 5 minutes). */
  scanMs: number;
  /** Stale numbers queued per scan (REPUTATION_BATCH_SIZE, 500). */
  batchSize: number;
  /** Provider lookups per second across every workers process (REPUTATION_RATE_PER_SECOND, 20). */
  ratePerSecond: number;
  /** Lookups in flight per workers process (REPUTATION_CONCURRENCY, 5). */
  concurrency: number;
  /** The Telnyx adapter's settings; present exactly when REPUTATION_PROVIDER=telnyx. */
  telnyx: TelnyxReputationSettings | null;
}

export interface TelnyxReputationSettings {
  /** TELNYX_API_KEY (required). */
  apiKey: string;
  /** TELNYX_ENTERPRISE_ID (required). */
  enterpriseId: string;
  /** TELNYX_API_URL without a trailing slash (default https://api.telnyx.com/v2: this adapter's paths follow /v2). */
  baseUrl: string;
  /** Per-request timeout (REPUTATION_HTTP_TIMEOUT_MS, 8000). */
  timeoutMs: number;
}

/** CNAM registration (shared/cnam), used by the workers' cnam-registration processor. */
export interface CnamSettings {
  /** CNAM_PROVIDER: sandbox (default) or telnyx. */
  provider: 'sandbox' | 'telnyx';
  /** Present exactly when CNAM_PROVIDER=telnyx: TELNYX_API_KEY (required) and TELNYX_API_URL (telnyxApiUrl). */
  telnyx: { apiKey: string; baseUrl: string } | null;
}

/** Number registration with the call-analytics providers (shared/number-registration), used by the gateway (which
 *  provider a submission names) and the workers' number-registration processor. */
export interface NumberRegistrationSettings {
  /** NUMBER_REGISTRATION_PROVIDER: sandbox (the default and, so far, the only provider). */
  provider: 'sandbox';
}

export interface SmsSettings {
  /** Messages per second one number hands to the carrier, across every workers process (SMS_NUMBER_RATE_PER_SECOND, 1). */
  numberRatePerSecond: number;
}

export interface OptimizeSettings {
  /** Beacons per minute one client address may send to the collector (OPTIMIZE_COLLECT_LIMIT, 600). */
  collectLimit: number;
  /** How often the workers roll the collector's counters up into PostgreSQL (OPTIMIZE_ROLLUP_MS, 1000). */
  rollupMs: number;
}

/** Who the Letter of Authorization authorizes: the operator of this platform, as a legal person. */
export interface PlatformLegalSettings {
  /** PLATFORM_LEGAL_NAME, e.g. "Example Telecom, Inc." */
  name: string;
  /** PLATFORM_LEGAL_ADDRESS, one line, e.g. "100 Main Street, Suite 5, Austin, TX 78701, USA". */
  address: string;
}

/** Where the processes' Prometheus metrics are served (docs/operations.md, "Metrics and logs"). */
export interface MetricsSettings {
  /** The gateway's admin listener (/metrics, /healthz, /readyz), apart from the public API port: METRICS_HOST
   *  (default 127.0.0.1, whatever HOST is) and METRICS_PORT (default 8084). */
  host: string;
  port: number;
  /** METRICS_TOKEN: when set, every process's /metrics needs `Authorization: Bearer <token>`. */
  token: string | null;
}

/** Fault injection for the crash tests only (each process SIGKILLs itself at one point), and the test suite's
 *  response check; unset in production. */
export interface FaultSettings {
  /** GATEWAY_FAULT=kill-after-commit: after a keyed request's effect committed, before its response is stored. */
  gateway: 'kill-after-commit' | null;
  /** CARRIER_EVENTS_FAULT=kill-before-apply:<kind>: right after taking (locking) a carrier event of that kind. */
  carrierEventsKillBefore: 'ringing' | 'answered' | 'ended' | null;
  /** OUTBOX_RELAY_FAULT=kill-after-enqueue: after the relay's first enqueue, before its transaction commits. */
  outboxRelay: 'kill-after-enqueue' | null;
  /** OPTIMIZE_ROLLUP_FAULT: after reading a batch, or after committing it (before dropping it from Redis). */
  optimizeRollup: 'kill-after-read' | 'kill-after-commit' | null;
  /** ACCOUNT_NOTICE_FAULT_DELAY_MS: account change notices reach this process that much later. */
  accountNoticeDelayMs: number;
  /** RESPONSE_SCHEMA_CHECK=1 (the test suite sets it): the gateway validates every JSON answer against the route's
   *  declared response schema for its status and answers 500 on a mismatch (gateway/http/response-check.ts). */
  responseSchemaCheck: boolean;
}

function faultSettings(env: NodeJS.ProcessEnv): FaultSettings {
  const pick = <T extends string>(name: string, choices: readonly T[]): T | null => {
    const v = env[name];
    if (!v) return null;
    if (!(choices as readonly string[]).includes(v)) throw new Error(`${name} must be one of ${choices.join(', ')}, got "${v}"`);
    return v as T;
  };
  const kill = pick('CARRIER_EVENTS_FAULT', ['kill-before-apply:ringing', 'kill-before-apply:answered', 'kill-before-apply:ended'] as const);
  return {
    gateway: pick('GATEWAY_FAULT', ['kill-after-commit'] as const),
    carrierEventsKillBefore: kill ? (kill.split(':')[1] as 'ringing' | 'answered' | 'ended') : null,
    outboxRelay: pick('OUTBOX_RELAY_FAULT', ['kill-after-enqueue'] as const),
    optimizeRollup: pick('OPTIMIZE_ROLLUP_FAULT', ['kill-after-read', 'kill-after-commit'] as const),
    accountNoticeDelayMs: int('ACCOUNT_NOTICE_FAULT_DELAY_MS', 0, env),
    responseSchemaCheck: env.RESPONSE_SCHEMA_CHECK === '1',
  };
}

/** Console sign-in (shared/sessions): session lifetimes and the lockout after failed sign-ins. */
export interface ConsoleSettings {
  /** A session unused this long ends (SESSION_IDLE_SECONDS, 12 h). */
  sessionIdleMs: number;
  /** A session ends this long after sign-in, used or not (SESSION_MAX_SECONDS, 7 days). */
  sessionMaxMs: number;
  /** Failed sign-ins for one email within the window before sign-in answers 429 (SIGNIN_MAX_FAILURES_PER_EMAIL, 5). */
  maxFailuresPerEmail: number;
  /** Failed sign-ins from one client address within the window (SIGNIN_MAX_FAILURES_PER_ADDRESS, 20). */
  maxFailuresPerAddress: number;
  /** The lockout's sliding window (SIGNIN_FAILURE_WINDOW_SECONDS, 15 minutes). */
  failureWindowMs: number;
  /** SMTP_URL (smtp://user:pass@host:port or smtps://...): invitations and password resets are mailed through it;
   *  unset: they land in the sandbox inbox (GET /v1/sandbox/inbox?email=...). */
  smtpUrl: string | null;
  /** MAIL_FROM: the From of those emails (default "Openline <no-reply@localhost>"). */
  mailFrom: string;
}

function consoleSettings(env: NodeJS.ProcessEnv): ConsoleSettings {
  const smtpUrl = env.SMTP_URL || null;
  if (smtpUrl && !/^smtps?:\/\/[^/]/.test(smtpUrl)) throw new Error(`SMTP_URL must be smtp://[user:pass@]host[:port] or smtps://..., got "${smtpUrl}"`);
  return {
    sessionIdleMs: positiveInt('SESSION_IDLE_SECONDS', 12 * 3600, env) * 1000,
    sessionMaxMs: positiveInt('SESSION_MAX_SECONDS', 7 * 86_400, env) * 1000,
    maxFailuresPerEmail: positiveInt('SIGNIN_MAX_FAILURES_PER_EMAIL', 5, env),
    maxFailuresPerAddress: positiveInt('SIGNIN_MAX_FAILURES_PER_ADDRESS', 20, env),
    failureWindowMs: positiveInt('SIGNIN_FAILURE_WINDOW_SECONDS', 15 * 60, env) * 1000,
    smtpUrl,
    mailFrom: env.MAIL_FROM || 'Openline <no-reply@localhost>',
  };
}

export interface Config {
  databaseUrl: string;
  redisUrl: string;
  /** Prefix for every Redis key and BullMQ queue, so several deployments or test files share one Redis. */
  redisPrefix: string;
  /** REDIS_CLUSTER_NODES: a Redis Cluster's seed nodes; set, every connection is an ioredis Cluster client (redisUrl
   *  is unused) and keys carry hash tags (shared/redis.ts); null: the single instance at redisUrl. */
  redisClusterNodes: RedisNode[] | null;
  port: number;
  signalingPort: number;
  mediaPort: number;
  workersPort: number;
  host: string;
  /** Public base URL, used in WWW-Authenticate, Link and every absolute URL; unset: the listen address (never Host). */
  publicUrl: string | null;
  logLevel: string;
  /** How long an idempotency claim of a request in progress lasts (a crashed gateway's claim lapses after it). */
  idempotencyLeaseMs: number;
  webhookAllowInsecure: boolean;
  /** Multiplies the webhook retry schedule (WEBHOOK_RETRY_SCALE, default 1; tests use e.g. 0.01). */
  webhookRetryScale: number;
  /** Per-attempt timeout of a webhook delivery (WEBHOOK_TIMEOUT_MS, default 10000). */
  webhookTimeoutMs: number;
  /** Deliveries in flight per workers process (WEBHOOK_CONCURRENCY, default 200). */
  webhookConcurrency: number;
  sandboxTimeScale: number;
  /** SANDBOX_INBOUND_RING_SECONDS: how long a sandbox inbound call rung with POST /v1/sandbox/calls/inbound {ring: true}
   *  rings the browsers before it ends NO_ANSWER, in real seconds like SIP_INBOUND_RING_SECONDS (default 30, 1..300). */
  sandboxInboundRingSeconds: number;
  /** Relayed events and delivery attempts older than this many days are deleted (EVENTS_RETENTION_DAYS, default
   *  30; 0 keeps them forever). */
  eventsRetentionDays: number;
  /** Connections of each process's PostgreSQL pool (DATABASE_POOL_MAX); null: the process's own default. */
  databasePoolMax: number | null;
  carrier: 'sandbox' | 'livekit' | 'sip';
  livekit: LiveKitSettings | null;
  /** The SIP trunk carrier's settings; present exactly when CARRIER=sip. */
  sip: SipSettings | null;
  /** Where rendered recordings are kept, one file per call (RECORDINGS_DIR, default <os temp>/openline-recordings). */
  recordingsDir: string;
  /** Recording downloads one gateway streams at once; more get 503 with Retry-After (RECORDING_STREAMS_MAX, 32). */
  recordingStreamsMax: number;
  /** Call event streams (GET /v1/calls/stream) one organization may hold open on one gateway; more get 429
   *  (CALL_STREAMS_PER_ORGANIZATION, 10). */
  callStreamsPerOrganization: number;
  /** How often an open call stream sends a heartbeat comment (CALL_STREAM_HEARTBEAT_SECONDS, 15). */
  callStreamHeartbeatMs: number;
  /** Where uploaded documents are kept, one file per document named by its id (DOCUMENTS_DIR, default
   *  <os temp>/openline-documents, beside RECORDINGS_DIR's default). */
  documentsDir: string;
  /** The largest document accepted, in bytes (DOCUMENTS_MAX_BYTES, default 10 MB). */
  documentsMaxBytes: number;
  // --- Browser calling (tokens, tickets, signaling) ---
  /** Signs client tokens (CLIENT_TOKEN_SECRET); null: a secret generated once and kept in the database. */
  clientTokenSecret: string | null;
  /** The secret before the last rotation (CLIENT_TOKEN_PREVIOUS_SECRET): tokens it signed are still accepted. */
  clientTokenPreviousSecret: string | null;
  /** An unused browser ticket is revoked and its call canceled this long after issue (TICKET_CLEANUP_SECONDS, 300). */
  ticketCleanupSeconds: number;
  /** URL browsers connect to for the softphone WebSocket (SIGNALING_PUBLIC_URL); null: ws://HOST:SIGNALING_PORT/v1/softphone. */
  signalingPublicUrl: string | null;
  /** Key pair room tokens are signed with (LIVEKIT_API_KEY / LIVEKIT_API_SECRET); null: a sandbox pair from the database. */
  roomTokenKey: { apiKey: string; apiSecret: string } | null;
  // --- Areas ---
  /** PLATFORM_LEGAL_NAME and PLATFORM_LEGAL_ADDRESS; null when neither is set (no LOA can then be generated). */
  platformLegal: PlatformLegalSettings | null;
  reputation: ReputationSettings;
  cnam: CnamSettings;
  numberRegistration: NumberRegistrationSettings;
  sms: SmsSettings;
  optimize: OptimizeSettings;
  metrics: MetricsSettings;
  /** Console sign-in, sessions and mail (SESSION_*, SIGNIN_*, SMTP_URL, MAIL_FROM). */
  console: ConsoleSettings;
  /** SIGNALING_MEDIA=off: signaling carries no media even where the carrier could (tests of the call flow, a bench). */
  signalingMedia: boolean;
  /** The media process's settings and its control API's address and secret (signaling's client), MEDIA_*. */
  media: MediaSettings;
  faults: FaultSettings;
}

/** A numeric setting: the fallback when unset or empty, else a number `accepts` takes, or a startup error saying
 *  what the setting must be. */
function numberSetting(name: string, fallback: number, env: NodeJS.ProcessEnv, accepts: (n: number) => boolean, what: string): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!accepts(n)) throw new Error(`${name} must be ${what}, got "${raw}"`);
  return n;
}

const int = (name: string, fallback: number, env: NodeJS.ProcessEnv) =>
  numberSetting(name, fallback, env, (n) => Number.isInteger(n) && n >= 0, 'a non-negative integer');
/** A positive number (fractions allowed). */
const positive = (name: string, fallback: number, env: NodeJS.ProcessEnv) =>
  numberSetting(name, fallback, env, (n) => Number.isFinite(n) && n > 0, 'a positive number');
/** A positive integer (a count, a period in ms). */
const positiveInt = (name: string, fallback: number, env: NodeJS.ProcessEnv) =>
  numberSetting(name, fallback, env, (n) => Number.isInteger(n) && n > 0, 'a positive integer');

/** One of the choices; the first is the default. */
function oneOf<T extends string>(name: string, choices: readonly T[], env: NodeJS.ProcessEnv): T {
  const v = env[name] || choices[0];
  if (!(choices as readonly string[]).includes(v)) throw new Error(`${name} must be ${choices.join(' or ')}, got "${v}"`);
  return v as T;
}

/** A signing secret from the environment: at least 32 characters, or unset. */
function secretSetting(name: string, env: NodeJS.ProcessEnv): string | null {
  const v = env[name];
  if (v === undefined || v === '') return null;
  if (v.length < 32) throw new Error(`${name} must be at least 32 characters`);
  return v;
}

/** Reads LIVEKIT_*; throws naming every missing one (CARRIER=livekit needs them all). */
function liveKitSettings(env: NodeJS.ProcessEnv): LiveKitSettings {
  const missing = ['LIVEKIT_URL', 'LIVEKIT_API_KEY', 'LIVEKIT_API_SECRET', 'LIVEKIT_SIP_TRUNK_ID'].filter((n) => !env[n]);
  if (missing.length) throw new Error(`CARRIER=livekit needs ${missing.join(', ')}`);
  const price = env.LIVEKIT_PRICE_PER_MINUTE_CENTS ? Number(env.LIVEKIT_PRICE_PER_MINUTE_CENTS) : 2;
  if (!Number.isInteger(price) || price < 0) throw new Error('LIVEKIT_PRICE_PER_MINUTE_CENTS must be a whole number of cents');
  return {
    url: env.LIVEKIT_URL!, apiKey: env.LIVEKIT_API_KEY!, apiSecret: env.LIVEKIT_API_SECRET!,
    sipTrunkId: env.LIVEKIT_SIP_TRUNK_ID!, pricePerMinuteCents: price,
  };
}

/** Reads REPUTATION_*; with REPUTATION_PROVIDER=telnyx also the Telnyx adapter's settings, naming every missing one. */
function reputationSettings(env: NodeJS.ProcessEnv): ReputationSettings {
  const provider = oneOf('REPUTATION_PROVIDER', ['sandbox', 'telnyx'], env);
  let telnyx: TelnyxReputationSettings | null = null;
  if (provider === 'telnyx') {
    const missing = ['TELNYX_API_KEY', 'TELNYX_ENTERPRISE_ID'].filter((n) => !env[n]);
    if (missing.length) throw new Error(`REPUTATION_PROVIDER=telnyx needs ${missing.join(', ')}`);
    telnyx = {
      apiKey: env.TELNYX_API_KEY!, enterpriseId: env.TELNYX_ENTERPRISE_ID!,
      baseUrl: telnyxApiUrl(env),
      timeoutMs: positiveInt('REPUTATION_HTTP_TIMEOUT_MS', 8000, env),
    };
  }
  return {
    provider,
    freshnessMs: positive('REPUTATION_FRESHNESS_SECONDS', 86_400, env) * 1000,
    scanMs: positive('REPUTATION_SCAN_MS', 300_000, env),
    batchSize: positiveInt('REPUTATION_BATCH_SIZE', 500, env),
    ratePerSecond: positiveInt('REPUTATION_RATE_PER_SECOND', 20, env),
    concurrency: positiveInt('REPUTATION_CONCURRENCY', 5, env),
    telnyx,
  };
}

/** PLATFORM_LEGAL_NAME and PLATFORM_LEGAL_ADDRESS: both or neither (a letter naming the platform without where it is,
 *  or the reverse, is no use); printable text of bounded length. */
function platformLegalSettings(env: NodeJS.ProcessEnv): PlatformLegalSettings | null {
  const name = env.PLATFORM_LEGAL_NAME?.trim() ?? '';
  const address = env.PLATFORM_LEGAL_ADDRESS?.trim() ?? '';
  if (!name && !address) return null;
  if (!name) throw new Error('PLATFORM_LEGAL_ADDRESS is set but PLATFORM_LEGAL_NAME is not: set both (the Letter of Authorization names them)');
  if (!address) throw new Error('PLATFORM_LEGAL_NAME is set but PLATFORM_LEGAL_ADDRESS is not: set both (the Letter of Authorization names them)');
  for (const [n, v, max] of [['PLATFORM_LEGAL_NAME', name, 200], ['PLATFORM_LEGAL_ADDRESS', address, 300]] as const) {
    if (v.length > max) throw new Error(`${n} must be at most ${max} characters, got ${v.length}`);
    if (/[\u0000-\u001f\u007f]/.test(v)) throw new Error(`${n} must be one line of text (no control characters or line breaks)`);
  }
  return { name, address };
}

/** TELNYX_API_URL: the base of Telnyx's v2 API both adapters append their paths to (default
 *  https://api.telnyx.com/v2; tests point it at a local double). */
const telnyxApiUrl = (env: NodeJS.ProcessEnv) => (env.TELNYX_API_URL || 'https://api.telnyx.com/v2').replace(/\/+$/, '');

function cnamSettings(env: NodeJS.ProcessEnv): CnamSettings {
  const provider = oneOf('CNAM_PROVIDER', ['sandbox', 'telnyx'], env);
  if (provider === 'sandbox') return { provider, telnyx: null };
  if (!env.TELNYX_API_KEY) throw new Error('CNAM_PROVIDER=telnyx needs TELNYX_API_KEY');
  return { provider, telnyx: { apiKey: env.TELNYX_API_KEY, baseUrl: telnyxApiUrl(env) } };
}

// --- The SIP trunk carrier (CARRIER=sip) ---

/** One network of SIP_TRUNK_ALLOW. */
export interface Cidr { address: string; prefix: number; family: 'ipv4' | 'ipv6' }

/** Settings of the SIP trunk carrier (shared/carriers/sip.ts, signaling/sip/); present exactly when CARRIER=sip. */
export interface SipSettings {
  /** SIP_TRUNK_URI: where every outbound INVITE goes, e.g. sip:203.0.113.5:5060;transport=udp. */
  trunk: { uri: string; host: string; port: number; transport: 'udp' | 'tcp' | 'tls' };
  /** SIP over TLS (required when SIP_TRUNK_URI says transport=tls, else null): SIP_TLS_CA (PEM file: the CAs that may
   *  sign the trunk's certificate; unset: Node's bundled public roots), SIP_TLS_CERT and SIP_TLS_KEY (PEM files: our
   *  certificate, served on the TLS listener and offered to the trunk when it asks for one), SIP_TLS_PORT (the TLS
   *  listener's port on SIP_LISTEN's address; default SIP_LISTEN's port + 1, 0 when that is 0). */
  tls: { ca: string | null; cert: string; key: string; port: number } | null;
  /** SIP_TRUNK_USERNAME and SIP_TRUNK_PASSWORD: digest credentials answered to a 401/407 (both or neither). */
  credentials: { username: string; password: string } | null;
  /** SIP_LISTEN: the address and port the user agent binds, UDP and TCP alike (default 127.0.0.1:5060; port 0 picks a
   *  free one). The address also goes into Via and Contact, so it must be one the trunk can reach. */
  listen: { host: string; port: number };
  /** SIP_TRUNK_ALLOW: the networks that may send us SIP and receive our RTP (default: the trunk host's address). */
  allow: Cidr[];
  /** SIP_USER_FORMAT: how numbers go into SIP user parts, e164 (+14155550100) or digits (14155550100). */
  userFormat: 'e164' | 'digits';
  /** SIP_PRICE_PER_MINUTE_CENTS: price of one started minute of one answered leg (default 2). */
  pricePerMinuteCents: number;
  /** SIP_INBOUND_RING_SECONDS: how long an inbound call rings the browsers before it is answered 480 (default 30, 1..300). */
  inboundRingSeconds: number;
}

function sipSettings(env: NodeJS.ProcessEnv): SipSettings {
  const raw = env.SIP_TRUNK_URI;
  if (!raw) throw new Error('CARRIER=sip needs SIP_TRUNK_URI (e.g. sip:203.0.113.5:5060;transport=udp)');
  const uri = sipLib.parseUri(raw);
  const transport = (uri?.params.transport ?? 'udp').toLowerCase();
  if (!uri || uri.schema !== 'sip' || uri.user || (transport !== 'udp' && transport !== 'tcp' && transport !== 'tls')) {
    throw new Error(`SIP_TRUNK_URI must be sip:HOST[:PORT][;transport=udp|tcp|tls] (no user part: the dialed number goes there), got "${raw}"`);
  }
  const port = uri.port || (transport === 'tls' ? 5061 : 5060);
  if (port > 65535) throw new Error(`SIP_TRUNK_URI has no valid port, got "${raw}"`);
  const username = env.SIP_TRUNK_USERNAME || '';
  const password = env.SIP_TRUNK_PASSWORD || '';
  if (!username !== !password) throw new Error('SIP_TRUNK_USERNAME and SIP_TRUNK_PASSWORD go together: set both or neither');
  let allow: Cidr[];
  if (env.SIP_TRUNK_ALLOW) {
    allow = env.SIP_TRUNK_ALLOW.split(',').map((s) => s.trim()).filter(Boolean).map((s) => {
      const c = parseCidr(s);
      if (!c) throw new Error(`SIP_TRUNK_ALLOW must be a comma-separated list of addresses or CIDR networks (203.0.113.0/24), got "${s}"`);
      return c;
    });
    if (!allow.length) throw new Error('SIP_TRUNK_ALLOW is empty');
  } else {
    const host = uri.host.replace(/^\[|\]$/g, '');
    if (!isIP(host)) throw new Error(`SIP_TRUNK_URI names a host (${uri.host}), not an address: set SIP_TRUNK_ALLOW to the trunk's networks`);
    allow = [parseCidr(host)!];
  }
  const listenRaw = env.SIP_LISTEN || '127.0.0.1:5060';
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(listenRaw);
  const listenHost = m ? (m[1] ?? m[2]) : '';
  const listenPort = m ? Number(m[3]) : NaN;
  if (!m || !isIP(listenHost) || listenHost === '0.0.0.0' || listenHost === '::' || listenPort > 65535) {
    throw new Error(`SIP_LISTEN must be ADDRESS:PORT with a specific IP address (it goes into Via and Contact), got "${listenRaw}"`);
  }
  const price = env.SIP_PRICE_PER_MINUTE_CENTS ? Number(env.SIP_PRICE_PER_MINUTE_CENTS) : 2;
  if (!Number.isInteger(price) || price < 0) throw new Error(`SIP_PRICE_PER_MINUTE_CENTS must be a whole number of cents, got "${env.SIP_PRICE_PER_MINUTE_CENTS}"`);
  return {
    trunk: { uri: raw, host: uri.host, port, transport },
    tls: transport === 'tls' ? sipTlsSettings(env, listenPort) : null,
    credentials: username ? { username, password } : null,
    listen: { host: listenHost, port: listenPort },
    allow,
    userFormat: oneOf('SIP_USER_FORMAT', ['e164', 'digits'], env),
    pricePerMinuteCents: price,
    inboundRingSeconds: numberSetting('SIP_INBOUND_RING_SECONDS', 30, env, (n) => Number.isInteger(n) && n >= 1 && n <= 300, 'a whole number of seconds in 1..300'),
  };
}

/** SIP over TLS: the files are read (and checked) here, so a wrong path or a file that is not PEM stops the process at
 *  start naming its variable. Our certificate is required: the trunk sends its in-dialog requests (a BYE after our
 *  connection went idle) and inbound calls to our Contact, which must be a TLS listener. */
function sipTlsSettings(env: NodeJS.ProcessEnv, listenPort: number): NonNullable<SipSettings['tls']> {
  const pem = (name: string, check: (text: string) => unknown): string => {
    const path = env[name];
    if (!path) throw new Error(`SIP_TRUNK_URI says transport=tls: set ${name} (a PEM file)`);
    let text: string;
    try { text = readFileSync(path, 'utf8'); } catch (err) { throw new Error(`${name} cannot be read (${(err as Error).message})`); }
    try { check(text); } catch (err) { throw new Error(`${name} is not a PEM ${name === 'SIP_TLS_KEY' ? 'private key' : 'certificate'} (${(err as Error).message})`); }
    return text;
  };
  const cert = pem('SIP_TLS_CERT', (s) => new X509Certificate(s));
  const key = pem('SIP_TLS_KEY', (s) => createPrivateKey(s));
  if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) throw new Error('SIP_TLS_KEY is not the private key of SIP_TLS_CERT');
  const ca = env.SIP_TLS_CA ? pem('SIP_TLS_CA', (s) => new X509Certificate(s)) : null;
  const port = numberSetting('SIP_TLS_PORT', listenPort === 0 ? 0 : Math.min(listenPort + 1, 65535), env,
    (n) => Number.isInteger(n) && n >= 0 && n <= 65535, 'a port number (0..65535; 0 picks a free one)');
  if (port !== 0 && port === listenPort) throw new Error(`SIP_TLS_PORT (${port}) is SIP_LISTEN's port, which UDP and TCP use`);
  return { ca, cert, key, port };
}

/** An address (a /32 or /128) or a CIDR network; null when it is neither. */
export function parseCidr(s: string): Cidr | null {
  const [address, bits, extra] = s.split('/');
  const v = isIP(address);
  if (!v || extra !== undefined) return null;
  const max = v === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return null;
  return { address, prefix, family: v === 4 ? 'ipv4' : 'ipv6' };
}

/** METRICS_*: a token is a header value, so printable without spaces, and long enough not to be guessed. */
function metricsSettings(env: NodeJS.ProcessEnv): MetricsSettings {
  const token = env.METRICS_TOKEN || null;
  if (token !== null && !/^[\x21-\x7e]{16,512}$/.test(token)) {
    throw new Error('METRICS_TOKEN must be 16 to 512 printable characters without spaces');
  }
  return { host: env.METRICS_HOST || '127.0.0.1', port: int('METRICS_PORT', 8084, env), token };
}

export interface RedisNode { host: string; port: number }

/** REDIS_CLUSTER_NODES: comma-separated host:port (an IPv6 address in brackets); unset or empty: no cluster. */
export function redisClusterNodesSetting(env: NodeJS.ProcessEnv): RedisNode[] | null {
  const raw = env.REDIS_CLUSTER_NODES?.trim();
  if (!raw) return null;
  return raw.split(',').map((part) => {
    const s = part.trim();
    const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(s);
    const port = m ? Number(m[3]) : NaN;
    if (!m || !(port >= 1 && port <= 65535)) {
      throw new Error(`REDIS_CLUSTER_NODES must be comma-separated HOST:PORT entries (IPv6 in brackets), got "${s}"`);
    }
    return { host: m[1] ?? m[2], port };
  });
}

/** DATABASE_URL; a URL that names no user logs in as PGUSER when set (as libpq does), else as the OS user (db.ts). */
function databaseUrlSetting(env: NodeJS.ProcessEnv): string {
  const raw = env.DATABASE_URL || 'postgres://127.0.0.1:5432/openline';
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error(`DATABASE_URL must be a postgres:// URL, got "${raw}"`);
  }
  if (u.username || !env.PGUSER) return raw;
  u.username = encodeURIComponent(env.PGUSER);
  return u.toString();
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const scale = env.SANDBOX_TIME_SCALE ? Number(env.SANDBOX_TIME_SCALE) : 1;
  if (!(scale > 0)) throw new Error(`SANDBOX_TIME_SCALE must be a positive number, got "${env.SANDBOX_TIME_SCALE}"`);
  const retryScale = env.WEBHOOK_RETRY_SCALE ? Number(env.WEBHOOK_RETRY_SCALE) : 1;
  if (!(retryScale > 0)) throw new Error(`WEBHOOK_RETRY_SCALE must be a positive number, got "${env.WEBHOOK_RETRY_SCALE}"`);
  if (env.SIGNALING_PUBLIC_URL && !/^wss?:\/\/[^/]/.test(env.SIGNALING_PUBLIC_URL)) {
    throw new Error(`SIGNALING_PUBLIC_URL must be a ws:// or wss:// URL, got "${env.SIGNALING_PUBLIC_URL}"`);
  }
  const carrier = (env.CARRIER ?? 'sandbox') as Config['carrier'];
  if (carrier !== 'sandbox' && carrier !== 'livekit' && carrier !== 'sip') throw new Error(`CARRIER must be sandbox, livekit or sip, got "${carrier}"`);
  const redisClusterNodes = redisClusterNodesSetting(env);
  if (redisClusterNodes && /[{}]/.test(env.REDIS_PREFIX ?? '')) {
    throw new Error(`REDIS_PREFIX must not contain { or } on a Redis Cluster (the platform adds the hash tags), got "${env.REDIS_PREFIX}"`);
  }
  return {
    databaseUrl: databaseUrlSetting(env),
    redisUrl: env.REDIS_URL || 'redis://127.0.0.1:6379',
    redisPrefix: env.REDIS_PREFIX || 'ol',
    redisClusterNodes,
    port: int('PORT', 8080, env),
    signalingPort: int('SIGNALING_PORT', 8081, env),
    mediaPort: int('MEDIA_PORT', 8082, env),
    workersPort: int('WORKERS_PORT', 8083, env),
    host: env.HOST || '127.0.0.1',
    publicUrl: env.PUBLIC_URL ? env.PUBLIC_URL.replace(/\/+$/, '') : null,
    logLevel: env.LOG_LEVEL || 'info',
    idempotencyLeaseMs: positiveInt('IDEMPOTENCY_LEASE_MS', 60_000, env),
    webhookAllowInsecure: env.WEBHOOK_ALLOW_INSECURE === '1',
    webhookRetryScale: retryScale,
    webhookTimeoutMs: positiveInt('WEBHOOK_TIMEOUT_MS', 10_000, env),
    webhookConcurrency: positiveInt('WEBHOOK_CONCURRENCY', 200, env),
    sandboxTimeScale: scale,
    sandboxInboundRingSeconds: numberSetting('SANDBOX_INBOUND_RING_SECONDS', 30, env, (n) => Number.isInteger(n) && n >= 1 && n <= 300, 'a whole number of seconds in 1..300'),
    eventsRetentionDays: int('EVENTS_RETENTION_DAYS', 30, env),
    databasePoolMax: env.DATABASE_POOL_MAX ? positiveInt('DATABASE_POOL_MAX', 1, env) : null,
    carrier,
    livekit: carrier === 'livekit' ? liveKitSettings(env) : null,
    sip: carrier === 'sip' ? sipSettings(env) : null,
    recordingsDir: recordingsDirOf(env),
    recordingStreamsMax: positiveInt('RECORDING_STREAMS_MAX', 32, env),
    callStreamsPerOrganization: positiveInt('CALL_STREAMS_PER_ORGANIZATION', 10, env),
    callStreamHeartbeatMs: positiveInt('CALL_STREAM_HEARTBEAT_SECONDS', 15, env) * 1000,
    documentsDir: env.DOCUMENTS_DIR || join(tmpdir(), 'openline-documents'),
    documentsMaxBytes: positiveInt('DOCUMENTS_MAX_BYTES', 10 * 1000 * 1000, env),
    clientTokenSecret: secretSetting('CLIENT_TOKEN_SECRET', env),
    console: consoleSettings(env),
    clientTokenPreviousSecret: secretSetting('CLIENT_TOKEN_PREVIOUS_SECRET', env),
    ticketCleanupSeconds: positiveInt('TICKET_CLEANUP_SECONDS', 300, env),
    signalingPublicUrl: env.SIGNALING_PUBLIC_URL ? env.SIGNALING_PUBLIC_URL : null,
    roomTokenKey: env.LIVEKIT_API_KEY && env.LIVEKIT_API_SECRET ? { apiKey: env.LIVEKIT_API_KEY, apiSecret: env.LIVEKIT_API_SECRET } : null,
    platformLegal: platformLegalSettings(env),
    reputation: reputationSettings(env),
    cnam: cnamSettings(env),
    numberRegistration: { provider: oneOf('NUMBER_REGISTRATION_PROVIDER', ['sandbox'], env) },
    sms: { numberRatePerSecond: positive('SMS_NUMBER_RATE_PER_SECOND', 1, env) },
    optimize: {
      collectLimit: positiveInt('OPTIMIZE_COLLECT_LIMIT', 600, env),
      rollupMs: positiveInt('OPTIMIZE_ROLLUP_MS', 1000, env),
    },
    metrics: metricsSettings(env),
    signalingMedia: env.SIGNALING_MEDIA !== 'off',
    media: loadMediaSettings(env),
    faults: faultSettings(env),
  };
}
