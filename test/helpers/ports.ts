// Free TCP ports on 127.0.0.1 for processes a test starts on ports of its own choosing.
import { createServer, type AddressInfo } from 'node:net';

/** Ports the OS reports free right now (all held open together, so they are distinct). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => resolve(s));
  })));
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** A port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0];
}
