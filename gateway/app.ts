import { CallRuntime } from '../shared/calls/runtime.ts';
import { watchAccountChanges } from '../shared/accounts/snapshot.ts';
import { SCOPES } from '../shared/scopes.ts';
import { systemClock, type Clock } from '../shared/clock.ts';
import type { Config } from '../shared/config.ts';
import { createDb, type Db } from '../shared/db.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import { startHealthServer } from '../shared/health-server.ts';
import { Cursors } from '../shared/pagination.ts';
import { createRedis, keyer, REQUEST_PATH_REDIS, type Redis } from '../shared/redis.ts';
import { readinessReply, storeReadiness } from '../shared/readiness.ts';
import { reportRedisErrors } from '../shared/unavailable.ts';
import { buildOpenApi } from './http/openapi.ts';
import { listenUrl } from './http/public-url.ts';
import { HttpGateway } from './http/server.ts';
import type { Plugin } from './http/types.ts';
import { accountRoutes } from './routes/account.ts';
import { callRoutes } from './routes/calls.ts';
import { agentRoutes } from './routes/agents.ts';
import { phoneNumberLifecycleRoutes } from './routes/phone-number-lifecycle.ts';
import { phoneNumberRoutes } from './routes/phone-numbers.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { LIVEKIT_WEBHOOK_DOC, registerLiveKitWebhook } from './routes/livekit-webhook.ts';
import { callerTrustReputationRoutes } from './routes/caller-trust-reputation.ts';
import { clientTokenRoutes } from './routes/client-tokens.ts';
import { callerIdRoutes } from './routes/caller-ids.ts';
import { phoneNumberCnamRoutes } from './routes/phone-number-cnam.ts';
import { sandboxRoutes } from './routes/sandbox.ts';
import { numberHealthRoutes } from './routes/number-health.ts';
import { smsRoutes } from './routes/sms.ts';
import { registerSoftphone } from './routes/softphone.ts';
import { registerDocs } from './routes/docs.ts';
import { OPTIMIZE_PUBLIC_DOCS, optimizeRoutes, registerOptimizePublic } from './routes/optimize.ts';
import { contactRoutes } from './routes/contacts.ts';
import { usageRoutes } from './routes/usage.ts';
import { callerTrustEnterpriseRoutes } from './routes/caller-trust-enterprise.ts';
import { callerTrustBrandRoutes } from './routes/caller-trust-brand.ts';

/** Every API area, in the order its routes appear in the OpenAPI document (one per line: branches merge cleanly). */
export const AREAS: Plugin[] = [
  accountRoutes,
  phoneNumberRoutes,
  phoneNumberCnamRoutes,
  phoneNumberLifecycleRoutes,
  agentRoutes,
  webhookRoutes,
  callRoutes,
  clientTokenRoutes,
  callerIdRoutes,
  callerTrustEnterpriseRoutes,
  callerTrustBrandRoutes,
  callerTrustReputationRoutes,
  smsRoutes,
  contactRoutes,
  usageRoutes,
  numberHealthRoutes,
  optimizeRoutes,
  sandboxRoutes,
];

export interface GatewayOptions {
  config: Config;
  log?: Logger;
  clock?: Clock;
  /** Extra areas (tests use this to exercise pipeline features such as deprecation on a route of their own). */
  plugins?: Plugin[];
}

export interface RunningGateway {
  port: number;
  url: string;
  /** The admin listener (METRICS_HOST:METRICS_PORT): /metrics, /healthz, /readyz. */
  metricsUrl: string;
  gateway: HttpGateway;
  db: Db;
  redis: Redis;
  close(): Promise<void>;
}

export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const { config } = opts;
  const log = opts.log ?? createLogger('gateway', config.logLevel);
  const db = createDb(config.databaseUrl, config.databasePoolMax ?? 20, 'openline-gateway');
  // Requests must answer (503) rather than wait while Redis is unreachable: bounded retries and command time.
  const redis = createRedis(config.redisUrl, REQUEST_PATH_REDIS);
  reportRedisErrors(redis, log, 'gateway');
  const readiness = storeReadiness(db, redis);
  const { secret } = await db.one(`SELECT secret FROM server_secrets WHERE name = 'cursor'`);
  const clock = opts.clock ?? systemClock;
  const base = { config, db, redis, log, key: keyer(config.redisPrefix) };
  const gateway = new HttpGateway({ ...base, clock, cursors: new Cursors(secret, clock), calls: new CallRuntime(base, false) });
  for (const area of [...AREAS, ...(opts.plugins ?? [])]) gateway.register(area);

  gateway
    .addRaw('GET', '/healthz', () => ({ status: 200, contentType: 'application/json', body: '{"status":"ok"}' }))
    .addRaw('GET', '/readyz', async () => ({ contentType: 'application/json', ...readinessReply(await readiness()) }))
    .addRaw('GET', '/v1/openapi.json', () => ({
      status: 200, contentType: 'application/json',
      body: JSON.stringify(buildOpenApi(gateway.router.routes, gateway.baseUrl,
        [...OPTIMIZE_PUBLIC_DOCS, ...(config.livekit ? [LIVEKIT_WEBHOOK_DOC] : [])])),
    }))
    .addRaw('GET', '/.well-known/oauth-protected-resource', () => {
      const base = gateway.baseUrl;
      return {
        status: 200, contentType: 'application/json',
        body: JSON.stringify({
          resource: base,
          resource_name: 'Telephony, Caller-Trust and Website-Testing Service API',
          authorization_servers: [],
          bearer_methods_supported: ['header'],
          scopes_supported: SCOPES,
          resource_documentation: `${base}/v1/openapi.json`,
        }),
      };
    });

  // The API reference (GET /docs) rendering /v1/openapi.json, with its renderer served from here.
  await registerDocs(gateway, log);

  // The browser softphone page and its SDK bundle (static).
  await registerSoftphone(gateway, config, log);

  // The Optimize tag and its collector (public: the property's public key names the property).
  registerOptimizePublic(gateway);

  // The production carrier reports call progress through LiveKit webhooks.
  if (config.livekit) registerLiveKitWebhook(gateway, config.livekit);

  const accountWatch = await watchAccountChanges(db, redis, base.key, log, config.faults.accountNoticeDelayMs);
  const port = await gateway.listen(config.port, config.host);
  const stop = async () => {
    await gateway.close();
    await accountWatch.stop();
    await redis.quit().catch(() => undefined);
    await db.$pool.end();
  };
  // Metrics are not an API resource: they are served apart from the public port (loopback by default).
  const admin = await startHealthServer(config.metrics.host, config.metrics.port, async () => ({ proc: 'gateway' }), readiness,
    { token: config.metrics.token, render: () => gateway.metrics.render() })
    .catch(async (err) => { await stop(); throw err; });
  if (!config.publicUrl) {
    log.warn({ base_url: gateway.baseUrl }, `PUBLIC_URL is unset: links and WWW-Authenticate name the listen address ${gateway.baseUrl}`);
  }
  return {
    port, url: listenUrl(config.host, port), metricsUrl: listenUrl(config.metrics.host, admin.port), gateway, db, redis,
    close: async () => {
      await admin.close();
      await stop();
    },
  };
}
