// Issuing browser calls: POST /v1/webrtc-token (path A) and POST /v1/room-token (path B). Both place the call
// through the same guardrails as the dial path (placeCall: destinations, key ceiling, demo allowlist, call rate,
// spend cap, one channel), record it QUEUED with organization, issuing user, from and to, store the ticket's hash
// and schedule the cleanup deadline. Path A dials when the ticket is redeemed; path B dials at once.
import type { Static } from '@sinclair/typebox';
import type { Principal } from '../accounts/principal.ts';
import type { Config } from '../config.ts';
import { placeCall } from '../calls/place.ts';
import type { CallRuntime } from '../calls/runtime.ts';
import { mintRoomToken } from '../tokens/room-token.ts';
import { scheduleTicketCleanup } from './queue.ts';
import type { RoomTokenResponse, WebrtcTicketResponse } from './schemas.ts';
import { insertTicket, newTicket, type TicketKind } from './tickets.ts';

export interface BrowserCallRequest { from_number?: string; to_number?: string }

/** Where browsers connect: SIGNALING_PUBLIC_URL, or the signaling process on this host. */
export const softphoneUrl = (config: Config) =>
  config.signalingPublicUrl ?? `ws://${config.host}:${config.signalingPort}/v1/softphone`;

/** Where a path-B browser joins its room: the LiveKit server with the LiveKit carrier (its WebSocket URL), else
 *  this platform's softphone WebSocket. */
export const roomUrl = (config: Config) =>
  config.livekit ? config.livekit.url.replace(/^http(s?):/, 'ws$1:') : softphoneUrl(config);

export async function issueWebrtcTicket(rt: CallRuntime, p: Principal, req: BrowserCallRequest): Promise<Static<typeof WebrtcTicketResponse>> {
  const { call } = await placeCall(rt, p, {
    type: 'webrtc', from: req.from_number, to: req.to_number, record: false, names: { from: 'from_number', to: 'to_number' },
  });
  const token = newTicket();
  await recordTicket(rt, call.id, p.organizationId, 'webrtc', token);
  return { token, call_id: call.id };
}

export async function issueRoomToken(rt: CallRuntime, p: Principal, req: BrowserCallRequest): Promise<Static<typeof RoomTokenResponse>> {
  // Signed before the call is placed so a key problem never leaves a placed call behind.
  const keys = await rt.deps.tokenKeys.roomKeyPair();
  const { call } = await placeCall(rt, p, {
    type: 'room', from: req.from_number, to: req.to_number, record: false, names: { from: 'from_number', to: 'to_number' },
  });
  let token: string;
  try {
    token = await mintRoomToken(keys, { callId: call.id, identity: p.userId ?? p.keyId, maxDurationSeconds: call.max_duration_seconds });
  } catch (err) {
    await rt.transition(call.id, { type: 'hangup', mode: 'setup_failed', at: new Date() }, { bestEffort: true }).catch(() => undefined);
    throw err;
  }
  await recordTicket(rt, call.id, p.organizationId, 'room', token);
  return { token, room_url: roomUrl(rt.deps.config), call_id: call.id };
}

/** Stores the ticket and its cleanup deadline; on failure the call is canceled (setup_failed) so nothing is left
 *  holding a channel. */
async function recordTicket(rt: CallRuntime, callId: string, organizationId: string, kind: TicketKind, token: string) {
  const { db, config } = rt.deps;
  const cleanupMs = config.ticketCleanupSeconds * 1000;
  try {
    await insertTicket(db, { callId, organizationId, kind, token, expiresAt: new Date(Date.now() + cleanupMs) });
    await scheduleTicketCleanup(rt.deps.queues, callId, cleanupMs);
  } catch (err) {
    await rt.transition(callId, { type: 'hangup', mode: 'setup_failed', at: new Date() }, { bestEffort: true }).catch(() => undefined);
    throw err;
  }
}
