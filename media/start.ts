// The media process's composition root: a pool of mediasoup workers, the sessions on them, and the control API
// signaling drives them with (beside /healthz, /readyz and /metrics on MEDIA_PORT). See docs/architecture.md, "Media".
// Media opens no database, Redis or queue: its services are the pool and the sessions.
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import { isLoopback } from '../shared/media/settings.ts';
import type { RunningProcess } from '../shared/process.ts';
import { startControlServer } from './control-server.ts';
import { MediaMetrics, mediaOpsRoutes } from './metrics.ts';
import { MediaSessions } from './sessions.ts';
import { MediaWorkerPool } from './worker-pool.ts';

export async function startMedia(config: Config, log: Logger): Promise<RunningProcess> {
  const settings = config.media;
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
    metrics.close();
    pool.close();
    throw err;
  }
  return {
    info: { control: control.url, health: `${control.url}/healthz`, workers: pool.pids, instanceId: control.instanceId },
    stop: async () => {
      await sessions.closeAll('shutdown');
      await control.close();
      metrics.close();
      pool.close();
    },
  };
}
