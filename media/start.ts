// The media process's composition root: a pool of mediasoup workers, the sessions on them, and the control API
// signaling drives them with (beside /healthz, /readyz and /metrics on MEDIA_PORT). See docs/architecture.md, "Media".
// Media opens no database or queue; with MEDIA_FLEET=1 it opens Redis only to announce itself and its load to the
// fleet (media/fleet-announcer.ts).
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import { isLoopback, isUnspecified } from '../shared/media/settings.ts';
import type { RunningProcess } from '../shared/process.ts';
import { configKeyer, connectRedis, type Redis } from '../shared/redis.ts';
import { startControlServer } from './control-server.ts';
import { MediaAnnouncer } from './fleet-announcer.ts';
import { MediaMetrics, mediaOpsRoutes } from './metrics.ts';
import { MediaSessions } from './sessions.ts';
import { MediaWorkerPool } from './worker-pool.ts';

export async function startMedia(config: Config, log: Logger): Promise<RunningProcess> {
  const settings = config.media;
  if (settings.controlSecretIsDefault && !isLoopback(config.host)) {
    throw new Error(`HOST=${config.host} would serve the media control API beyond this machine with the development secret: set MEDIA_CONTROL_SECRET`);
  }
  if (settings.fleet && !settings.advertiseUrl && isUnspecified(config.host)) {
    throw new Error(`MEDIA_FLEET=1 with HOST=${config.host}: set MEDIA_ADVERTISE_URL to the control URL signaling reaches this process at`);
  }
  const metrics = new MediaMetrics(log); // before the pool, so it sees every worker
  const pool = await MediaWorkerPool.start(settings, log);
  const sessions = new MediaSessions(pool, settings, log);
  const ops = mediaOpsRoutes({ metrics, pool, sessions, token: config.metrics.token, log });
  let control;
  let redis: Redis | null = null;
  let announcer: MediaAnnouncer | null = null;
  try {
    control = await startControlServer({ host: config.host, port: config.mediaPort, settings, pool, sessions, log, ops });
    if (settings.fleet) {
      redis = connectRedis(config, { connectionName: `${config.redisPrefix}:openline-media` });
      redis.on('error', (err) => log.warn({ err: err.message }, 'media fleet Redis error'));
      announcer = new MediaAnnouncer({ redis, key: configKeyer(config), settings, instance: control.instanceId,
        controlUrl: settings.advertiseUrl ?? control.url, pool, sessions, metrics, log });
      await announcer.start();
    }
  } catch (err) {
    await control?.close();
    redis?.disconnect();
    metrics.close();
    pool.close();
    throw err;
  }
  // Draining (SIGUSR2 or POST /v1/drain): the fleet hears it at once, and once the last session closed the process
  // stops as on SIGTERM (runProcess), which removes its announcement.
  const onSigusr2 = () => sessions.drain();
  process.on('SIGUSR2', onSigusr2);
  sessions.on('draining', () => { void announcer?.announce().catch(() => undefined); });
  sessions.once('drained', () => {
    log.warn('drained: no session left; stopping');
    // A turn later, so the answer to the request that closed the last session (or to POST /v1/drain) goes out first.
    setTimeout(() => process.kill(process.pid, 'SIGTERM'), 50);
  });
  return {
    info: { control: control.url, health: `${control.url}/healthz`, workers: pool.pids, instanceId: control.instanceId,
      fleet: settings.fleet ? (settings.advertiseUrl ?? control.url) : null },
    stop: async () => {
      process.off('SIGUSR2', onSigusr2);
      await announcer?.stop();
      await sessions.closeAll('shutdown');
      await control.close();
      await redis?.quit().catch(() => redis?.disconnect());
      metrics.close();
      pool.close();
    },
  };
}
