// The media control API: JSON over HTTP on MEDIA_PORT, spoken by signaling (shared/media/control-client.ts) and
// served by media (media/control-server.ts). Internal, so it uses mediasoup's own camelCase vocabulary: the
// objects it carries (rtpCapabilities, iceParameters, dtlsParameters, rtpParameters) pass to mediasoup-client
// unchanged. Every request but GET /healthz carries `Authorization: Bearer <MEDIA_CONTROL_SECRET>`.
import { Type, type Static } from '@sinclair/typebox';

/** A call id (the public API's call id): the session's key. */
export const CallId = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_.:-]+$' });

// mediasoup validates these objects in depth; the schemas check only their outline so a malformed request gets a
// field-level 400 before it reaches a worker.
const RtpCodecParameters = Type.Object({
  mimeType: Type.String({ minLength: 3 }),
  payloadType: Type.Integer({ minimum: 0, maximum: 127 }),
  clockRate: Type.Integer({ minimum: 1 }),
  channels: Type.Optional(Type.Integer({ minimum: 1 })),
  parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  rtcpFeedback: Type.Optional(Type.Array(Type.Object({ type: Type.String() }))),
});
export const RtpParameters = Type.Object({
  mid: Type.Optional(Type.String()),
  codecs: Type.Array(RtpCodecParameters, { minItems: 1 }),
  headerExtensions: Type.Optional(Type.Array(Type.Object({ uri: Type.String(), id: Type.Integer({ minimum: 1, maximum: 14 }) }))),
  encodings: Type.Optional(Type.Array(Type.Object({ ssrc: Type.Optional(Type.Integer({ minimum: 0, maximum: 0xffffffff })) }))),
  rtcp: Type.Optional(Type.Object({ cname: Type.Optional(Type.String()), reducedSize: Type.Optional(Type.Boolean()) })),
});
export const RtpCapabilities = Type.Object({
  codecs: Type.Array(Type.Object({
    kind: Type.Union([Type.Literal('audio'), Type.Literal('video')]),
    mimeType: Type.String({ minLength: 3 }),
    clockRate: Type.Integer({ minimum: 1 }),
  }), { minItems: 1 }),
  headerExtensions: Type.Optional(Type.Array(Type.Object({}))),
});
export const DtlsParameters = Type.Object({
  role: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('client'), Type.Literal('server')])),
  fingerprints: Type.Array(Type.Object({ algorithm: Type.String(), value: Type.String() }), { minItems: 1 }),
});
const Ip = Type.String({ minLength: 2, maxLength: 45, pattern: '^[0-9A-Fa-f:.]+$' });
const Port = Type.Integer({ minimum: 1, maximum: 65535 });

// ---- requests ----

export const CreateSessionRequest = Type.Object({
  callId: CallId,
  /** Close the session after this long whatever happens (capped by MEDIA_SESSION_MAX_MS). */
  maxDurationMs: Type.Optional(Type.Integer({ minimum: 1000 })),
  /** Whose far end the call has: `sandbox` (the default: one carrier PlainTransport for the sandbox far end) or `sip`
   *  (SIP carrier legs, added one per leg with POST .../carrier-legs). */
  carrier: Type.Optional(Type.Union([Type.Literal('sandbox'), Type.Literal('sip')])),
  /** Record the call's audio (`sip` sessions): every producer mixed into a μ-law WAV in RECORDINGS_DIR, complete once
   *  the session closed. A repeated create with record: true starts recording an existing session. */
  record: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });
export type CreateSessionRequest = Static<typeof CreateSessionRequest>;

export const CreateBrowserTransportRequest = Type.Object({
  /** `webrtc` for a browser (the default); `plain` puts an RTP endpoint in the browser's place (tests, bench,
   *  tools): plain RTP, rtcp-mux, no encryption. */
  type: Type.Optional(Type.Union([Type.Literal('webrtc'), Type.Literal('plain')])),
}, { additionalProperties: false });
export type CreateBrowserTransportRequest = Static<typeof CreateBrowserTransportRequest>;

/** Which browser transport a request is about (a browser has a send and a recv WebRTC transport); the first one
 *  created when omitted. */
const TransportId = Type.Optional(Type.String({ minLength: 1, maxLength: 100 }));

export const ConnectBrowserTransportRequest = Type.Union([
  Type.Object({ dtlsParameters: DtlsParameters, transportId: TransportId }, { additionalProperties: false }),
  Type.Object({ ip: Ip, port: Port, transportId: TransportId }, { additionalProperties: false }),
]);
export type ConnectBrowserTransportRequest = Static<typeof ConnectBrowserTransportRequest>;

export const ProduceRequest = Type.Object({
  kind: Type.Literal('audio'),
  rtpParameters: RtpParameters,
  transportId: TransportId,
}, { additionalProperties: false });
export type ProduceRequest = Static<typeof ProduceRequest>;

