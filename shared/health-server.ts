import { createServer, type Server } from 'node:http';

/** A small /healthz endpoint for the internal processes (signaling, media, workers). */
export async function startHealthServer(host: string, port: number, details: () => Promise<Record<string, unknown>>) {
  const server: Server = createServer((req, res) => {
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
