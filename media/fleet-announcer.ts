// MEDIA_FLEET=1: the media process announces itself and its load to the fleet, in one Redis hash every signaling
// process reads (signaling/media-fleet.ts). Each field is one media process's instance id; its value the
// MediaAnnouncement (shared/media/protocol.ts) with an expiresAt three heartbeats ahead, renewed every heartbeat and
// removed at a clean stop. A process that dies stops renewing: readers ignore (and remove) a lapsed field, and the
// whole hash expires with its last writer. The hash is one key used alone, so it needs no hash tag on a Redis Cluster.
import type { Logger } from '../shared/log.ts';
import type { MediaAnnouncement } from '../shared/media/protocol.ts';
import type { MediaSettings } from '../shared/media/settings.ts';
import type { Keyer, Redis } from '../shared/redis.ts';
import type { MediaMetrics } from './metrics.ts';
import type { MediaSessions } from './sessions.ts';
import type { MediaWorkerPool } from './worker-pool.ts';

/** The fleet's hash: instance id → MediaAnnouncement JSON. */
export const mediaFleetKey = (key: Keyer) => key('media', 'fleet');
/** An announcement not renewed for this many heartbeats is gone. */
export const ANNOUNCEMENT_HEARTBEATS = 3;
/** The hash itself outlives its last writer by this much (every announcement renews it), then goes. */
const HASH_TTL_MS = 600_000;

export interface AnnouncerDeps {
  redis: Redis;
  key: Keyer;
  settings: MediaSettings;
  instance: string;
  controlUrl: string;
  pool: MediaWorkerPool;
  sessions: MediaSessions;
  metrics: MediaMetrics;
  log: Logger;
}

export class MediaAnnouncer {
  private timer: NodeJS.Timeout | null = null;
  private lastCpu: { at: number; ms: number } | null = null;
  private stopped = false;
  private writing: Promise<void> | null = null;

  constructor(private readonly d: AnnouncerDeps) {}

  /** Announces now, then every heartbeat. */
  async start(): Promise<void> {
    await this.announce();
    this.timer = setInterval(() => { void this.announce().catch((err) => this.d.log.warn({ err }, 'fleet announcement failed')); }, this.d.settings.heartbeatMs);
  }

  /** Writes the announcement now (also on a change that should not wait for the heartbeat, e.g. draining). */
  announce(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.writing ??= this.write().finally(() => { this.writing = null; });
    return this.writing;
  }

  private async write(): Promise<void> {
    const { redis, key, settings, pool, sessions, metrics } = this.d;
    const now = Date.now();
    const cpuMs = await pool.cpuMs();
    const last = this.lastCpu;
    this.lastCpu = { at: now, ms: cpuMs };
    const workerCpu = last && now > last.at ? Math.max(0, (cpuMs - last.ms) / (now - last.at)) : 0;
    const ttl = ANNOUNCEMENT_HEARTBEATS * settings.heartbeatMs;
    const a: MediaAnnouncement = {
      instance: this.d.instance, controlUrl: this.d.controlUrl, pid: process.pid,
      listenIp: settings.listenIp, announcedIp: settings.announcedIp,
      sessions: sessions.size, routers: pool.routers, transports: metrics.transportCount, workers: pool.pids.length,
      workerCpu: Math.round(workerCpu * 1000) / 1000, draining: sessions.draining, at: now, expiresAt: now + ttl,
    };
    if (this.stopped) return;
    await redis.multi().hset(mediaFleetKey(key), this.d.instance, JSON.stringify(a)).pexpire(mediaFleetKey(key), Math.max(2 * ttl, HASH_TTL_MS)).exec();
  }

  /** Clean stop: the announcement goes at once (signaling stops placing calls here). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.writing?.catch(() => undefined);
    await this.d.redis.hdel(mediaFleetKey(this.d.key), this.d.instance).catch(() => undefined);
  }
}
