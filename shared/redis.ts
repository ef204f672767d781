import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisNode } from './config.ts';

export type { Redis };

// Commands stay queued while Redis reconnects, but BullMQ workers need maxRetriesPerRequest: null.
export function createRedis(url: string, opts: RedisOptions = {}): Redis {
  return new Redis(url, { lazyConnect: false, enableAutoPipelining: true, ...opts });
}

/** Where a process's Redis is: the single instance at redisUrl, or a Redis Cluster (REDIS_CLUSTER_NODES). */
export interface RedisTarget { redisUrl: string; redisClusterNodes: RedisNode[] | null }

/** The process's Redis connection: a Redis, or an ioredis Cluster client when the target is a cluster. The cluster
 *  client is typed as Redis: the commands the platform uses are the same on both, and its duplicate() takes a
 *  Redis's options (see createCluster), so no caller needs to know which one it holds. */
export function connectRedis(target: RedisTarget, opts: RedisOptions = {}): Redis {
  return target.redisClusterNodes ? createCluster(target.redisClusterNodes, opts) : createRedis(target.redisUrl, opts);
}

/** Whether a connection is an ioredis Cluster client. */
export function isCluster(redis: Redis): boolean {
  return (redis as unknown as { isCluster?: boolean }).isCluster === true;
}

/** An ioredis Cluster client with a Redis's options: they apply to each node's connection (redisOptions), and a
 *  reconnect strategy also to the cluster's own (re)connection. Its duplicate(opts) takes a Redis's options, like
 *  Redis.duplicate (the platform's subscribers and BullMQ worker connections call it so); BullMQ's own call with
 *  (startupNodes, clusterOptions) still works. */
export function createCluster(nodes: RedisNode[], opts: RedisOptions = {}): Redis {
  const { enableAutoPipelining = true, retryStrategy, lazyConnect = false, ...redisOptions } = opts;
  const clusterOpts: ClusterOptions = {
    lazyConnect, enableAutoPipelining, redisOptions,
    ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) ?? null } : {}),
    // A fresh local cluster answers CLUSTERDOWN for a moment after it is formed; commands wait instead of failing.
    retryDelayOnClusterDown: 100,
    // How long a node may take to answer CLUSTER SLOTS. ioredis's 1 s failed at start-up on a busy 2-core machine (the
    // workers open one connection per queue, each fetching the slots while the process is still loading): the
    // connection then reported ClusterAllFailedError and retried. A refresh that waits longer holds up nothing else.
    slotsRefreshTimeout: 5_000,
  };
  return patchDuplicate(new Cluster(nodes, clusterOpts));
}

function patchDuplicate(cluster: Cluster): Redis {
  const original = cluster.duplicate.bind(cluster);
  (cluster as unknown as { duplicate: unknown }).duplicate = (a?: unknown, b?: ClusterOptions) => {
    if (Array.isArray(a) || (a === undefined && b !== undefined)) return patchDuplicate(original((a ?? []) as RedisNode[], b));
    const { enableAutoPipelining, retryStrategy, lazyConnect, ...redisOptions } = (a ?? {}) as RedisOptions;
    const over: ClusterOptions = { redisOptions: { ...cluster.options.redisOptions, ...redisOptions } };
    if (enableAutoPipelining !== undefined) over.enableAutoPipelining = enableAutoPipelining;
    if (lazyConnect !== undefined) over.lazyConnect = lazyConnect;
    if (retryStrategy) over.clusterRetryStrategy = (times: number) => retryStrategy(times) ?? null;
    return patchDuplicate(original([], over));
  };
  return cluster as unknown as Redis;
}

/** For a connection that serves requests (the gateway's): while Redis is unreachable a command waits for the next
 *  reconnect attempt only (at most half a second away) and fails with it, and never waits longer than
 *  commandTimeout (a host that does not answer at all), so the request answers 503 instead of hanging. */
export const REQUEST_PATH_REDIS: RedisOptions = {
  maxRetriesPerRequest: 0, retryStrategy: (attempt) => Math.min(attempt * 50, 500), commandTimeout: 3_000,
};

/** The key families whose keys a Lua script, a MULTI or an MGET uses together (with each other only). On a Redis
 *  Cluster each family's keys carry one hash tag, `{<prefix>:<family>}`, so they share a slot:
 *    chan     channel accounts: per-organization counter and holds, the set of organizations, the epoch
 *    spend    spend accounts: per-organization day accounts and the set of open days
 *    legs     live legs per organization and the set of organizations
 *    opt      Optimize: live and batch hashes, per-test seen/converted sets (collect and rollup scripts)
 *    carrier  carrier receipt ordering: per-leg sequence and per-delivery marker
 *    sms      SMS pacing: per-number slot and last-send keys
 *    sip      SIP leg owners (the reconciler reads them with one MGET)
 *    sig      signaling's heartbeats, the key saying since when Redis has kept them, the reconciler's lock: never used
 *             together in one command, but judged together: a heartbeat is missing for death only if the
 *             watched-since key survived with it, so on a cluster they must be lost together (one master)
 *  Every other key is used alone (one key per script or command), so it carries no tag and the cluster spreads
 *  those keys over all slots by their whole name. */
export const SLOT_FAMILIES: ReadonlySet<string> = new Set(['chan', 'spend', 'legs', 'opt', 'carrier', 'sms', 'sip', 'sig']);

/** Builds a namespaced key: every Redis key of the platform goes through this. With `hashTags` (a Redis Cluster),
 *  the keys of a family in SLOT_FAMILIES get the family's hash tag: `{ol:chan}:<org>:used` instead of
 *  `ol:chan:<org>:used`; without it (the single instance) the names are unchanged. */
export function keyer(prefix: string, hashTags = false) {
  if (!hashTags) return (...parts: (string | number)[]) => `${prefix}:${parts.join(':')}`;
  return (...parts: (string | number)[]) => SLOT_FAMILIES.has(String(parts[0]))
    ? `{${prefix}:${parts[0]}}${parts.length > 1 ? ':' : ''}${parts.slice(1).join(':')}`
    : `${prefix}:${parts.join(':')}`;
}
export type Keyer = ReturnType<typeof keyer>;

/** The key builder of a process's configuration (hash tags on a cluster). */
export const configKeyer = (config: RedisTarget & { redisPrefix: string }): Keyer => keyer(config.redisPrefix, config.redisClusterNodes !== null);

/** BullMQ's prefix. On a cluster every queue's keys share one hash tag, `{<prefix>}`: the sandbox carrier's
 *  FlowProducer adds jobs to several queues in one transaction, which needs them in one slot. */
export const queuePrefix = (config: RedisTarget & { redisPrefix: string }): string =>
  config.redisClusterNodes ? `{${config.redisPrefix}}` : config.redisPrefix;
