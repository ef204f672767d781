// The gateway's composition root: builds the process's services once (shared/services.ts), the HTTP application on
// them (app.ts), the account-change watch and the admin listener, and stops them in reverse order.
import { watchAccountChanges } from '../shared/accounts/snapshot.ts';
import { startOrphanSweep } from '../shared/documents/documents.ts';
import type { Config } from '../shared/config.ts';
import type { Db } from '../shared/db.ts';
import { startHealthServer } from '../shared/http/health-server.ts';
import type { Logger } from '../shared/log.ts';
import type { RunningProcess } from '../shared/process.ts';
import { storeReadiness } from '../shared/readiness.ts';
import { REQUEST_PATH_REDIS, type Redis } from '../shared/redis.ts';
import { createServices, type Services } from '../shared/services.ts';
import { buildGateway, type GatewayOptions } from './app.ts';
import { listenUrl } from './http/public-url.ts';
import type { HttpGateway } from './http/server.ts';

export type { GatewayOptions };

export interface RunningGateway extends RunningProcess {
  port: number;
  url: string;
  /** The admin listener (METRICS_HOST:METRICS_PORT): /metrics, /healthz, /readyz. */
  metricsUrl: string;
  gateway: HttpGateway;
  services: Services;
  db: Db;
  redis: Redis;
}

export async function startGateway(config: Config, log: Logger, opts: GatewayOptions = {}): Promise<RunningGateway> {
  // Requests must answer (503) rather than wait while Redis is unreachable: bounded retries and command time.
  const services = createServices(config, log, { name: 'gateway', poolMax: 20, redis: REQUEST_PATH_REDIS });
  const { db, redis } = services;
  const stops: (() => Promise<void>)[] = [() => services.close()];
  const stop = async () => { for (const s of stops.splice(0).reverse()) await s(); };
  try {
    const readiness = storeReadiness(db, redis);
    const gateway = await buildGateway(services, readiness, opts);
    const accountWatch = await watchAccountChanges(gateway.deps.accounts, db, redis, services.key, log, config.faults.accountNoticeDelayMs);
    stops.push(() => accountWatch.stop());
    // Files a crash left without their document row (shared/documents/documents.ts), hourly, an hour after writing.
    const sweep = startOrphanSweep(db, gateway.deps.documents, log, { everyMs: 3600_000, graceMs: 3600_000 });
    stops.push(async () => sweep.stop());
    const port = await gateway.listen(config.port, config.host);
    stops.push(() => gateway.close());
    // Metrics are not an API resource: they are served apart from the public port (loopback by default).
    const admin = await startHealthServer(config.metrics.host, config.metrics.port, async () => ({ proc: 'gateway' }), readiness,
      { token: config.metrics.token, render: () => gateway.metrics.render() });
    stops.push(() => admin.close());
    if (!config.publicUrl) {
      log.warn({ base_url: gateway.baseUrl }, `PUBLIC_URL is unset: links and WWW-Authenticate name the listen address ${gateway.baseUrl}`);
    }
    const url = listenUrl(config.host, port);
    const metricsUrl = listenUrl(config.metrics.host, admin.port);
    return { info: { url, metrics: metricsUrl }, stop, port, url, metricsUrl, gateway, services, db, redis };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
