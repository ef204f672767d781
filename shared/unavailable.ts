// A store that cannot be reached (PostgreSQL or Redis down, restarting or cut off) is an outage, not a bug: the
// one place that tells such errors apart from every other failure, so callers answer 503 service_unavailable with
// Retry-After (clients and load balancers back off) instead of 500 internal_error.
import { DomainError } from './errors.ts';
import type { Logger } from './log.ts';
import type { Redis } from './redis.ts';

export type Store = 'postgres' | 'redis';

/** Seconds a client is told to wait before retrying while a store is unreachable. */
export const STORE_RETRY_AFTER_SECONDS = 3;

// Socket-level failures of a connection (what node's net module reports as err.code).
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH',
  'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);
// SQLSTATE class 08 (connection exception), and the server shutting down or still starting:
// 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now.
const PG_SHUTDOWN_CODES = new Set(['57P01', '57P02', '57P03']);
// node-postgres and pg-pool: the server closed the connection, a connect timed out, a broken client was reused.
const PG_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed)/;
// ioredis: commands flushed after the reconnect attempts allowed per request, refused on a closed connection or
// while offline, aborted by a connection close, past commandTimeout; a server still loading its dataset.
const REDIS_MESSAGES = /^(Connection is closed|Command timed out|Stream isn't writeable|Reached the max retries per request limit|Command aborted due to connection close|LOADING )/;

/** Which store an error says is unreachable, or null when it is any other error. */
export function unreachableStore(err: unknown): Store | null {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { name, message, code } = e as { name?: string; message?: string; code?: unknown };
    if (name === 'MaxRetriesPerRequestError' || REDIS_MESSAGES.test(message ?? '')) return 'redis';
    if (typeof code === 'string' && (code.startsWith('08') && code.length === 5 || PG_SHUTDOWN_CODES.has(code))) return 'postgres';
    if (PG_MESSAGES.test(message ?? '')) return 'postgres';
    // ioredis never rejects a command with a raw socket error (it reconnects and flushes its queue with the errors
    // above), so a bare one comes from a PostgreSQL connection. Only a bare one: fetch() wraps the socket error of an
    // HTTP peer (a provider) as its cause, and that peer is not a store.
    if (depth === 0 && typeof code === 'string' && NETWORK_CODES.has(code)) return 'postgres';
  }
  return null;
}

const STORE_NAMES: Record<Store, string> = { postgres: 'The database (PostgreSQL)', redis: 'Redis' };

/** The 503 answered while `store` cannot be reached (names the store, never the error's internals). */
export function storeUnavailable(store: Store): DomainError {
  return new DomainError('service_unavailable',
    `${STORE_NAMES[store]} cannot be reached right now; retry after ${STORE_RETRY_AFTER_SECONDS} seconds.`,
    { retryAfterSeconds: STORE_RETRY_AFTER_SECONDS });
}

/** What to log about an unreachable store: the error's code or first line, no stack. */
export function outageReason(err: unknown): string {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: string };
  return [typeof code === 'string' ? code : '', (message ?? String(err)).split('\n')[0].slice(0, 200)].filter(Boolean).join(' ');
}

/** Logs a Redis connection's loss once (warn, no stack) and its return, instead of ioredis's stack trace on stderr
 *  for every failed reconnect attempt of a connection without an error listener. */
export function reportRedisErrors(redis: Redis, log: Logger, connection: string): void {
  let down = false;
  redis.on('error', (err) => {
    if (down) return;
    down = true;
    log.warn({ store: 'redis', connection, reason: outageReason(err) }, 'Redis connection lost; reconnecting');
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    log.info({ store: 'redis', connection }, 'Redis connection back');
  });
}
