// The SDK side of the softphone signaling protocol v1 (signaling/protocol.ts is the server's side; docs/reference/browser-calling.md, "The
// softphone WebSocket, protocol v1"): JSON text frames over one WebSocket. Every message type and field name the
// browser sends or reads lives in this file and nowhere else; the rest of the SDK speaks the neutral types below.

export const PROTOCOL_VERSION = 1;

/** Prefix of the single-use browser call ticket minted by POST /v1/webrtc-token. */
const TICKET_PREFIX = 'olwt_';

/** A WebRTC transport the server created for this call (mediasoup WebRtcTransport, one per direction). */
export interface TransportInfo {
  id: string;
  iceParameters: any;
  iceCandidates: any[];
  dtlsParameters: any;
}

export interface ConsumerInfo {
  id: string;
  producerId: string;
  kind: 'audio' | 'video';
  rtpParameters: any;
}

/** How the call ended, as the server reported it. */
export interface EndSummary {
  status: string | null;
  callOutcome: string | null;
  failureCode: string | null;
  failureCategory: string | null;
  disconnectionReason: string | null;
  durationSeconds: number | null;
}

/** Media requests carry an `id` that their reply (or an `error` about them) echoes. */
export type RequestId = number;

/** What the server can say, already translated into the SDK's vocabulary. */
export type ServerEvent =
  /** routerRtpCapabilities is null when the server has no media for this call (signaling-only). */
  | { kind: 'welcome'; callId: string; routerRtpCapabilities: any | null }
  | { kind: 'transport_created'; requestId: RequestId | null; transport: TransportInfo }
  | { kind: 'connected'; requestId: RequestId | null }
  | { kind: 'produced'; requestId: RequestId | null; producerId: string }
  | { kind: 'consumed'; requestId: RequestId | null; consumer: ConsumerInfo }
  | { kind: 'resumed'; requestId: RequestId | null }
  | { kind: 'progress'; state: 'ringing' | 'answered' }
  | { kind: 'ended'; summary: EndSummary }
  | { kind: 'error'; requestId: RequestId | null; code: string; message: string }
  /** Incoming calls (a socket that said hello with a client token): it listens for calls to these numbers. */
  | { kind: 'listening'; numbers: string[] }
  | { kind: 'incoming'; callId: string; from: string; to: string; ringTimeoutSeconds: number | null }
  /** The call stopped ringing here: answered_elsewhere, ended, taken (a late accept) or declined. */
  | { kind: 'incoming_stopped'; callId: string; reason: string }
  /** A message this SDK does not know (newer servers may add some): ignored. */
  | { kind: 'unknown'; type: string };

/** The signaling URL a room token names (its room_url claim, when that is a ws:// or wss:// URL), else null. */
export function signalingUrlFromToken(token: string): string | null {
  const claims = jwtClaims(token);
  const url = claims && typeof claims.room_url === 'string' ? claims.room_url : null;
  return url && /^wss?:\/\//i.test(url) ? url : null;
}

/** A room token is a JWT; anything else is sent as a ticket (the server judges it). */
function isRoomToken(token: string): boolean {
  return !token.startsWith(TICKET_PREFIX) && jwtClaims(token) !== null;
}

function jwtClaims(token: string): Record<string, unknown> | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    const json = JSON.parse(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)));
    return json && typeof json === 'object' ? json : null;
  } catch {
    return null;
  }
}

/** The messages the browser sends, serialized. */
export const clientMessages = {
  hello(token: string): string {
    return JSON.stringify(isRoomToken(token)
      ? { type: 'hello', v: PROTOCOL_VERSION, room_token: token }
      : { type: 'hello', v: PROTOCOL_VERSION, ticket: token });
  },
  transport(id: RequestId, direction: 'send' | 'recv'): string {
    return JSON.stringify({ type: 'transport', id, direction });
  },
  connect(id: RequestId, transportId: string, dtlsParameters: unknown): string {
    return JSON.stringify({ type: 'connect', id, transport_id: transportId, dtls_parameters: dtlsParameters });
  },
  produce(id: RequestId, transportId: string, kind: 'audio', rtpParameters: unknown): string {
    return JSON.stringify({ type: 'produce', id, transport_id: transportId, kind, rtp_parameters: rtpParameters });
  },
  consume(id: RequestId, transportId: string, rtpCapabilities: unknown): string {
    return JSON.stringify({ type: 'consume', id, transport_id: transportId, rtp_capabilities: rtpCapabilities });
  },
  resume(id: RequestId, consumerId: string): string {
    return JSON.stringify({ type: 'resume', id, consumer_id: consumerId });
  },
  hangup(): string {
    return JSON.stringify({ type: 'hangup' });
  },
  /** Listens for incoming calls with a bounded client token (olct_...). */
  listen(clientToken: string): string {
    return JSON.stringify({ type: 'hello', v: PROTOCOL_VERSION, client_token: clientToken });
  },
  accept(callId: string): string {
    return JSON.stringify({ type: 'accept', call_id: callId });
  },
  decline(callId: string): string {
    return JSON.stringify({ type: 'decline', call_id: callId });
  },
};

