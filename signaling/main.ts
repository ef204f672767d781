import uWS from 'uWebSockets.js';
import { CallRuntime } from '../shared/calls/runtime.ts';
import { loadConfig } from '../shared/config.ts';
import { createDb } from '../shared/db.ts';
import { randomToken } from '../shared/ids.ts';
import { createLogger } from '../shared/log.ts';
import { runProcess } from '../shared/process.ts';
import { readinessReply, storeReadiness, withParts } from '../shared/readiness.ts';
import { METRICS_UNAUTHORIZED, metricsAuthorized } from '../shared/metrics/endpoint.ts';
import { PROMETHEUS_CONTENT_TYPE } from '../shared/metrics/exposition.ts';
import { reportRedisErrors } from '../shared/unavailable.ts';
import { createRedis, keyer } from '../shared/redis.ts';
import { listenExclusive } from '../shared/uws-listen.ts';
import { renderMetrics } from './metrics.ts';
import { HEARTBEAT_MS, HEARTBEAT_TTL_MS, RECONCILE_MS, aliveKey, reconcileSignaling } from './reconciler.ts';
import { SOFTPHONE_PATH, Softphone } from './softphone.ts';
import { loadMediaSettings } from '../shared/media/settings.ts';
import { MediaLink } from './media.ts';
import { SipService } from './sip/service.ts';

// Signaling: the softphone WebSocket (ticket redemption, call progress, call control), leg accounting and its
// reconciler, on one uWebSockets.js listener (SIGNALING_PORT) that also serves /healthz, /readyz (the stores, and
// the media link when this signaling drives media) and /metrics (METRICS_TOKEN when set).
const config = loadConfig();
const log = createLogger('signaling', config.logLevel);
await runProcess(log, async () => {
  const db = createDb(config.databaseUrl, config.databasePoolMax ?? 10, 'openline-signaling');
  const redis = createRedis(config.redisUrl);
  reportRedisErrors(redis, log, 'signaling');
  await Promise.all([db.one('SELECT 1'), redis.ping()]);
  const rt = new CallRuntime({ config, db, redis, key: keyer(config.redisPrefix), log }, false);
  const instance = randomToken(12);
  const beat = () => redis.set(aliveKey(rt, instance), '1', 'PX', HEARTBEAT_TTL_MS);
  await beat();
  const heartbeat = setInterval(() => { beat().catch((err) => log.warn({ err }, 'heartbeat failed')); }, HEARTBEAT_MS);

  const app = uWS.App();
  // Media: with the sandbox carrier signaling drives the media process (mediasoup); with LiveKit the media is
  // LiveKit's and the softphone WebSocket carries signaling only (welcome.media null). SIGNALING_MEDIA=off forces
  // signaling only (tests of the call flow, bench:signaling's redemption figure).
  // With the SIP trunk carrier signaling also runs the SIP user agent, whose legs' RTP is media's (its own link); the
  // softphone carries signaling only there until browser calls reach SIP legs (docs/status.md).
  const mediaOn = config.carrier === 'sandbox' && config.signalingMedia;
  const mediaSettings = mediaOn || config.carrier === 'sip' ? loadMediaSettings() : null;
  const media = mediaOn && mediaSettings ? new MediaLink(mediaSettings.controlUrl, mediaSettings.controlSecret, log) : null;
  const sip = config.carrier === 'sip' && mediaSettings
    ? new SipService(rt, instance, new MediaLink(mediaSettings.controlUrl, mediaSettings.controlSecret, log), log) : null;
  await sip?.start();
  const phone = new Softphone(rt, instance, log, media);
  await phone.start(app);
  app.get('/healthz', (res) => {
    res.writeHeader('content-type', 'application/json').end(JSON.stringify({ status: 'ok', proc: 'signaling', instance }));
  });
  const readiness = withParts(storeReadiness(db, redis), media ? { media: () => (media.connected ? 'ok' : 'down') } : {});
  app.get('/readyz', (res) => {
    let aborted = false;
    res.onAborted(() => { aborted = true; });
    void readiness().then((r) => {
      const { status, body } = readinessReply(r);
      if (!aborted) res.cork(() => res.writeStatus(status === 200 ? '200 OK' : '503 Service Unavailable').writeHeader('content-type', 'application/json').end(body));
    });
  });
  app.get('/metrics', (res, req) => {
    if (!metricsAuthorized(config.metrics.token, req.getHeader('authorization'))) {
      const u = METRICS_UNAUTHORIZED;
      res.writeStatus('401 Unauthorized').writeHeader('content-type', u.headers['content-type'])
        .writeHeader('www-authenticate', u.headers['www-authenticate']).end(u.body);
      return;
    }
    let aborted = false;
    res.onAborted(() => { aborted = true; });
    renderMetrics(phone, media, log, sip).then(
      (text) => { if (!aborted) res.cork(() => res.writeHeader('content-type', PROMETHEUS_CONTENT_TYPE).end(text)); },
      (err) => { log.error({ err }, 'metrics failed'); if (!aborted) res.cork(() => res.writeStatus('500 Internal Server Error').end()); },
    );
  });
  app.any('/*', (res) => { res.writeStatus('404 Not Found').end(); });

  let reconciling = false;
  const reconciler = setInterval(() => {
    if (reconciling) return;
    reconciling = true;
    reconcileSignaling(rt, phone.legs, media?.client)
      .then((r) => { if (r?.abandoned) log.warn(r, 'abandoned browser calls of a signaling process that is gone'); })
      .catch((err) => log.error({ err }, 'signaling reconcile failed'))
      .finally(() => { reconciling = false; });
  }, RECONCILE_MS);

  const listenSocket = await listenExclusive(app, config.host, config.signalingPort);
  const port = uWS.us_socket_local_port(listenSocket);
  return {
    info: { health: `http://${config.host}:${port}/healthz`, softphone: `ws://${config.host}:${port}${SOFTPHONE_PATH}`, instance,
      media: mediaSettings?.controlUrl ?? null, sip: sip?.address ?? null },
    stop: async () => {
      clearInterval(heartbeat);
      clearInterval(reconciler);
      uWS.us_listen_socket_close(listenSocket);
      await phone.stop();
      await sip?.stop();
      await redis.del(aliveKey(rt, instance)).catch(() => undefined);
      await rt.queues.close().catch(() => undefined);
      await redis.quit();
      await db.$pool.end();
    },
  };
});
