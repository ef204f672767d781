// A fixed-size pool of mediasoup workers (one C++ process each). A session's router lives on the least-loaded
// worker; a worker that dies is replaced, and mediasoup closes its routers, which ends their sessions.
import { EventEmitter } from 'node:events';
import type { types } from 'mediasoup';
import type { Logger } from '../shared/log.ts';
import type { MediaSettings } from '../shared/media/settings.ts';
import { mediasoup } from './mediasoup.ts';

interface PoolEvents {
  /** A worker died and another took its place (newWorker is null while replacing keeps failing). */
  replaced: [deadPid: number, newWorker: types.Worker | null];
}

export class MediaWorkerPool extends EventEmitter<PoolEvents> {
  private readonly workers: types.Worker[] = [];
  /** Routers per worker, to place a new one on the least-loaded worker. */
  private readonly load = new Map<types.Worker, number>();
  private closed = false;

  private constructor(private readonly settings: MediaSettings, private readonly log: Logger) { super(); }

  static async start(settings: MediaSettings, log: Logger): Promise<MediaWorkerPool> {
    const pool = new MediaWorkerPool(settings, log);
    try {
      for (let i = 0; i < settings.workers; i++) pool.add(await pool.spawn());
    } catch (err) {
      pool.close();
      throw err;
    }
    return pool;
  }

  get pids(): number[] { return this.workers.map((w) => w.pid); }

  list(): { pid: number; sessions: number }[] {
    return this.workers.map((w) => ({ pid: w.pid, sessions: this.load.get(w) ?? 0 }));
  }

  /** Routers open on all workers. */
  get routers(): number { let n = 0; for (const v of this.load.values()) n += v; return n; }

  /** CPU time (user + system, ms) the live workers have used since they started. */
  async cpuMs(): Promise<number> {
    const usage = await Promise.all(this.workers.filter((w) => !w.closed).map((w) => w.getResourceUsage().catch(() => null)));
    return usage.reduce((sum, u) => sum + (u ? u.ru_utime + u.ru_stime : 0), 0);
  }

  /** A router on the least-loaded live worker; the load count follows the router's life. */
  async createRouter(mediaCodecs: types.RtpCodecCapability[]): Promise<{ router: types.Router; workerPid: number }> {
    const worker = this.workers.filter((w) => !w.closed).sort((a, b) => this.load.get(a)! - this.load.get(b)!)[0];
    if (!worker) throw new Error('no mediasoup worker is running');
    const router = await worker.createRouter({ mediaCodecs });
    this.load.set(worker, (this.load.get(worker) ?? 0) + 1);
    router.observer.once('close', () => {
      if (this.load.has(worker)) this.load.set(worker, this.load.get(worker)! - 1);
    });
    return { router, workerPid: worker.pid };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.workers) w.close();
    this.workers.length = 0;
    this.load.clear();
  }

  private spawn(): Promise<types.Worker> {
    return mediasoup.createWorker({
      logLevel: 'warn',
      rtcMinPort: this.settings.rtcMinPort,
      rtcMaxPort: this.settings.rtcMaxPort,
    });
  }

  private add(worker: types.Worker): void {
    this.workers.push(worker);
    this.load.set(worker, 0);
    worker.once('died', (err) => void this.replace(worker, err));
  }

  private async replace(dead: types.Worker, err: Error): Promise<void> {
    const i = this.workers.indexOf(dead);
    if (i >= 0) this.workers.splice(i, 1);
    this.load.delete(dead);
    if (this.closed) return;
    this.log.error({ err, pid: dead.pid }, 'mediasoup worker died; replacing it');
    for (let attempt = 0; !this.closed; attempt++) {
      try {
        const fresh = await this.spawn();
        if (this.closed) { fresh.close(); return; }
        this.add(fresh);
        this.log.info({ deadPid: dead.pid, pid: fresh.pid }, 'mediasoup worker replaced');
        this.emit('replaced', dead.pid, fresh);
        return;
      } catch (spawnErr) {
        this.log.error({ err: spawnErr, attempt }, 'could not start a replacement mediasoup worker');
        if (attempt === 0) this.emit('replaced', dead.pid, null);
        await new Promise((r) => setTimeout(r, Math.min(30_000, 500 * 2 ** attempt)));
      }
    }
  }
}
