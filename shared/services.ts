// The services object: what one process opens once at start (the database pool, the Redis connection, the queue
// registry) and hands to everything it runs. Built only in a composition root (<proc>/start.ts); domain code
// receives it (or the parts it needs) as deps, and never opens a store, builds a queue or reads the environment.
import type { RedisOptions } from 'ioredis';
import type { Config } from './config.ts';
import { createDb } from './db.ts';
import type { Logger } from './log.ts';
import type { ProcessDeps } from './process.ts';
import { QueueRegistry } from './queues/registry.ts';
import { configKeyer, connectRedis, queuePrefix } from './redis.ts';
import { TokenKeys } from './tokens/keys.ts';
import { reportRedisErrors } from './unavailable.ts';

export interface Services extends ProcessDeps {
  /** Closes what createServices opened: the queues, then Redis, then the database pool. Idempotent. */
  close(): Promise<void>;
}

export interface ServicesOptions {
  /** The process's name: the database pool's application_name is openline-<name>, and Redis errors are logged as it. */
  name: string;
  /** The database pool's size when DATABASE_POOL_MAX is unset. */
  poolMax: number;
  /** Options of the process's Redis connection (e.g. REQUEST_PATH_REDIS, or maxRetriesPerRequest null for BullMQ workers). */
  redis?: RedisOptions;
}

export function createServices(config: Config, log: Logger, o: ServicesOptions): Services {
  const db = createDb(config.databaseUrl, config.databasePoolMax ?? o.poolMax, `openline-${o.name}`);
  // Named, so CLIENT LIST tells the processes (and deployments sharing a Redis) apart; duplicates keep the name.
  const redis = connectRedis(config, { connectionName: `${config.redisPrefix}:openline-${o.name}`, ...o.redis });
  reportRedisErrors(redis, log, o.name);
  const queues = new QueueRegistry(redis, queuePrefix(config));
  let closing: Promise<void> | null = null;
  return {
    config, db, redis, key: configKeyer(config), log, queues, tokenKeys: new TokenKeys(db, config),
    close: () => (closing ??= (async () => {
      await queues.close();
      await redis.quit().catch(() => redis.disconnect());
      await db.$pool.end();
    })()),
  };
}