/** Parses one text frame. Throws ProtocolError on a frame that is not a well-formed message. */
export function parseServerMessage(text: string): ServerEvent {
  let m: any;
  try { m = JSON.parse(text); } catch { throw new ProtocolError('frame is not JSON'); }
  if (!m || typeof m !== 'object' || typeof m.type !== 'string') throw new ProtocolError('message has no type');
  const requestId: RequestId | null = typeof m.id === 'number' ? m.id : null;
  switch (m.type) {
    case 'welcome': {
      const media = m.media && typeof m.media === 'object' ? m.media : null;
      return { kind: 'welcome', callId: str(m, 'call_id'), routerRtpCapabilities: media ? obj(media, 'router_rtp_capabilities') : null };
    }
    case 'transport_created':
      return {
        kind: 'transport_created', requestId,
        transport: {
          id: str(m, 'transport_id'), iceParameters: obj(m, 'ice_parameters'), iceCandidates: arr(m, 'ice_candidates'),
          dtlsParameters: obj(m, 'dtls_parameters'),
        },
      };
    case 'connected': return { kind: 'connected', requestId };
    case 'produced': return { kind: 'produced', requestId, producerId: str(m, 'producer_id') };
    case 'consumed': {
      const kind = str(m, 'kind');
      if (kind !== 'audio' && kind !== 'video') throw new ProtocolError(`consumer kind "${kind}"`);
      return {
        kind: 'consumed', requestId,
        consumer: { id: str(m, 'consumer_id'), producerId: str(m, 'producer_id'), kind, rtpParameters: obj(m, 'rtp_parameters') },
      };
    }
    case 'resumed': return { kind: 'resumed', requestId };
    case 'ringing': return { kind: 'progress', state: 'ringing' };
    case 'answered': return { kind: 'progress', state: 'answered' };
    case 'ended':
      return {
        kind: 'ended',
        summary: {
          status: opt(m.status), callOutcome: opt(m.call_outcome), failureCode: opt(m.failure_code),
          failureCategory: opt(m.failure_category), disconnectionReason: opt(m.disconnection_reason),
          durationSeconds: typeof m.duration_seconds === 'number' ? m.duration_seconds : null,
        },
      };
    case 'listening':
      return { kind: 'listening', numbers: arr(m, 'numbers').filter((n) => typeof n === 'string') };
    case 'incoming':
      return { kind: 'incoming', callId: str(m, 'call_id'), from: str(m, 'from_number'), to: str(m, 'to_number'),
        ringTimeoutSeconds: typeof m.ring_timeout_seconds === 'number' ? m.ring_timeout_seconds : null };
    case 'incoming_stopped':
      return { kind: 'incoming_stopped', callId: str(m, 'call_id'), reason: typeof m.reason === 'string' ? m.reason : 'ended' };
    case 'error':
      return { kind: 'error', requestId, code: str(m, 'code'), message: typeof m.message === 'string' ? m.message : '' };
    default:
      return { kind: 'unknown', type: m.type };
  }
}

export class ProtocolError extends Error {
  readonly code = 'protocol_error';
}

function str(o: any, k: string): string {
  if (typeof o[k] !== 'string' || o[k] === '') throw new ProtocolError(`missing ${k}`);
  return o[k];
}
function obj(o: any, k: string): any {
  if (!o[k] || typeof o[k] !== 'object') throw new ProtocolError(`missing ${k}`);
  return o[k];
}
function arr(o: any, k: string): any[] {
  if (!Array.isArray(o[k])) throw new ProtocolError(`missing ${k}`);
  return o[k];
}
function opt(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}
