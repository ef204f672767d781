// Whether Redis still holds what the platform put in it. PostgreSQL is the truth; Redis holds work in progress
// (channel and spend accounts, BullMQ's queued and delayed jobs: timers, carrier progress, webhook retries). A Redis
// restarted without persistence, or a failover to a replica that was behind, comes back empty or short: the workers
// notice that `repaired` is gone and rebuild from PostgreSQL (workers/services/redis-recovery.ts).
//   epoch     a token written when a repair starts; the outbox relay compares it before and after enqueueing
//             (shared/webhooks/relay.ts), so a batch whose jobs went into a Redis that was lost is relayed again
//   repaired  written when the repair is done; missing means Redis lost its state (or never had it) since
import type { Redis } from 'ioredis';
import { randomToken } from './ids.ts';
import type { Keyer } from './redis.ts';

/** A repair holds its lock this long at most (another process takes over after that). */
const REPAIR_LOCK_MS = 5 * 60_000;

export class RedisState {
  constructor(private readonly redis: Redis, private readonly key: Keyer) {}

  private get epochKey() { return this.key('state', 'epoch'); }
  private get repairedKey() { return this.key('state', 'repaired'); }
  private get lockKey() { return this.key('state', 'repair-lock'); }

  epoch(): Promise<string | null> { return this.redis.get(this.epochKey); }

  async repaired(): Promise<boolean> { return (await this.redis.exists(this.repairedKey)) === 1; }

  /** Takes the repair lock; null when another process holds it. */
  async lock(): Promise<string | null> {
    const token = randomToken(12);
    return (await this.redis.set(this.lockKey, token, 'PX', REPAIR_LOCK_MS, 'NX')) === 'OK' ? token : null;
  }

  /** Keeps a long repair's lock (true while it is still ours). */
  async extend(token: string): Promise<boolean> {
    if ((await this.redis.get(this.lockKey)) !== token) return false;
    return (await this.redis.pexpire(this.lockKey, REPAIR_LOCK_MS)) === 1;
  }

  async unlock(token: string): Promise<void> {
    if ((await this.redis.get(this.lockKey)) === token) await this.redis.del(this.lockKey);
  }

  /** A new epoch: relay batches that started before it will not commit. */
  async begin(): Promise<void> { await this.redis.set(this.epochKey, randomToken(12)); }

  async finish(): Promise<void> { await this.redis.set(this.repairedKey, String(Date.now())); }
}
