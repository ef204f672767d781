// The media process's sessions, one per call id. Create is idempotent: a retried request gets the same session.
import { EventEmitter } from 'node:events';
import type { Logger } from '../shared/log.ts';
import type { SessionCloseReason } from '../shared/media/protocol.ts';
import type { MediaSettings } from '../shared/media/settings.ts';
import { ControlError } from './errors.ts';
import { MediaSession } from './session.ts';
import type { MediaWorkerPool } from './worker-pool.ts';

interface SessionsEvents {
  closed: [callId: string, reason: SessionCloseReason];
  /** Draining began (announced at once). */
  draining: [];
  /** Draining, and the last session closed: the process may exit. */
  drained: [];
}

export class MediaSessions extends EventEmitter<SessionsEvents> {
  private readonly sessions = new Map<string, MediaSession>();
  /** Creations in flight, so two concurrent creates of one call id share one router. */
  private readonly creating = new Map<string, Promise<MediaSession>>();

  constructor(private readonly pool: MediaWorkerPool, private readonly settings: MediaSettings, private readonly log: Logger) { super(); }

  /** Draining (a rolling restart): no new sessions, the live ones carry on; `drained` once the last one closed. */
  private drainingSince: Date | null = null;

  get size(): number { return this.sessions.size; }

  get draining(): boolean { return this.drainingSince !== null; }

  /** Takes no new sessions from now on; `drained` fires when none is left (at once when there is none). */
  drain(): void {
    if (this.drainingSince) return;
    this.drainingSince = new Date();
    this.log.warn({ sessions: this.sessions.size }, 'draining: no new sessions; exiting once the last one closed');
    this.emit('draining');
    this.emitIfDrained();
  }

  private emitIfDrained(): void {
    if (this.drainingSince && this.sessions.size === 0 && this.creating.size === 0) this.emit('drained');
  }

  async create(callId: string, maxDurationMs?: number, carrier: 'sandbox' | 'sip' = 'sandbox', record = false): Promise<{ session: MediaSession; created: boolean }> {
    const made = await this.createOnce(callId, maxDurationMs, carrier);
    // A recording that cannot start (e.g. RECORDINGS_DIR not writable) does not stop the call: it is logged.
    if (record) await made.session.startRecording(this.log).catch((err) => this.log.error({ err, callId }, 'the call cannot be recorded'));
    return made;
  }

  private async createOnce(callId: string, maxDurationMs: number | undefined, carrier: 'sandbox' | 'sip'): Promise<{ session: MediaSession; created: boolean }> {
    const pending = this.creating.get(callId);
    const existing = this.sessions.get(callId) ?? (pending && await pending);
    if (existing) {
      if (existing.carrier !== carrier) throw new ControlError('conflict', `session ${callId} exists with carrier ${existing.carrier}`);
      return { session: existing, created: false };
    }
    // A retried create of a live session is fine (above); a new call goes to another media process.
    if (this.drainingSince) throw new ControlError('unavailable', 'this media process is draining: it takes no new sessions');
    const creation = MediaSession.create(this.pool, callId, this.settings, maxDurationMs ?? this.settings.sessionMaxMs, carrier);
    this.creating.set(callId, creation);
    try {
      const session = await creation;
      this.sessions.set(callId, session);
      session.once('closed', (reason) => {
        this.sessions.delete(callId);
        this.log.info({ callId, reason }, 'media session closed');
        this.emit('closed', callId, reason);
        this.emitIfDrained();
      });
      this.log.info({ callId, workerPid: session.workerPid }, 'media session created');
      return { session, created: true };
    } finally {
      this.creating.delete(callId);
      this.emitIfDrained(); // a creation that failed while draining may have been the last thing in flight
    }
  }

  get(callId: string): MediaSession {
    const session = this.sessions.get(callId);
    if (!session) throw new ControlError('not_found', `no media session for call ${callId}`);
    return session;
  }

  list(): MediaSession[] { return [...this.sessions.values()]; }

  /** Closes every session; settles once their recordings are complete on disk. */
  async closeAll(reason: SessionCloseReason): Promise<void> {
    const all = this.list();
    for (const s of all) s.close(reason);
    await Promise.all(all.map((s) => s.finished));
  }
}
