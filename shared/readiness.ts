// /readyz of every process that uses the stores: ready only while PostgreSQL and Redis answer. The checks are cheap
// (SELECT 1, PING), bounded by a short timeout, and their result is kept for a second so that a load balancer's
// probes (several per second across replicas) never pile up on a store that is already struggling.
import type { Db } from './db.ts';
import type { Redis } from './redis.ts';

const CHECK_TIMEOUT_MS = 1_000;
const CACHE_MS = 1_000;

export type StoreState = 'ok' | 'down';
/** ready, and the state of each part the process needs: postgres and redis, and e.g. signaling's media link. */
export type Readiness = { ready: boolean } & { [part: string]: StoreState | boolean };

/** Resolves 'ok' if the check answers within CHECK_TIMEOUT_MS, 'down' otherwise. */
function probe(check: () => Promise<unknown>): Promise<StoreState> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('down'), CHECK_TIMEOUT_MS);
    check().then(() => 'ok' as const, () => 'down' as const).then((s) => { clearTimeout(timer); resolve(s); });
  });
}

/** A readiness check of one process's stores; call it per probe. */
export function storeReadiness(db: Db, redis: Redis): () => Promise<Readiness> {
  let last: { at: number; value: Promise<Readiness> } | null = null;
  // A check that outlived its timeout (a connection attempt to an unreachable host) is not started again while it
  // is still pending: a new one every second would fill the pool with stuck connection attempts.
  const pending = { postgres: false, redis: false };
  const guarded = (store: keyof typeof pending, check: () => Promise<unknown>): Promise<StoreState> => {
    if (pending[store]) return Promise.resolve('down');
    pending[store] = true;
    const run = check().finally(() => { pending[store] = false; });
    return probe(() => run);
  };
  return () => {
    const now = Date.now();
    if (last && now - last.at < CACHE_MS) return last.value;
    const value = Promise.all([guarded('postgres', () => db.one('SELECT 1')), guarded('redis', () => redis.ping())])
      .then(([postgres, redis]) => ({ ready: postgres === 'ok' && redis === 'ok', postgres, redis }));
    last = { at: now, value };
    return value;
  };
}

/** A readiness check that also needs `parts` (each read in memory, e.g. a link that is up or not) to be 'ok'. */
export function withParts(base: (() => Promise<Readiness>) | null, parts: Record<string, () => StoreState>): () => Promise<Readiness> {
  return async () => {
    const r: Readiness = base ? { ...await base() } : { ready: true };
    for (const [name, state] of Object.entries(parts)) {
      r[name] = state();
      if (r[name] !== 'ok') r.ready = false;
    }
    return r;
  };
}

/** The /readyz answer: 200 when ready, 503 otherwise, with each part's state. */
export function readinessReply(r: Readiness): { status: number; body: string } {
  const { ready, ...parts } = r;
  return { status: ready ? 200 : 503, body: JSON.stringify({ status: ready ? 'ready' : 'not_ready', ...parts }) };
}
