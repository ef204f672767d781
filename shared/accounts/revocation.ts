import type { Redis } from 'ioredis';
import type { Db } from '../db.ts';
import type { Keyer } from '../redis.ts';
import { revokeApiKey } from './keys.ts';

/** Redis channel on which revoked key ids are announced to every gateway's credential cache. */
export const KEY_REVOKED_CHANNEL = 'events:key-revoked';

export async function revokeAndAnnounce(db: Db, redis: Redis, key: Keyer, keyId: string): Promise<boolean> {
  const done = await revokeApiKey(db, keyId);
  if (done) await redis.publish(key(KEY_REVOKED_CHANNEL), keyId);
  return done;
}
