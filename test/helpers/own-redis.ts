// A Redis server that one test file owns, on its own port and without persistence (as this machine kind runs
// Redis), so the test can SIGKILL it and start it again empty without touching the shared one. Register it before
// testEnv so that it outlives the environment's teardown (tap runs teardowns last-registered first).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

interface TapLike { teardown(fn: () => unknown): void }

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

export class OwnRedis {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();

  private constructor(readonly port: number, private readonly dir: string) {}

  static async start(t: TapLike): Promise<OwnRedis> {
    const r = new OwnRedis(await freePort(), mkdtempSync(join(tmpdir(), 'ol-redis-')));
    t.teardown(async () => {
      await r.kill();
      rmSync(r.dir, { recursive: true, force: true });
    });
    await r.restart();
    return r;
  }

  get url(): string { return `redis://127.0.0.1:${this.port}`; }

  /** Starts the server (again) on the same port, empty, and waits until it answers. */
  async restart(): Promise<void> {
    if (this.child) throw new Error('own Redis is running');
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--dir', this.dir, '--loglevel', 'warning'], { stdio: 'ignore' });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    void this.exited.then(() => { if (this.child === child) this.child = null; });
    const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    const until = Date.now() + 20_000;
    try {
      for (;;) {
        try {
          if (probe.status !== 'ready') await probe.connect();
          if ((await probe.ping()) === 'PONG') return;
        } catch {
          probe.disconnect();
          if (Date.now() > until) throw new Error(`own Redis on ${this.port} did not answer`);
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    } finally {
      probe.disconnect();
    }
  }

  /** SIGKILL: everything it held is gone (no persistence). */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGKILL');
    await this.exited;
    this.child = null;
  }
}
