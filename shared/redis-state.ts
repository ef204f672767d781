// Whether Redis still holds what the platform put in it. PostgreSQL is the truth; Redis holds work in progress
// (channel and spend accounts, BullMQ's queued and delayed jobs: timers, carrier progress, webhook retries). A Redis
// restarted without persistence, or a failover to a replica that was behind, comes back empty or short: the workers
// notice that `repaired` is gone and rebuild from PostgreSQL (workers/services/redis-recovery.ts).
//   epoch     a token written when a repair starts; the outbox relay compares it before and after enqueueing
//             (shared/webhooks/relay.ts), so a batch whose jobs went into a Redis that was lost is relayed again
//   repaired  written when the repair is done; missing means Redis lost its state (or never had it) since. On a
//             Redis Cluster a master can lose its slots alone, so there is one `repaired` marker in each slot that
//             holds state: BullMQ's (`{<prefix>}`) and each tagged family's (SLOT_FAMILIES); any one missing is a loss.
import type { Redis } from 'ioredis';
import { randomToken } from './ids.ts';
import { queuePrefix, SLOT_FAMILIES, type Keyer, type RedisTarget } from './redis.ts';

/** A repair holds its lock this long at most (another process takes over after that). */
const REPAIR_LOCK_MS = 5 * 60_000;

export class RedisState {
  private readonly markers: string[];

  /** queuePrefix: BullMQ's prefix on a Redis Cluster (`{<prefix>}`, shared/redis.ts queuePrefix); omitted or null on
   *  a single instance, where one marker tells. */
  constructor(private readonly redis: Redis, private readonly key: Keyer, queuePrefix: string | null = null) {
    this.markers = queuePrefix === null
      ? [this.repairedKey]
      : [this.repairedKey, `${queuePrefix}:state:repaired`, ...[...SLOT_FAMILIES].map((family) => key(family, 'state', 'repaired'))];
  }

  private get epochKey() { return this.key('state', 'epoch'); }
  private get repairedKey() { return this.key('state', 'repaired'); }
  private get lockKey() { return this.key('state', 'repair-lock'); }

  epoch(): Promise<string | null> { return this.redis.get(this.epochKey); }

  /** Every marker is still there (one EXISTS per marker: on a cluster they live in different slots). */
  async repaired(): Promise<boolean> {
    const found = await Promise.all(this.markers.map((k) => this.redis.exists(k)));
    return found.every((n) => n === 1);
  }

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

  async finish(): Promise<void> {
    const now = String(Date.now());
    await Promise.all(this.markers.map((k) => this.redis.set(k, now)));
  }
}

/** The process's RedisState: markers in every slot of state on a cluster, one on a single instance. */
export const redisStateOf = (deps: { redis: Redis; key: Keyer; config: RedisTarget & { redisPrefix: string } }): RedisState =>
  new RedisState(deps.redis, deps.key, deps.config.redisClusterNodes ? queuePrefix(deps.config) : null);
