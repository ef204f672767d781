// Room tokens (path B): LiveKit access tokens made with livekit-server-sdk, so a LiveKit deployment accepts them
// as they are. With the sandbox carrier the platform's own signaling WebSocket verifies them with the SDK's
// TokenVerifier and the same key pair.
import { AccessToken, TokenVerifier } from 'livekit-server-sdk';
import type { Config } from '../config.ts';
import type { Db } from '../db.ts';

export interface RoomKeyPair { apiKey: string; apiSecret: string }

/** The room of a call (the LiveKit carrier uses the same name). */
export const roomName = (callId: string) => `call-${callId}`;
export const callIdOfRoom = (room: string | undefined) => (room?.startsWith('call-') ? room.slice(5) : null);

/** Extra lifetime beyond the longest call: ringing and joining happen before the call-length clock starts. */
const TTL_MARGIN_SECONDS = 600;

/** LIVEKIT_API_KEY / LIVEKIT_API_SECRET when set; else ROOM_TOKEN_KEY; else a sandbox pair whose secret lives in the
 *  database (shared by every replica). Loaded once per process (shared/tokens/keys.ts). */
export async function loadRoomKeyPair(db: Db, config: Config): Promise<RoomKeyPair> {
  if (config.livekit) return { apiKey: config.livekit.apiKey, apiSecret: config.livekit.apiSecret };
  if (config.roomTokenKey) return config.roomTokenKey;
  const r = await db.one<{ secret: Buffer }>(`SELECT secret FROM server_secrets WHERE name = 'room_token'`);
  return { apiKey: 'sandbox', apiSecret: r.secret.toString('base64url') };
}

/** A join grant for the call's room only; identity = the issuing user (or the key when it has none). */
export async function mintRoomToken(keys: RoomKeyPair, o: { callId: string; identity: string; maxDurationSeconds: number }): Promise<string> {
  const at = new AccessToken(keys.apiKey, keys.apiSecret, {
    identity: o.identity, ttl: o.maxDurationSeconds + TTL_MARGIN_SECONDS, metadata: JSON.stringify({ call_id: o.callId }),
  });
  at.addGrant({ roomJoin: true, room: roomName(o.callId), canPublish: true, canSubscribe: true });
  return at.toJwt();
}

/** The call id a valid room token grants, or null (bad signature, expired, no room join grant). */
export async function verifyRoomToken(keys: RoomKeyPair, token: string): Promise<{ callId: string; identity: string } | null> {
  try {
    const claims = await new TokenVerifier(keys.apiKey, keys.apiSecret).verify(token);
    const callId = claims.video?.roomJoin ? callIdOfRoom(claims.video.room) : null;
    return callId ? { callId, identity: String(claims.sub ?? '') } : null;
  } catch {
    return null;
  }
}
