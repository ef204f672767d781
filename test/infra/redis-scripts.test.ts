// A Lua script registered while an automatic pipeline is already collecting this tick's commands must still run
// (ioredis copies custom commands into a pipeline when it creates it; the optimize rollup crashed the workers
// process this way when it registered its scripts at first use).
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRedis } from '../../shared/redis.ts';
import { defineScript, script } from '../../shared/redis-scripts.ts';

t.test('a script defined mid-tick runs in the same automatic pipeline', async (t) => {
  const file = join(tmpdir(), `ol-echo-${process.pid}.lua`);
  writeFileSync(file, 'return ARGV[1]');
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  t.teardown(() => redis.quit());
  await redis.ping();
  const before = redis.get(`ol-test-none-${process.pid}`); // opens this tick's pipeline
  defineScript(redis, 'olTestEchoMidTick', pathToFileURL(file), 1);
  const echoed = script(redis, 'olTestEchoMidTick')(`ol-test-k-${process.pid}`, 'hello');
  t.equal(await before, null);
  t.equal(await echoed, 'hello');
});
