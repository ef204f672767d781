// shared/unavailable.ts tells "a store cannot be reached" apart from every other failure, on real errors: a
// PostgreSQL backend terminated under a connection and a port nobody listens on; a Redis server that was killed and
// one that was frozen (SIGSTOP) under the gateway's connection options. Ordinary errors of either store, and an HTTP
// peer refusing a connection, stay unclassified. shared/readiness.ts answers within its timeout while a store hangs.
import t from 'tap';
import { createDb } from '../../shared/db.ts';
import { storeReadiness } from '../../shared/readiness.ts';
import { createRedis, REQUEST_PATH_REDIS } from '../../shared/redis.ts';
import { storeUnavailable, unreachableStore } from '../../shared/unavailable.ts';
import { httpError } from '../../shared/http/error-status.ts';
import { testEnv } from '../helpers/env.ts';
import { freePort, OwnRedis } from '../helpers/own-stores.ts';

const redisServer = await OwnRedis.create(t);
const env = await testEnv(t, { gateway: false });

const failure = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a failure'); }, (err: unknown) => err);

t.test('PostgreSQL: a terminated backend and a refused connection are outages; a bad query is not', async (t) => {
  const db = createDb(env.config.databaseUrl, 1, 'unavailable-test');
  db.$pool.on('error', () => undefined);
  t.teardown(() => db.$pool.end());
  const conn = await db.connect();
  const { pid } = await conn.one('SELECT pg_backend_pid() AS pid');
  await env.db.one('SELECT pg_terminate_backend($1)', [pid]);
  const terminated = await failure(conn.one('SELECT 1'));
  await Promise.resolve(conn.done(true)).catch(() => undefined);
  t.equal(unreachableStore(terminated), 'postgres', `terminated backend: ${(terminated as Error).message}`);

  const nowhere = createDb(`postgres://127.0.0.1:${await freePort()}/nothing`, 1, 'unavailable-test');
  nowhere.$pool.on('error', () => undefined);
  t.teardown(() => nowhere.$pool.end());
  const refused = await failure(nowhere.one('SELECT 1'));
  t.equal(unreachableStore(refused), 'postgres', `refused: ${(refused as Error).message}`);

  t.equal(unreachableStore(await failure(env.db.one('SELECT * FROM no_such_table'))), null, 'an undefined table is not an outage');
  t.equal(unreachableStore(await failure(env.db.one('SELECT 1/0'))), null, 'a division by zero is not an outage');
  t.equal(unreachableStore(new Error('boom')), null, 'a plain error is not an outage');
  const provider = await failure(fetch(`http://127.0.0.1:${await freePort()}/`));
  t.equal(unreachableStore(provider), null, `an HTTP peer refusing (fetch's cause ${(provider as any).cause?.code}) is not a store outage`);
});

t.test('Redis with the gateway\'s options: killed or frozen, a command fails in bounded time and is an outage', async (t) => {
  const redis = createRedis(redisServer.url, REQUEST_PATH_REDIS);
  redis.on('error', () => undefined);
  t.teardown(() => redis.disconnect());
  await redis.set('k', 'v');
  t.equal(unreachableStore(await failure(redis.hget('k', 'f'))), null, 'WRONGTYPE is not an outage');

  redisServer.signal('SIGSTOP');
  let start = Date.now();
  const frozen = await failure(redis.get('k'));
  const frozenMs = Date.now() - start;
  t.equal(unreachableStore(frozen), 'redis', `frozen server: ${(frozen as Error).message}`);
  t.ok(frozenMs < 5_000, `answered in ${frozenMs} ms, not held until the server wakes`);
  // Readiness: a ping that hangs is "down" after the check timeout, and is not asked again while it hangs.
  const readiness = storeReadiness(env.db, redis);
  start = Date.now();
  t.match(await readiness(), { ready: false, postgres: 'ok', redis: 'down' }, 'readiness: Redis down');
  t.ok(Date.now() - start < 3_000, `readiness answered in ${Date.now() - start} ms`);
  redisServer.signal('SIGCONT');

  await redisServer.kill();
  start = Date.now();
  const killed = await failure(redis.get('k'));
  t.equal(unreachableStore(killed), 'redis', `killed server: ${(killed as Error).message}`);
  t.ok(Date.now() - start < 5_000, `answered in ${Date.now() - start} ms`);
  await redisServer.start();
  t.equal(await redis.ping(), 'PONG', 'back once the server is');
});

t.test('the 503: service_unavailable with Retry-After, naming the store without internals', async (t) => {
  const e = httpError(storeUnavailable('postgres'));
  t.equal(e.status, 503);
  t.same(e.body, { error: { code: 'service_unavailable', message: 'The database (PostgreSQL) cannot be reached right now; retry after 3 seconds.' } });
  t.same(e.headers, { 'Retry-After': '3' });
  t.match(storeUnavailable('redis').message, /^Redis cannot be reached/);
});
