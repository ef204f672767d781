import { CallRuntime } from '../shared/calls/runtime.ts';
import { createReputationProvider } from '../shared/caller-trust/reputation/settings.ts';
import { SCOPES } from '../shared/scopes.ts';
import { systemClock, type Clock } from '../shared/clock.ts';
import { Cursors } from '../shared/pagination.ts';
import { AccountReader } from '../shared/accounts/snapshot.ts';
import { createMailer } from '../shared/mail/mailer.ts';
import { FixedWindowLimiter } from '../shared/ratelimit/fixed-window-limiter.ts';
import type { ProcessDeps } from '../shared/process.ts';
import { readinessReply, type Readiness } from '../shared/readiness.ts';
import { buildOpenApi } from './http/openapi.ts';
import { HttpGateway } from './http/server.ts';
import type { Plugin } from './http/types.ts';
import { accountRoutes } from './routes/account.ts';
import { callRoutes } from './routes/calls.ts';
import { agentRoutes } from './routes/agents.ts';
import { phoneNumberLifecycleRoutes } from './routes/phone-number-lifecycle.ts';
import { phoneNumberImportRoutes } from './routes/phone-number-import.ts';
import { phoneNumberRoutes } from './routes/phone-numbers.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { LIVEKIT_WEBHOOK_DOC, registerLiveKitWebhook } from './routes/livekit-webhook.ts';
import { callerTrustReputationRoutes } from './routes/caller-trust-reputation.ts';
import { clientTokenRoutes } from './routes/client-tokens.ts';
import { callerIdRoutes } from './routes/caller-ids.ts';
import { phoneNumberCnamRoutes } from './routes/phone-number-cnam.ts';
import { sandboxRoutes } from './routes/sandbox.ts';
import { numberHealthRoutes } from './routes/number-health.ts';
import { numberRegistrationRoutes } from './routes/number-registration.ts';
import { smsRoutes } from './routes/sms.ts';
import { registerSoftphone } from './routes/softphone.ts';
import { registerDocs } from './routes/docs.ts';
import { OPTIMIZE_PUBLIC_DOCS, optimizeRoutes, registerOptimizePublic } from './routes/optimize.ts';
import { contactRoutes } from './routes/contacts.ts';
import { usageRoutes } from './routes/usage.ts';
import { documentRoutes } from './routes/documents.ts';
import { appointmentRoutes } from './routes/appointments.ts';
import { subEntityRoutes } from './routes/sub-entities.ts';
import { taskRoutes } from './routes/tasks.ts';
import { documentStorage } from '../shared/documents/storage.ts';
import { callerTrustEnterpriseRoutes } from './routes/caller-trust-enterprise.ts';
import { callerTrustBrandRoutes } from './routes/caller-trust-brand.ts';
import { consoleRoutes } from './routes/console.ts';
import { registerConsoleUi } from './routes/console-ui.ts';

/** Every API area, in the order its routes appear in the OpenAPI document (one per line: branches merge cleanly). */
export const AREAS: Plugin[] = [
  accountRoutes,
  phoneNumberRoutes,
  phoneNumberCnamRoutes,
  phoneNumberLifecycleRoutes,
  phoneNumberImportRoutes,
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
  documentRoutes,
  appointmentRoutes,
  subEntityRoutes,
  taskRoutes,
  numberHealthRoutes,
  numberRegistrationRoutes,
  optimizeRoutes,
  sandboxRoutes,
  consoleRoutes,
];

/** The areas whose routes narrow to a credential limited to a sub-entity (shared/sub-entities/limit.ts); every other
 *  area's routes refuse such a credential. A route may differ from its area (RouteDef.subEntities). */
const SUB_ENTITY_SCOPED = new Set<Plugin>([
  accountRoutes, phoneNumberRoutes, phoneNumberCnamRoutes, phoneNumberLifecycleRoutes, phoneNumberImportRoutes, agentRoutes,
  callRoutes, clientTokenRoutes, smsRoutes, contactRoutes, usageRoutes, documentRoutes, subEntityRoutes,
]);

export interface GatewayOptions {
  clock?: Clock;
  /** Extra areas (tests use this to exercise pipeline features such as deprecation on a route of their own). */
  plugins?: Plugin[];
}

/** The gateway's HTTP application on the process's services: every area's routes and the raw routes (health,
 *  OpenAPI, docs, softphone page, Optimize's public tag, LiveKit's webhook). Listening is start.ts's. */
export async function buildGateway(services: ProcessDeps, readiness: () => Promise<Readiness>, opts: GatewayOptions = {}): Promise<HttpGateway> {
  const { config, db, redis, log } = services;
  const { secret } = await db.one(`SELECT secret FROM server_secrets WHERE name = 'cursor'`);
  const clock = opts.clock ?? systemClock;
  const base: ProcessDeps = { config, db, redis, log, key: services.key, queues: services.queues, tokenKeys: services.tokenKeys };
  const gateway = new HttpGateway({ ...base, clock, cursors: new Cursors(secret, clock), calls: new CallRuntime(base, false),
    reputation: createReputationProvider(db, config), accounts: new AccountReader(db), mailer: createMailer(config, db),
    passwordResets: new FixedWindowLimiter(redis, { windowMs: 3600_000 }), documents: documentStorage(config) });
  for (const area of [...AREAS, ...(opts.plugins ?? [])]) gateway.register(area, { subEntityScoped: SUB_ENTITY_SCOPED.has(area) });

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

  // The console's web front end (static, a single-page app under /console).
  await registerConsoleUi(gateway, log);

  // The Optimize tag and its collector (public: the property's public key names the property).
  registerOptimizePublic(gateway);

  // The production carrier reports call progress through LiveKit webhooks.
  if (config.livekit) registerLiveKitWebhook(gateway, config.livekit);

  return gateway;
}
