import type { Db } from './db.ts';

type Connection = Awaited<ReturnType<Db['connect']>>;

export interface ListenHandlers {
  /** A NOTIFY on the channel (payload as sent). */
  onNotify(payload: string): void;
  /** LISTEN is in effect (first time and after every reconnect): whatever was committed while not listening was
   *  missed, so a cache must start over here. */
  onUp?(): void;
  /** The connection was lost: notifications are missed until onUp. */
  onDown?(err: Error): void;
}

/** One dedicated PostgreSQL connection that LISTENs on a channel and comes back by itself after it is lost. */
export class PgListener {
  private conn: Connection | null = null;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(private readonly db: Db, private readonly channel: string, private readonly h: ListenHandlers,
    private readonly retryMs = 1000) {}

  get listening(): boolean { return this.conn !== null; }

  /** Resolves after the first attempt, listening or not (a failed attempt keeps retrying in the background). */
  async start(): Promise<void> {
    if (this.stopped) return;
    let c: Connection | null = null;
    try {
      c = await this.db.connect({ direct: true });
      c.client.on('notification', (m) => { if (m.channel === this.channel) this.h.onNotify(m.payload ?? ''); });
      c.client.on('error', (err) => this.lost(c!, err));
      await c.none('LISTEN $1:name', [this.channel]);
      if (this.stopped) return void c.done(true);
      this.conn = c;
      this.h.onUp?.();
    } catch (err) {
      if (c) void Promise.resolve(c.done(true)).catch(() => undefined);
      this.h.onDown?.(err as Error);
      this.schedule();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const c = this.conn;
    this.conn = null;
    if (c) await Promise.resolve(c.done(true)).catch(() => undefined);
  }

  private lost(c: Connection, err: Error): void {
    if (this.conn !== c) return;
    this.conn = null;
    void Promise.resolve(c.done(true)).catch(() => undefined);
    this.h.onDown?.(err);
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => { this.retry = null; void this.start(); }, this.retryMs);
    this.retry.unref();
  }
}
