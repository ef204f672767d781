// FixedWindowLimiter with leases, against real Redis: a block of tokens per round trip, never more admitted than
// the limit (one process or several sharing the count), exact remaining counts within one process, a refusal
// remembered only briefly, and single-flight refills under a burst.
import t from 'tap';
import { FixedWindowLimiter } from '../../shared/ratelimit/fixed-window-limiter.ts';
import { createRedis } from '../../shared/redis.ts';
import { randomToken } from '../../shared/ids.ts';

const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const prefix = `olt_lease_${randomToken(6).toLowerCase()}`;
t.teardown(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.unlink(...keys);
  await redis.quit();
});
const k = (name: string) => `${prefix}:${name}`;

/** Counts the lease scripts a limiter sends to Redis, and the most in flight at once, by wrapping its script
 *  function. */
function counted(limiter: FixedWindowLimiter): { calls: number; inFlight: number; maxInFlight: number } {
  const box = { calls: 0, inFlight: 0, maxInFlight: 0 };
  const l = limiter as unknown as { lease: (...a: unknown[]) => Promise<unknown> };
  const inner = l.lease;
  l.lease = (...a) => {
    box.calls++;
    box.maxInFlight = Math.max(box.maxInFlight, ++box.inFlight);
    return inner(...a).finally(() => { box.inFlight--; });
  };
  return box;
}

t.test('one process: exact remaining, one round trip per block, the 101st refused', async (t) => {
  const limiter = new FixedWindowLimiter(redis, { leaseShare: 0.1 });
  const c = counted(limiter);
  const key = k('one');
  const decisions = await Promise.all(Array.from({ length: 100 }, () => limiter.take(key, 100)));
  t.ok(decisions.every((d) => d.allowed), 'the first 100 pass');
  t.same(decisions.map((d) => d.remaining).sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i),
    'each remaining count 99..0 is given exactly once');
  t.equal(c.calls, 10, 'ten blocks of ten: one round trip each, burst waiters share a refill');
  const refused = await limiter.take(key, 100);
  t.equal(refused.allowed, false, 'the 101st is refused');
  t.equal(refused.remaining, 0);
  t.equal(Number(await redis.get(key)), 100, 'Redis never counts past the limit');
  const ttl = await redis.pttl(key);
  t.ok(ttl > 0 && ttl <= 60_000, 'the counter expires with its window');
  t.ok(refused.resetAt > Date.now() && refused.resetAt <= Date.now() + 60_000, 'resetAt within the window');
});

t.test('a small limit asks Redis for every request', async (t) => {
  const limiter = new FixedWindowLimiter(redis, { leaseShare: 0.01 });
  const c = counted(limiter);
  const key = k('small');
  for (let i = 0; i < 5; i++) t.equal((await limiter.take(key, 50)).remaining, 49 - i);
  t.equal(c.calls, 5, '1% of 50 rounds to one token per lease');
});

t.test('blocks of one: concurrent requests ask Redis concurrently, not one after another', async (t) => {
  const limiter = new FixedWindowLimiter(redis);
  const c = counted(limiter);
  const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.take(k('exact'), 1000)));
  t.equal(c.calls, 20, 'one round trip per request');
  t.equal(c.maxInFlight, 20, 'all of them in flight together');
  t.same(decisions.map((d) => d.remaining).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => 980 + i));
});

t.test('a burst larger than a block sends refills in parallel, each serving a block', async (t) => {
  const limiter = new FixedWindowLimiter(redis, { leaseShare: 0.01 });
  const c = counted(limiter);
  const decisions = await Promise.all(Array.from({ length: 18 }, () => limiter.take(k('burst'), 600)));
  t.ok(decisions.every((d) => d.allowed));
  t.equal(c.calls, 3, 'blocks of 6 for a limit of 600: three refills for 18 requests');
  t.equal(c.maxInFlight, 3, 'sent together');
  t.same(decisions.map((d) => d.remaining).sort((a, b) => a - b), Array.from({ length: 18 }, (_, i) => 582 + i),
    'remaining counts stay exact');
});

t.test('several replicas sharing a key never admit more than the limit', async (t) => {
  const replicas = [0, 1, 2].map(() => new FixedWindowLimiter(redis, { leaseShare: 0.05 }));
  const key = k('shared');
  const limit = 200;
  const all = await Promise.all(Array.from({ length: 300 }, (_, i) => replicas[i % 3].take(key, limit)));
  const allowed = all.filter((d) => d.allowed).length;
  t.ok(allowed <= limit, `admitted ${allowed} of 300 against a limit of ${limit}`);
  t.ok(allowed >= limit - 3 * 10, 'stranded tokens are bounded by one block per replica');
  t.equal(Number(await redis.get(key)), limit, 'the shared count stops at the limit');
});

t.test('a refusal is remembered only briefly: a reset window is noticed', async (t) => {
  const limiter = new FixedWindowLimiter(redis, { leaseShare: 0.01 });
  const c = counted(limiter);
  const key = k('reset');
  await limiter.take(key, 1);
  t.equal((await limiter.take(key, 1)).allowed, false);
  const before = c.calls;
  t.equal((await limiter.take(key, 1)).allowed, false, 'a second refusal right away');
  t.equal(c.calls, before, '... answered without Redis');
  await redis.del(key);
  const until = Date.now() + 3000;
  let allowed = false;
  while (!allowed && Date.now() < until) {
    allowed = (await limiter.take(key, 1)).allowed;
    if (!allowed) await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(allowed, 'admitted again within about a second of the reset');
});

t.test('a changed limit takes effect at once', async (t) => {
  const limiter = new FixedWindowLimiter(redis, { leaseShare: 0.5 });
  const key = k('change');
  t.equal((await limiter.take(key, 10)).remaining, 9);
  const d = await limiter.take(key, 100);
  t.equal(d.limit, 100);
  t.ok(d.allowed);
  t.equal(d.remaining, 100 - 6, 'a new block is taken under the new limit (the old block of 5 is given up)');
});
