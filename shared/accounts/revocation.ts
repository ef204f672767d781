import type { Redis } from 'ioredis';
import { broadcastAndAwait } from '../broadcast.ts';
import type { Db } from '../db.ts';
import type { Keyer } from '../redis.ts';
import { revokeApiKey } from './keys.ts';

/** Redis channel on which revoked key ids are announced to every gateway's credential cache (shared/broadcast.ts). */
export const KEY_REVOKED_CHANNEL = 'events:key-revoked';

/** Revokes a key and returns once every gateway subscribed to the announcement has dropped it from its cache, so
 *  the next request on any replica is refused (a gateway that cannot confirm drops it at its cache TTL). */
export async function revokeAndAnnounce(db: Db, redis: Redis, key: Keyer, keyId: string): Promise<boolean> {
  const done = await revokeApiKey(db, keyId);
  if (!done) return false;
  await broadcastAndAwait(redis, key, KEY_REVOKED_CHANNEL, keyId);
  return true;
}
