// A scripted WebSocket peer on a real loopback socket (uWebSockets.js), standing in for the signaling service in
// browser tests of the SDK: it records every frame the browser sends and answers as the test's script says.
import uWS from 'uWebSockets.js';

export interface PeerSocket {
  send(msg: unknown): void;
  close(code?: number, reason?: string): void;
  readonly closed: boolean;
}

export interface WsPeer {
  url: string;
  /** Every JSON frame received, in order, across connections. */
  received: any[];
  /** Resolves with the first received frame of that type (waits for it). */
  next(type: string, timeoutMs?: number): Promise<any>;
  close(): void;
}

interface TapLike { teardown(fn: () => unknown): void }

export async function startWsPeer(t: TapLike, onMessage: (msg: any, socket: PeerSocket) => void, path = '/v1/softphone'): Promise<WsPeer> {
  const received: any[] = [];
  const waiters: Array<() => void> = [];
  const app = uWS.App().ws<{ closed: boolean }>('/*', {
    open: () => undefined,
    message: (ws, data) => {
      const msg = JSON.parse(Buffer.from(data).toString('utf8'));
      received.push(msg);
      for (const w of waiters.splice(0)) w();
      const state = ws.getUserData();
      const socket: PeerSocket = {
        send: (m) => { if (!state.closed) ws.send(JSON.stringify(m)); },
        close: (code = 1000, reason = '') => { if (!state.closed) { state.closed = true; ws.end(code, reason); } },
        get closed() { return state.closed; },
      };
      onMessage(msg, socket);
    },
    close: (ws) => { ws.getUserData().closed = true; },
    upgrade: (res, req, context) => {
      res.upgrade({ closed: false }, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'),
        req.getHeader('sec-websocket-extensions'), context);
    },
  });
  const listen = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    app.listen('127.0.0.1', 0, (sock) => (sock ? resolve(sock) : reject(new Error('ws peer cannot listen'))));
  });
  const close = () => uWS.us_listen_socket_close(listen);
  t.teardown(close);

  return {
    url: `ws://127.0.0.1:${uWS.us_socket_local_port(listen)}${path}`,
    received,
    async next(type, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const hit = received.find((m) => m.type === type);
        if (hit) return hit;
        const left = until - Date.now();
        if (left <= 0) throw new Error(`no "${type}" frame within ${timeoutMs} ms; got ${JSON.stringify(received.map((m) => m.type))}`);
        await new Promise<void>((r) => { waiters.push(r); setTimeout(r, Math.min(left, 250)); });
      }
    },
    close,
  };
}
