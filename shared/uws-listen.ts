// uWebSockets.js listens with SO_REUSEPORT by default, so a second copy of a process binds the same port and
// silently shares its traffic. The platform's listeners bind exclusively instead: a second copy fails to start.
import uWS from 'uWebSockets.js';

/** LIBUS_LISTEN_EXCLUSIVE_PORT: uWS takes it as listen(host, port, options, cb), which its typings leave out. */
const EXCLUSIVE = 1;
type ListenWithOptions = (host: string, port: number, options: number, cb: (s: uWS.us_listen_socket | false) => void) => uWS.TemplatedApp;

/** Binds app on host:port (0: an ephemeral port) for this process alone; rejects when the port is taken. */
export function listenExclusive(app: uWS.TemplatedApp, host: string, port: number): Promise<uWS.us_listen_socket> {
  return new Promise((resolve, reject) => {
    (app.listen as unknown as ListenWithOptions).call(app, host, port, EXCLUSIVE, (sock) =>
      (sock ? resolve(sock) : reject(new Error(`cannot listen on ${host}:${port} (in use, or not an address of this machine)`))));
  });
}