export const ConsumeRequest = Type.Object({
  rtpCapabilities: RtpCapabilities,
  transportId: TransportId,
}, { additionalProperties: false });
export type ConsumeRequest = Static<typeof ConsumeRequest>;

export const AttachFarEndRequest = Type.Object({
  /** Only the sandbox carrier's far end exists today: a tone, then an echo of what the browser sends. */
  kind: Type.Literal('sandbox'),
}, { additionalProperties: false });
export type AttachFarEndRequest = Static<typeof AttachFarEndRequest>;

/** A carrier leg's id (the platform's leg id, `<call id>-<role>`). */
const LegId = Type.String({ minLength: 1, maxLength: 120, pattern: '^[A-Za-z0-9_.:-]+$' });

export const CreateCarrierLegRequest = Type.Object({ legId: LegId }, { additionalProperties: false });
export type CreateCarrierLegRequest = Static<typeof CreateCarrierLegRequest>;

/** The G.711 codecs a SIP leg carries (static payload types 0 and 8). */
export type G711 = 'audio/PCMU' | 'audio/PCMA';

/** The far end's answer: where it receives RTP and which codec it chose. */
export const ConnectCarrierLegRequest = Type.Object({
  ip: Ip,
  port: Port,
  /** Where its RTCP goes (default port + 1). */
  rtcpPort: Type.Optional(Port),
  mimeType: Type.Union([Type.Literal('audio/PCMU'), Type.Literal('audio/PCMA')]),
  /** SIP_TRUNK_ALLOW (addresses or CIDR networks): with SIP_RTP_LATCHING, RTP from any of them is taken, and the leg
   *  latches to the first sender (symmetric RTP). Without it (or without latching) only `ip`:`port` is heard. */
  allow: Type.Optional(Type.Array(Type.String({ minLength: 2, maxLength: 64, pattern: '^[0-9A-Fa-f.:]+(/[0-9]{1,3})?$' }), { maxItems: 64 })),
}, { additionalProperties: false });
export type CarrierLegConnect = Static<typeof ConnectCarrierLegRequest>;

/** Joins two connected carrier legs of the session: each one's far end hears the other's. */
export const BridgeRequest = Type.Object({ legs: Type.Tuple([LegId, LegId]) }, { additionalProperties: false });
export type BridgeRequest = Static<typeof BridgeRequest>;

// ---- responses ----

/** mediasoup's objects, passed through as they are. */
export type MediasoupObject = Record<string, unknown>;

export interface SessionCreated {
  callId: string;
  /** False when the session already existed (create is idempotent per call id). */
  created: boolean;
  routerId: string;
  workerPid: number;
  rtpCapabilities: MediasoupObject;
}

export type BrowserTransportCreated =
  | { type: 'webrtc'; id: string; iceParameters: MediasoupObject; iceCandidates: MediasoupObject[]; dtlsParameters: MediasoupObject }
  | { type: 'plain'; id: string; ip: string; port: number };

export interface Produced { producerId: string }

export interface Consumed {
  id: string;
  producerId: string;
  kind: 'audio';
  rtpParameters: MediasoupObject;
  /** Consumers start paused: resume once the browser's side is ready (POST .../consumer/resume). */
  paused: boolean;
}

export type FarEndPhase = 'tone' | 'echo';

export interface CarrierLegCreated {
  legId: string;
  /** False when the leg already existed (create is idempotent per leg id). */
  created: boolean;
  /** Where the far end sends RTP: the SDP offer's c= address (MEDIA_ANNOUNCED_IP, else MEDIA_LISTEN_IP) and port. */
  ip: string;
  port: number;
  /** Where it sends RTCP (a=rtcp), when not on port + 1; absent with SIP_RTP_LATCHING (the relay takes none). */
  rtcpPort?: number;
}

export interface CarrierLegStats {
  legId: string;
  connected: boolean;
  codec: G711 | null;
  /** RTP packets from the far end into the router, and from the router to the far end. */
  fromFarEnd: number;
  toFarEnd: number;
  /** Packets dropped at the leg's port (another sender, before the answer, RTCP or other payload types); counted by
   *  the relay of SIP_RTP_LATCHING only (null without it: mediasoup drops them uncounted). */
  dropped: number | null;
  /** Of them, RTP from an address outside the allowed networks (or another sender than the latched one). */
  refused: number | null;
  /** The far end's address the leg latched to (where its RTP came from), or null before its first packet. */
  latched: { ip: string; port: number } | null;
}

export interface FarEndAttached { kind: 'sandbox'; phase: FarEndPhase; toneMs: number }

export interface SessionSummary {
  callId: string;
  carrier: 'sandbox' | 'sip';
  /** A `sip` session's carrier legs, by leg id. */
  carrierLegs: string[];
  routerId: string;
  workerPid: number;
  createdAt: string;
  browserTransport: { type: 'webrtc' | 'plain'; id: string; state: string } | null;
  browserProducerId: string | null;
  browserConsumerId: string | null;
  farEnd: { kind: 'sandbox'; phase: FarEndPhase } | null;
}

