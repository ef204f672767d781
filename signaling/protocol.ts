// The softphone wire protocol, version 1 (docs/reference/browser-calling.md documents it). JSON text frames. The first
// message must be `hello`; everything else is refused until it succeeds.
export const PROTOCOL_VERSION = 1;

export type ClientMessage =
  | { type: 'hello'; v: number; ticket?: string; room_token?: string; client_token?: string }
  | { type: 'hangup' }
  // Incoming calls (signaling/incoming.ts): a socket that said hello with a client token takes one of the calls it rang.
  | { type: 'accept'; call_id: string }
  // ... or stops it ringing on this socket (the call rings on for the others until its timeout).
  | { type: 'decline'; call_id: string }
  | { type: 'ping'; id?: string | number }
  // Media negotiation (mediasoup-client on the browser), relayed to the media process. Each may carry an `id` that
  // the reply (or an `error` about it) echoes.
  | { type: 'transport'; direction: 'send' | 'recv'; id?: string | number }
  | { type: 'connect'; transport_id: string; dtls_parameters: unknown; id?: string | number }
  | { type: 'produce'; transport_id: string; kind: 'audio'; rtp_parameters: unknown; id?: string | number }
  | { type: 'consume'; transport_id: string; rtp_capabilities: unknown; id?: string | number }
  | { type: 'resume'; consumer_id: string; id?: string | number };

export const MEDIA_MESSAGES: ReadonlySet<string> = new Set(['transport', 'connect', 'produce', 'consume', 'resume']);

/** Error codes of `error` frames, and the close code each fatal one ends the socket with. */
export const ERRORS = {
  bad_message: { close: 4400, fatal: false },
  hello_required: { close: 4400, fatal: true },
  hello_timeout: { close: 4408, fatal: true },
  unsupported_version: { close: 4400, fatal: true },
  ticket_invalid: { close: 4401, fatal: true },
  ticket_used: { close: 4409, fatal: true },
  ticket_expired: { close: 4410, fatal: true },
  ticket_revoked: { close: 4410, fatal: true },
  call_ended: { close: 4410, fatal: true },
  media_unavailable: { close: 4503, fatal: false },
  media_error: { close: 4500, fatal: false },
  internal_error: { close: 1011, fatal: true },
} as const;
export type ErrorCode = keyof typeof ERRORS;

const MESSAGES: Record<ErrorCode, string> = {
  bad_message: 'The message is not a JSON object of a known type with its fields.',
  hello_required: 'The first message must be {"type":"hello","v":1,"ticket":"olwt_..."}, {"type":"hello","v":1,"room_token":"..."} or {"type":"hello","v":1,"client_token":"olct_..."}.',
  hello_timeout: 'No hello within the time allowed.',
  unsupported_version: `This server speaks protocol version ${PROTOCOL_VERSION}.`,
  ticket_invalid: 'The ticket, room token or client token is not valid.',
  ticket_used: 'This ticket was already used; a ticket is good for one connection.',
  ticket_expired: 'The ticket expired before it was used.',
  ticket_revoked: 'The ticket was revoked (its call was canceled or cleaned up).',
  call_ended: 'The call of this ticket has ended.',
  media_unavailable: 'This server carries no media for this call (signaling only: SIGNALING_MEDIA=off or CARRIER=livekit).',
  media_error: 'The media server refused the request.',
  internal_error: 'Something went wrong on the server; try a new ticket.',
};

export const errorFrame = (code: ErrorCode, message = MESSAGES[code], id?: string | number) =>
  JSON.stringify({ type: 'error', code, message, ...(id !== undefined ? { id } : {}) });

/** Parses one client frame; null when it is not a known, well-formed message. */
export function parseMessage(text: string): ClientMessage | null {
  let m: any;
  try {
    m = JSON.parse(text);
  } catch {
    return null;
  }
  if (!m || typeof m !== 'object' || typeof m.type !== 'string') return null;
  switch (m.type) {
    case 'hello': {
      const t = typeof m.ticket === 'string' ? 1 : 0;
      const r = typeof m.room_token === 'string' ? 1 : 0;
      const c = typeof m.client_token === 'string' ? 1 : 0;
      return typeof m.v === 'number' && t + r + c === 1 ? m : null;
    }
    case 'accept': case 'decline': return typeof m.call_id === 'string' && m.call_id.length <= 64 ? m : null;
    case 'hangup': return m;
    case 'ping': return m;
    case 'transport': return m.direction === 'send' || m.direction === 'recv' ? m : null;
    case 'connect': return typeof m.transport_id === 'string' && m.dtls_parameters ? m : null;
    case 'produce': return typeof m.transport_id === 'string' && m.kind === 'audio' && m.rtp_parameters ? m : null;
    case 'consume': return typeof m.transport_id === 'string' && m.rtp_capabilities ? m : null;
    case 'resume': return typeof m.consumer_id === 'string' ? m : null;
    default: return null;
  }
}
