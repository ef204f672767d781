// The media process: a pool of mediasoup workers, one router per call, and the control API signaling drives them
// with (beside /healthz, /readyz and /metrics on MEDIA_PORT). See docs/architecture.md, "Media".
import { loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/log.ts';
import { isLoopback, loadMediaSettings } from '../shared/media/settings.ts';
import { runProcess } from '../shared/process.ts';
import { startControlServer } from './control-server.ts';
import { MediaMetrics, mediaOpsRoutes } from './metrics.ts';
import { MediaSessions } from './sessions.ts';
import { MediaWorkerPool } from './worker-pool.ts';

const config = loadConfig();
const settings = loadMediaSettings();
const log = createLogger('media', config.logLevel);
await runProcess(log, async () => {
  if (settings.controlSecretIsDefault && !isLoopback(config.host)) {
    throw new Error(`HOST=${config.host} would serve the media control API beyond this machine with the development secret: set MEDIA_CONTROL_SECRET`);
  }
  const metrics = new MediaMetrics(log); // before the pool, so it sees every worker
  const pool = await MediaWorkerPool.start(settings, log);
  const sessions = new MediaSessions(pool, settings, log);
  const ops = mediaOpsRoutes({ metrics, pool, sessions, token: config.metrics.token, log });
  let control;
  try {
    control = await startControlServer({ host: config.host, port: config.mediaPort, settings, pool, sessions, log, ops });
  } catch (err) {
    pool.close();
    throw err;
  }
  return {
    info: { control: control.url, health: `${control.url}/healthz`, workers: pool.pids, instanceId: control.instanceId },
    stop: async () => {
      sessions.closeAll('shutdown');
      await control.close();
      metrics.close();
      pool.close();
    },
  };
});
