import { loadConfig } from '../shared/config.ts';
import { createDb } from '../shared/db.ts';
import { startHealthServer } from '../shared/health-server.ts';
import { createLogger } from '../shared/log.ts';
import { runProcess } from '../shared/process.ts';
import { createRedis } from '../shared/redis.ts';

// Signaling owns tickets, channel accounting and the softphone WebSocket; those arrive with the calling and
// browser issues. Today it is a real process with its connections and a health endpoint.
const config = loadConfig();
const log = createLogger('signaling', config.logLevel);
await runProcess(log, async () => {
  const db = createDb(config.databaseUrl, 5);
  const redis = createRedis(config.redisUrl);
  await Promise.all([db.one('SELECT 1'), redis.ping()]);
  const health = await startHealthServer(config.host, config.signalingPort, async () => {
    await redis.ping();
    return { proc: 'signaling' };
  });
  return {
    info: { health: `http://${config.host}:${health.port}/healthz` },
    stop: async () => { await health.close(); await redis.quit(); await db.$pool.end(); },
  };
});
