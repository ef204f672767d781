import { Redis, type RedisOptions } from 'ioredis';

export type { Redis };

// Commands stay queued while Redis reconnects, but BullMQ workers need maxRetriesPerRequest: null.
export function createRedis(url: string, opts: RedisOptions = {}): Redis {
  return new Redis(url, { lazyConnect: false, enableAutoPipelining: true, ...opts });
}

/** Builds a namespaced key: every Redis key of the platform goes through this. */
export function keyer(prefix: string) {
  return (...parts: (string | number)[]) => `${prefix}:${parts.join(':')}`;
}
export type Keyer = ReturnType<typeof keyer>;
