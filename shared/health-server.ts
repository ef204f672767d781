import { createServer, type Server } from 'node:http';
import { METRICS_UNAUTHORIZED, metricsAuthorized } from './metrics/endpoint.ts';
import { PROMETHEUS_CONTENT_TYPE } from './metrics/exposition.ts';
import { readinessReply, type Readiness } from './readiness.ts';

export interface MetricsEndpoint {
  /** METRICS_TOKEN: required as a bearer token when set. */
  token: string | null;
  render(): Promise<string>;
}

/** A small operations listener: /healthz (alive), /readyz (shared/readiness.ts) when `ready` is given, and /metrics
 *  when `metrics` is given. The workers serve it on WORKERS_PORT, the gateway on METRICS_PORT (its admin listener). */
export async function startHealthServer(host: string, port: number, details: () => Promise<Record<string, unknown>>,
  ready?: () => Promise<Readiness>, metrics?: MetricsEndpoint) {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/readyz' && ready) {
      void ready().then((r) => { const { status, body } = readinessReply(r); res.writeHead(status, { 'content-type': 'application/json' }).end(body); });
      return;
    }
    if (path === '/metrics' && metrics) {
      if (!metricsAuthorized(metrics.token, req.headers.authorization)) {
        res.writeHead(METRICS_UNAUTHORIZED.status, METRICS_UNAUTHORIZED.headers).end(METRICS_UNAUTHORIZED.body);
        return;
      }
      metrics.render().then(
        (text) => res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE }).end(text),
        (err) => res.writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { code: 'internal_error', message: `metrics failed: ${(err as Error)?.message}` } })),
      );
      return;
    }
    if (path !== '/healthz') { res.writeHead(404).end(); return; }
    details().then(
      (d) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok', ...d })),
      (err) => res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'down', error: String(err) })),
    );
  });
  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(port, host, resolve); });
  const addr = server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : port,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
