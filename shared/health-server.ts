import { createServer, type Server } from 'node:http';
import { readinessReply, type Readiness } from './readiness.ts';

/** A small /healthz endpoint for the internal processes (signaling, media, workers), and /readyz (shared/readiness.ts)
 *  when `ready` is given. */
export async function startHealthServer(host: string, port: number, details: () => Promise<Record<string, unknown>>,
  ready?: () => Promise<Readiness>) {
  const server: Server = createServer((req, res) => {
    if (req.url === '/readyz' && ready) {
      void ready().then((r) => { const { status, body } = readinessReply(r); res.writeHead(status, { 'content-type': 'application/json' }).end(body); });
      return;
    }
    if (req.url !== '/healthz') { res.writeHead(404).end(); return; }
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
