// The SDK side of the softphone signaling protocol, draft v1: JSON text frames over one WebSocket.
// Every message type and field name the browser sends or reads lives in this file and nowhere else, so adapting the
// SDK to the signaling service's final protocol means editing this module only. The rest of the SDK speaks the
// neutral types below.

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
  durationSeconds: number | null;
}

/** What the server can say, already translated into the SDK's vocabulary. */
export type ServerEvent =
  | { kind: 'welcome'; callId: string; routerRtpCapabilities: any; sendTransport: TransportInfo; recvTransport: TransportInfo }
  | { kind: 'produced'; producerId: string }
  | { kind: 'consume'; consumer: ConsumerInfo }
  | { kind: 'progress'; state: 'ringing' | 'answered' }
  | { kind: 'ended'; summary: EndSummary }
  | { kind: 'error'; code: string; message: string }
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
  rtpCapabilities(rtpCapabilities: unknown): string {
    return JSON.stringify({ type: 'rtp_capabilities', rtp_capabilities: rtpCapabilities });
  },
  connectTransport(transportId: string, dtlsParameters: unknown): string {
    return JSON.stringify({ type: 'connect_transport', transport_id: transportId, dtls_parameters: dtlsParameters });
  },
  produce(kind: 'audio', rtpParameters: unknown): string {
    return JSON.stringify({ type: 'produce', kind, rtp_parameters: rtpParameters });
  },
  consumerReady(consumerId: string): string {
    return JSON.stringify({ type: 'consumer_ready', consumer_id: consumerId });
  },
  hangup(): string {
    return JSON.stringify({ type: 'hangup' });
  },
};

/** Parses one text frame. Throws ProtocolError on a frame that is not a well-formed message. */
export function parseServerMessage(text: string): ServerEvent {
  let m: any;
  try { m = JSON.parse(text); } catch { throw new ProtocolError('frame is not JSON'); }
  if (!m || typeof m !== 'object' || typeof m.type !== 'string') throw new ProtocolError('message has no type');
  switch (m.type) {
    case 'welcome':
      return {
        kind: 'welcome', callId: str(m, 'call_id'), routerRtpCapabilities: obj(m, 'router_rtp_capabilities'),
        sendTransport: transport(obj(m, 'send_transport')), recvTransport: transport(obj(m, 'recv_transport')),
      };
    case 'produced':
      return { kind: 'produced', producerId: str(m, 'producer_id') };
    case 'consume': {
      const c = obj(m, 'consumer');
      const kind = str(c, 'kind');
      if (kind !== 'audio' && kind !== 'video') throw new ProtocolError(`consumer kind "${kind}"`);
      return { kind: 'consume', consumer: { id: str(c, 'id'), producerId: str(c, 'producer_id'), kind, rtpParameters: obj(c, 'rtp_parameters') } };
    }
    case 'progress': {
      const state = str(m, 'state');
      if (state !== 'ringing' && state !== 'answered') return { kind: 'unknown', type: `progress:${state}` };
      return { kind: 'progress', state };
    }
    case 'ended':
      return {
        kind: 'ended',
        summary: {
          status: opt(m.status), callOutcome: opt(m.call_outcome), failureCode: opt(m.failure_code),
          failureCategory: opt(m.failure_category),
          durationSeconds: typeof m.duration_seconds === 'number' ? m.duration_seconds : null,
        },
      };
    case 'error':
      return { kind: 'error', code: str(m, 'code'), message: typeof m.message === 'string' ? m.message : '' };
    default:
      return { kind: 'unknown', type: m.type };
  }
}

export class ProtocolError extends Error {
  readonly code = 'protocol_error';
}

function transport(t: any): TransportInfo {
  return {
    id: str(t, 'id'), iceParameters: obj(t, 'ice_parameters'), iceCandidates: arr(t, 'ice_candidates'),
    dtlsParameters: obj(t, 'dtls_parameters'),
  };
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
