import { Redis, type RedisOptions } from 'ioredis';

export type { Redis };

// Commands stay queued while Redis reconnects, but BullMQ workers need maxRetriesPerRequest: null.
export function createRedis(url: string, opts: RedisOptions = {}): Redis {
  return new Redis(url, { lazyConnect: false, enableAutoPipelining: true, ...opts });
}

/** For a connection that serves requests (the gateway's): while Redis is unreachable a command waits for the next
 *  reconnect attempt only (at most half a second away) and fails with it, and never waits longer than
 *  commandTimeout (a host that does not answer at all), so the request answers 503 instead of hanging. */
export const REQUEST_PATH_REDIS: RedisOptions = {
  maxRetriesPerRequest: 0, retryStrategy: (attempt) => Math.min(attempt * 50, 500), commandTimeout: 3_000,
};

/** Builds a namespaced key: every Redis key of the platform goes through this. */
export function keyer(prefix: string) {
  return (...parts: (string | number)[]) => `${prefix}:${parts.join(':')}`;
}
export type Keyer = ReturnType<typeof keyer>;
