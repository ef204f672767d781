// HTTP versions over a raw socket. HTTP/1.1 is answered; HTTP/1.0 should get a status (505 or a served response with
// Connection: close), but this uWebSockets.js build (20.30) drops it inside its native parser before any JavaScript
// runs: no handler is called and the socket is closed after uWS's idle timeout (~10 s). That check is a tap `todo`
// until the gateway runs on a uWS build that answers (see docs/status.md).
import { connect } from 'node:net';
import t from 'tap';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t);
const port = env.gateway!.port;

/** Sends raw bytes and collects what comes back until the server closes or `waitMs` passes. */
function raw(bytes: string, waitMs: number): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(bytes));
    let text = '';
    let closedByServer = false;
    s.on('data', (d) => { text += d; });
    s.on('end', () => { closedByServer = true; });
    s.on('error', reject);
    s.setTimeout(waitMs, () => s.destroy());
    s.on('close', () => resolve({ text, closedByServer }));
  });
}

t.test('HTTP/1.1 over a raw socket is answered', async (t) => {
  const r = await raw('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', 10_000);
  t.match(r.text, /^HTTP\/1\.1 200 OK\r\n/);
  t.match(r.text, /\{"status":"ok"\}$/);
});

t.test('HTTP/1.0 gets a status line, never silence', { todo: 'uWS 20.30 drops HTTP/1.0 in its native parser; no hook exists' }, async (t) => {
  const r = await raw('GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n', 3_000);
  t.match(r.text, /^HTTP\/1\.[01] (200|505) /, `got ${JSON.stringify(r.text.slice(0, 80))}`);
});