export interface RtpDirectionStats { packets: number; bytes: number }

export interface SessionStats {
  callId: string;
  /** What the browser sent (its producer) and what was sent to it (its consumer), from mediasoup's getStats. */
  browser: { in: RtpDirectionStats & { packetsLost: number; jitter: number }; out: RtpDirectionStats };
  /** The carrier leg: what the far end sent into the router and what the router sent to the far end. */
  carrier: { in: RtpDirectionStats & { packetsLost: number; jitter: number }; out: RtpDirectionStats };
  /** The sandbox far end's own counters (null until attached). */
  farEnd: { phase: FarEndPhase; tonePacketsSent: number; echoPacketsSent: number; packetsReceived: number } | null;
  /** A `sip` session's carrier legs. */
  carrierLegs: CarrierLegStats[];
}

export interface WorkersInfo {
  /** The media process itself (it also runs the sandbox far ends). */
  processPid: number;
  /** Changes on every start of the media process. */
  instanceId: string;
  workers: { pid: number; sessions: number }[];
}

/** POST /v1/drain: the process takes no new sessions (POST /v1/sessions answers 503 `unavailable` for a new call id)
 *  and exits once its last session closed. */
export interface DrainStarted { draining: true; sessions: number }

/** What a media process announces to the fleet (MEDIA_FLEET=1) every heartbeat, in the Redis hash of
 *  media/fleet-announcer.ts; signaling places new calls by it (signaling/media-fleet.ts). */
export interface MediaAnnouncement {
  instance: string;
  /** Where signaling reaches its control API (MEDIA_ADVERTISE_URL, else its listen address). */
  controlUrl: string;
  pid: number;
  listenIp: string;
  announcedIp: string | null;
  /** Sessions open: one mediasoup router each. */
  sessions: number;
  routers: number;
  /** mediasoup transports open (browser and carrier legs). */
  transports: number;
  workers: number;
  /** CPU time of its mediasoup workers over the last heartbeat interval, in cores (1 = one core busy). */
  workerCpu: number;
  draining: boolean;
  /** When it was written (ms since the epoch), and when it counts as gone unless renewed. */
  at: number;
  expiresAt: number;
}

export type SessionCloseReason = 'requested' | 'worker_died' | 'max_duration' | 'shutdown';

/** Lines of GET /v1/events (one JSON object per line, application/x-ndjson). The stream ending without a
 *  `shutdown` line means the media process died: every session it held is gone. */
export type MediaEvent =
  | { type: 'hello'; instanceId: string; pid: number; sessions: string[]; heartbeatMs: number }
  | { type: 'heartbeat'; at: string; sessions: number; draining?: boolean }
  | { type: 'session_closed'; callId: string; reason: SessionCloseReason }
  /** Sessions on the dead worker were each reported by a session_closed line (reason worker_died) before this. */
  | { type: 'worker_replaced'; deadPid: number; newPid: number | null }
  | { type: 'shutdown' };

export type ControlErrorCode =
  | 'validation_error' | 'unauthorized' | 'not_found' | 'method_not_allowed' | 'conflict' | 'codec_mismatch'
  | 'payload_too_large' | 'unavailable' | 'internal_error';

export interface ControlErrorBody {
  error: { code: ControlErrorCode; message: string; fields?: Record<string, string> };
}

/** Paths of the API, relative to the control URL. */
export const paths = {
  healthz: '/healthz',
  sessions: '/v1/sessions',
  session: (callId: string) => `/v1/sessions/${encodeURIComponent(callId)}`,
  browserTransport: (callId: string) => `/v1/sessions/${encodeURIComponent(callId)}/browser-transport`,
  connectBrowserTransport: (callId: string) => `/v1/sessions/${encodeURIComponent(callId)}/browser-transport/connect`,
  produce: (callId: string) => `/v1/sessions/${encodeURIComponent(callId)}/produce`,
  consume: (callId: string) => `/v1/sessions/${encodeURIComponent(callId)}/consume`,
  resumeConsumer: (callId: string) => `/v1/sessions/${encodeURIComponent(callId)}/consumer/resume`,
  farEnd: (callId: string) => `/v1/sessions/${encodeURIComponent(callId)}/far-end`,
  stats: (callId: string) => `/v1/sessions/${encodeURIComponent(callId)}/stats`,
  carrierLegs: (callId: string) => `/v1/sessions/${encodeURIComponent(callId)}/carrier-legs`,
  carrierLeg: (callId: string, legId: string) => `/v1/sessions/${encodeURIComponent(callId)}/carrier-legs/${encodeURIComponent(legId)}`,
  connectCarrierLeg: (callId: string, legId: string) => `/v1/sessions/${encodeURIComponent(callId)}/carrier-legs/${encodeURIComponent(legId)}/connect`,
  bridge: (callId: string) => `/v1/sessions/${encodeURIComponent(callId)}/bridge`,
  workers: '/v1/workers',
  drain: '/v1/drain',
  events: '/v1/events',
} as const;
