// The gateway's in-process credential cache against real PostgreSQL: a revocation announced while a lookup of
// the same key is in flight must not be undone when that lookup (which read the row before the revocation)
// finishes and fills the cache.
import t from 'tap';
import { Authenticator } from '../../gateway/http/auth.ts';
import { revokeApiKey } from '../../shared/accounts/keys.ts';
import type { Db } from '../../shared/db.ts';
import { keyer } from '../../shared/redis.ts';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t, { gateway: false });
const org = await env.bootstrap({ scopes: ['account:read'] });

/** The real database, with query answers held back until `release()` while `hold` is set. */
function gatedDb(db: Db) {
  let gate: Promise<void> | null = null;
  let open: () => void = () => undefined;
  let queried = 0;
  const proxy = new Proxy(db, {
    get(target, prop, recv) {
      const v = Reflect.get(target, prop, recv);
      if (prop !== 'oneOrNone') return v;
      return async (...args: unknown[]) => {
        const res = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        queried++;
        if (gate) await gate;
        return res;
      };
    },
  });
  return {
    db: proxy,
    hold() { gate = new Promise((r) => { open = r; }); },
    release() { gate = null; open(); },
    get queried() { return queried; },
  };
}

t.test('a revocation during an in-flight lookup is not cached over', async (t) => {
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'] });
  const g = gatedDb(env.db);
  const auth = new Authenticator(g.db, keyer(env.config.redisPrefix));

  g.hold();
  const inflight = auth.authenticate(`Bearer ${k.apiKey}`);
  // The lookup has read the live row; its answer is held back.
  while (g.queried < 1) await new Promise((r) => setTimeout(r, 5));
  await revokeApiKey(env.db, k.apiKeyId);
  auth.forget(k.apiKeyId); // what the Redis broadcast does
  g.release();
  const p = await inflight;
  t.equal(p.keyId, k.apiKeyId, 'the request that started before the revocation may still pass');

  await t.rejects(auth.authenticate(`Bearer ${k.apiKey}`), { code: 'unauthorized' }, 'every later request is refused');
});

t.test('without revocations, lookups are cached (one query per key)', async (t) => {
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'] });
  const g = gatedDb(env.db);
  const auth = new Authenticator(g.db, keyer(env.config.redisPrefix));
  for (let i = 0; i < 5; i++) t.equal((await auth.authenticate(`Bearer ${k.apiKey}`)).keyId, k.apiKeyId);
  t.equal(g.queried, 1, 'one database lookup for five requests');
  auth.forget(k.apiKeyId);
  await auth.authenticate(`Bearer ${k.apiKey}`);
  t.equal(g.queried, 2, 'forget() evicts the key');
});

t.test('unknown keys are negatively cached, malformed headers never reach the database', async (t) => {
  const g = gatedDb(env.db);
  const auth = new Authenticator(g.db, keyer(env.config.redisPrefix));
  for (let i = 0; i < 3; i++) await t.rejects(auth.authenticate('Bearer olk_nope'), { code: 'unauthorized' });
  t.equal(g.queried, 1);
  await t.rejects(auth.authenticate(undefined), { code: 'unauthorized', challenge: 'missing' });
  await t.rejects(auth.authenticate('Basic abc'), { code: 'unauthorized', challenge: 'invalid_request' });
  await t.rejects(auth.authenticate(`Bearer ${'z'.repeat(300)}`), { code: 'unauthorized', challenge: 'invalid_token' });
  t.equal(g.queried, 1, 'no lookups for malformed or oversized credentials');
});
