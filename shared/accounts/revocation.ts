import type { Redis } from 'ioredis';
import type { Db } from '../db.ts';
import { randomToken } from '../ids.ts';
import type { Keyer } from '../redis.ts';
import { revokeApiKey } from './keys.ts';

/** Redis channel on which revoked key ids are announced to every gateway's credential cache. */
export const KEY_REVOKED_CHANNEL = 'events:key-revoked';
/** How long a revocation waits for every gateway to confirm it dropped the key (a gateway that is down or cut off
 *  from Redis cannot confirm; its cache TTL then bounds how long it could still accept the key). */
const ACK_WAIT_MS = 3000;

/** Revokes a key and returns once every gateway subscribed to the announcement has dropped it from its cache, so
 *  the next request on any replica is refused. The message is "<key id> <ack list>"; each gateway pushes to the
 *  list after forgetting the key, and PUBLISH says how many gateways received it. */
export async function revokeAndAnnounce(db: Db, redis: Redis, key: Keyer, keyId: string): Promise<boolean> {
  const done = await revokeApiKey(db, keyId);
  if (!done) return false;
  const ackList = key('revocation-ack', randomToken(12));
  const receivers = await redis.publish(key(KEY_REVOKED_CHANNEL), `${keyId} ${ackList}`);
  const until = Date.now() + ACK_WAIT_MS;
  while (receivers > 0 && Date.now() < until && (await redis.llen(ackList)) < receivers) {
    await new Promise((r) => setTimeout(r, 5));
  }
  await redis.del(ackList);
  return true;
}

/** A gateway's side: parses an announcement; `ack` confirms that the key was dropped. */
export function parseRevocation(message: string): { keyId: string; ackList: string | null } {
  const [keyId, ackList] = message.split(' ');
  return { keyId, ackList: ackList ?? null };
}

export async function acknowledgeRevocation(redis: Redis, ackList: string): Promise<void> {
  await redis.multi().rpush(ackList, '1').pexpire(ackList, ACK_WAIT_MS * 2).exec();
}
