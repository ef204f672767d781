import type { Redis } from 'ioredis';
import type { Keyer } from '../../redis.ts';
import { defineScript, script } from '../../redis-scripts.ts';

// One refresh of a number at a time, paid or background: a Redis lock per number with an owner and a lease. The
// lease outlives a provider lookup with its retries; a process that dies holding it delays that number by the lease.
export const REFRESH_LOCK_MS = 45_000;

export class RefreshLock {
  private readonly releaseScript;
  constructor(private readonly redis: Redis, private readonly key: Keyer) {
    defineScript(redis, 'olReputationRelease', new URL('./release-lock.lua', import.meta.url), 1);
    this.releaseScript = script(redis, 'olReputationRelease');
  }

  private lockKey(phoneId: number) { return this.key('reputation', 'refresh-lock', String(phoneId)); }

  /** True when `owner` now holds the lock; an owner that already holds it (a retried job) holds it again. */
  async acquire(phoneId: number, owner: string): Promise<boolean> {
    if ((await this.redis.set(this.lockKey(phoneId), owner, 'PX', REFRESH_LOCK_MS, 'NX')) === 'OK') return true;
    if ((await this.redis.get(this.lockKey(phoneId))) !== owner) return false;
    await this.redis.pexpire(this.lockKey(phoneId), REFRESH_LOCK_MS);
    return true;
  }

  async release(phoneId: number, owner: string): Promise<void> {
    await this.releaseScript(this.lockKey(phoneId), owner);
  }
}
