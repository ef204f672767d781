import { loadConfig } from '../shared/config.ts';
import { createDb } from '../shared/db.ts';
import { startHealthServer } from '../shared/health-server.ts';
import { createLogger } from '../shared/log.ts';
import { runProcess } from '../shared/process.ts';
import { createRedis } from '../shared/redis.ts';

// BullMQ processors register here, one file per queue, as the areas that need them arrive.
const config = loadConfig();
const log = createLogger('workers', config.logLevel);
await runProcess(log, async () => {
  const db = createDb(config.databaseUrl, 10);
  const redis = createRedis(config.redisUrl, { maxRetriesPerRequest: null });
  await Promise.all([db.one('SELECT 1'), redis.ping()]);
  const health = await startHealthServer(config.host, config.workersPort, async () => ({ proc: 'workers', queues: [] }));
  return {
    info: { health: `http://${config.host}:${health.port}/healthz` },
    stop: async () => { await health.close(); await redis.quit(); await db.$pool.end(); },
  };
});
