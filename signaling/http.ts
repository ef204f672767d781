// Signaling's HTTP routes beside the softphone WebSocket, on the same uWS listener: /healthz, /readyz (the stores,
// and the media link when this signaling drives media) and /metrics (METRICS_TOKEN when set), routed by the shared
// router and pipeline (shared/http/ops.ts); any other path is a 404, another method a 405.
import type uWS from 'uWebSockets.js';
import type { Config } from '../shared/config.ts';
import type { Db } from '../shared/db.ts';
import { OpsEndpoints, opsRoutes } from '../shared/http/ops.ts';
import { writeAnswer } from '../shared/http/uws.ts';
import type { Logger } from '../shared/log.ts';
import { storeReadiness, withParts } from '../shared/readiness.ts';
import type { Redis } from '../shared/redis.ts';
import type { MediaFleet } from './media-fleet.ts';
import { renderMetrics } from './metrics.ts';
import type { SipService } from './sip/service.ts';
import type { Softphone } from './softphone.ts';

export interface SignalingHttpDeps {
  config: Config; db: Db; redis: Redis; log: Logger; instance: string;
  phone: Softphone; media: MediaFleet | null; sip: SipService | null;
}

export function serveSignalingHttp(app: uWS.TemplatedApp, d: SignalingHttpDeps): void {
  const { media, log } = d;
  const ops = new OpsEndpoints(opsRoutes({
    details: async () => ({ proc: 'signaling', instance: d.instance }),
    ready: withParts(storeReadiness(d.db, d.redis), media ? { media: () => (media.connected ? 'ok' : 'down') } : {}),
    metrics: {
      token: d.config.metrics.token,
      render: () => renderMetrics(d.phone, media, log, d.sip).catch((err) => { log.error({ err }, 'metrics failed'); throw err; }),
    },
  }));
  app.any('/*', (res, req) => {
    // The request is valid only during this call: copy what the routes read.
    const method = req.getCaseSensitiveMethod();
    const path = req.getUrl();
    const authorization = req.getHeader('authorization') || undefined;
    let aborted = false;
    res.onAborted(() => { aborted = true; });
    void ops.answer(method, path, authorization).then((a) => { if (!aborted) writeAnswer(res, a.status, a.headers, a.body, log); });
  });
}
