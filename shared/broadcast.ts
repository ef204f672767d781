// Announcements every gateway must apply before the announcer answers: a revoked key (shared/accounts/revocation.ts)
// and a changed account footprint (shared/accounts/snapshot.ts). The announcer PUBLISHes "<subject> <ack list>" on a
// Redis channel; PUBLISH says how many subscribers received it, and each pushes to the ack list once it has applied
// the message. A gateway that is down or cut off from Redis cannot confirm: the wait is bounded, and what that
// gateway keeps is bounded by its own rules (a cache TTL, the database's change notices).
import type { Redis } from 'ioredis';
import { randomToken } from './ids.ts';
import type { Keyer } from './redis.ts';

const ACK_WAIT_MS = 3000;

/** Publishes `subject` on `channel` and returns once every subscriber confirmed it (or after ACK_WAIT_MS); the number
 *  of subscribers that confirmed. */
export async function broadcastAndAwait(redis: Redis, key: Keyer, channel: string, subject: string): Promise<number> {
  const ackList = key('broadcast-ack', randomToken(12));
  const receivers = await redis.publish(key(channel), `${subject} ${ackList}`);
  const until = Date.now() + ACK_WAIT_MS;
  let acked = 0;
  while (receivers > 0 && Date.now() < until && (acked = await redis.llen(ackList)) < receivers) {
    await new Promise((r) => setTimeout(r, 5));
  }
  await redis.del(ackList);
  return acked;
}

/** A subscriber's side: subscribes `subscriber` (a connection of its own) to `channel`; `apply` runs for each
 *  announcement, and the announcer learns of it once `apply` returned. */
export async function onBroadcast(subscriber: Redis, redis: Redis, key: Keyer, channel: string, apply: (subject: string) => void): Promise<void> {
  subscriber.on('message', (ch: string, message: string) => {
    if (ch !== key(channel)) return;
    const [subject, ackList] = message.split(' ');
    apply(subject);
    if (ackList) redis.multi().rpush(ackList, '1').pexpire(ackList, ACK_WAIT_MS * 2).exec().catch(() => undefined);
  });
  await subscriber.subscribe(key(channel));
}
