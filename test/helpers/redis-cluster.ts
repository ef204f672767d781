// A 3-master Redis Cluster that one test file owns: three `redis-server --cluster-enabled yes` in a temporary
// directory on ports of their own, joined with `redis-cli --cluster create`, waited for until every node says
// cluster_state:ok. Removed by t.teardown (servers killed, directory deleted).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
interface TapLike { teardown(fn: () => unknown): void }

/** Whether a port on 127.0.0.1 can be listened on right now. */
function free(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** `n` ports whose cluster-bus ports (port + 10000) are free too, all below 55536 (so the bus port exists). */
async function clusterPorts(n: number): Promise<number[]> {
  const out: number[] = [];
  while (out.length < n) {
    const p = 20_000 + Math.floor(Math.random() * 20_000);
    if (!out.includes(p) && await free(p) && await free(p + 10_000)) out.push(p);
  }
  return out;
}

export class OwnRedisCluster {
  private readonly servers: ChildProcess[] = [];
  private constructor(readonly dir: string, readonly ports: number[]) {}

  /** REDIS_CLUSTER_NODES for this cluster. */
  get nodes(): string { return this.ports.map((p) => `127.0.0.1:${p}`).join(','); }

  static async create(t: TapLike, masters = 3): Promise<OwnRedisCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'ol-redis-cluster-'));
    const c = new OwnRedisCluster(dir, await clusterPorts(masters));
    t.teardown(() => c.destroy());
    for (const port of c.ports) {
      c.servers.push(spawn('redis-server', ['--cluster-enabled', 'yes', '--port', String(port), '--bind', '127.0.0.1',
        '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--dir', dir, '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' }));
    }
    for (const port of c.ports) await c.until(`redis-server on ${port} answers`, async () => (await c.cli(port, 'ping')) === 'PONG');
    await run('redis-cli', ['--cluster', 'create', ...c.ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      { timeout: 30_000 });
    for (const port of c.ports) {
      await c.until(`node ${port} says cluster_state:ok`, async () => /cluster_state:ok/.test(await c.cli(port, 'cluster', 'info')));
    }
    return c;
  }

  async cli(port: number, ...args: string[]): Promise<string> {
    try { return (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 5_000 })).stdout.trim(); } catch { return ''; }
  }

  private async until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Keys each master holds (DBSIZE), in port order. */
  async sizes(): Promise<number[]> {
    return Promise.all(this.ports.map(async (p) => Number(await this.cli(p, 'dbsize'))));
  }

  destroy(): void {
    for (const s of this.servers) s.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
