import { createServer, type Server } from 'node:http';
import { OpsEndpoints, opsRoutes } from './ops.ts';
import type { Readiness } from '../readiness.ts';

export interface MetricsEndpoint {
  /** METRICS_TOKEN: required as a bearer token when set. */
  token: string | null;
  render(): Promise<string>;
}

/** A small operations listener: /healthz (alive), /readyz (shared/readiness.ts) when `ready` is given, and /metrics
 *  when `metrics` is given, routed by the shared router and pipeline (shared/http/ops.ts). The workers serve it on
 *  WORKERS_PORT, the gateway on METRICS_PORT (its admin listener). */
export async function startHealthServer(host: string, port: number, details: () => Promise<Record<string, unknown>>,
  ready?: () => Promise<Readiness>, metrics?: MetricsEndpoint) {
  const ops = new OpsEndpoints(opsRoutes({ details, ready, metrics }));
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    req.resume(); // no route reads a body
    void ops.answer(req.method ?? 'GET', path, req.headers.authorization).then((a) => res.writeHead(a.status, a.headers).end(a.body));
  });
  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(port, host, resolve); });
  const addr = server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : port,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
