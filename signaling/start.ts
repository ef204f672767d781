import uWS from 'uWebSockets.js';
import { CallRuntime } from '../shared/calls/runtime.ts';
import type { Config } from '../shared/config.ts';
import { randomToken } from '../shared/ids.ts';
import type { Logger } from '../shared/log.ts';
import type { RunningProcess } from '../shared/process.ts';
import { createServices } from '../shared/services.ts';
import { listenExclusive } from '../shared/uws-listen.ts';
import { serveSignalingHttp } from './http.ts';
import { HEARTBEAT_MS, HEARTBEAT_TTL_MS, RECONCILE_MS, aliveKey, reconcileSignaling } from './reconciler.ts';
import { SOFTPHONE_PATH, Softphone } from './softphone.ts';
import { MediaFleet } from './media-fleet.ts';
import { SipService } from './sip/service.ts';

// Signaling: the softphone WebSocket (ticket redemption, call progress, call control), leg accounting and its
// reconciler, on one uWebSockets.js listener (SIGNALING_PORT) that also serves /healthz, /readyz (the stores, and
// the media link when this signaling drives media) and /metrics (METRICS_TOKEN when set).
export async function startSignaling(config: Config, log: Logger): Promise<RunningProcess> {
  const services = createServices(config, log, { name: 'signaling', poolMax: 10 });
  const { db, redis } = services;
  const stops: (() => Promise<void>)[] = [() => services.close()];
  const stop = async () => { for (const s of stops.splice(0).reverse()) await s(); };
  try {
    await Promise.all([db.one('SELECT 1'), redis.ping()]);
    const rt = new CallRuntime(services, false);
    const instance = randomToken(12);
    const beat = () => redis.set(aliveKey(rt, instance), '1', 'PX', HEARTBEAT_TTL_MS);
    await beat();
    const heartbeat = setInterval(() => { beat().catch((err) => log.warn({ err }, 'heartbeat failed')); }, HEARTBEAT_MS);
    stops.push(async () => { clearInterval(heartbeat); await redis.del(aliveKey(rt, instance)).catch(() => undefined); });

    const app = uWS.App();
    // Media: with the sandbox carrier signaling drives the media process (mediasoup); with LiveKit the media is
    // LiveKit's and the softphone WebSocket carries signaling only (welcome.media null). SIGNALING_MEDIA=off forces
    // signaling only (tests of the call flow, bench:signaling's redemption figure).
    // With the SIP trunk carrier signaling also runs the SIP user agent, whose legs' RTP is media's; a browser call's
    // session is the `sip` one its SIP leg joins. Both find a call's media process through the one MediaFleet
    // (signaling/media-fleet.ts: MEDIA_CONTROL_URL, or with MEDIA_FLEET=1 the media processes announced in Redis).
    const mediaOn = (config.carrier === 'sandbox' || config.carrier === 'sip') && config.signalingMedia;
    const fleet = mediaOn || config.carrier === 'sip' ? MediaFleet.create(config.media, redis, services.key, log) : null;
    if (fleet) stops.push(async () => fleet.stop());
    const media = mediaOn ? fleet : null;
    const sip = config.carrier === 'sip' && fleet ? new SipService(rt, instance, fleet, log) : null;
    await sip?.start();
    if (sip) stops.push(() => sip.stop());
    const phone = new Softphone(rt, instance, log, media);
    await phone.start(app);
    stops.push(() => phone.stop());
    fleet?.start(); // after both listen to it
    serveSignalingHttp(app, { config, db, redis, log, instance, phone, media: fleet, sip });

    let reconciling = false;
    const reconciler = setInterval(() => {
      if (reconciling) return;
      reconciling = true;
      reconcileSignaling(rt, phone.legs, media)
        .then((r) => { if (r?.abandoned) log.warn(r, 'abandoned browser calls of a signaling process that is gone'); })
        .catch((err) => log.error({ err }, 'signaling reconcile failed'))
        .finally(() => { reconciling = false; });
    }, RECONCILE_MS);
    stops.push(async () => clearInterval(reconciler));

    const listenSocket = await listenExclusive(app, config.host, config.signalingPort);
    stops.push(async () => uWS.us_listen_socket_close(listenSocket));
    const port = uWS.us_socket_local_port(listenSocket);
    return {
      info: { health: `http://${config.host}:${port}/healthz`, softphone: `ws://${config.host}:${port}${SOFTPHONE_PATH}`, instance,
        media: fleet ? (config.media.fleet ? 'fleet' : config.media.controlUrl) : null, sip: sip?.address ?? null, sip_tls: sip?.tlsAddress ?? null },
      stop,
    };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
