// Signaling's link to one media process (signaling/media-fleet.ts holds one per media process): the typed control
// client, and the event stream it keeps open to learn that a session closed on media's side or that the media
// process is gone. When the stream ends (media stopped, crashed, or went silent for three heartbeats) every session
// of that media process is gone: `lost` fires and the stream is reopened until media answers again (a new instance
// id says the same).
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { MediaControlClient, type MediaEventStream } from '../shared/media/control-client.ts';
import type { SessionCloseReason } from '../shared/media/protocol.ts';

interface LinkEvents {
  /** Every session of the media process is gone (its stream ended, or a new instance answered). `wasConnected`:
   *  the stream had been open (false when it could not be opened at all). */
  lost: [reason: string, wasConnected: boolean];
  /** One session ended on media's side (not at signaling's request). */
  session_closed: [callId: string, reason: SessionCloseReason];
}

export class MediaLink extends EventEmitter<LinkEvents> {
  readonly client: MediaControlClient;
  private stream: MediaEventStream | null = null;
  private instanceId: string | null = null;
  private retry: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(url: string, secret: string, private readonly log: Logger) {
    super();
    this.client = new MediaControlClient({ url, secret, timeoutMs: 10_000 });
  }

  start(): void {
    if (this.stopped) return;
    const stream = (this.stream = this.client.watch());
    stream.on('event', (e) => {
      if (e.type === 'hello') {
        if (this.instanceId && this.instanceId !== e.instanceId) this.emit('lost', 'media_restarted', true);
        this.instanceId = e.instanceId;
      } else if (e.type === 'session_closed' && e.reason !== 'requested') {
        this.emit('session_closed', e.callId, e.reason);
      }
    });
    stream.on('end', ({ reason, error }) => {
      if (this.stopped) return;
      // A media process that says it is stopping (shutdown) is an orderly stop, e.g. `npm start` stopping every process:
      // info. A stream that broke (lost) is a failure: warn. Either way each call that had media warns on its own.
      if (this.instanceId) {
        if (reason === 'shutdown') this.log.info({ reason }, 'media process stopped: its sessions are gone');
        else this.log.warn({ reason, err: error?.message }, 'media event stream ended: its sessions are gone');
      }
      const wasConnected = this.instanceId !== null;
      this.instanceId = null;
      this.emit('lost', reason === 'shutdown' ? 'media_shutdown' : 'media_lost', wasConnected);
      this.retry = setTimeout(() => this.start(), 1000);
    });
  }

  /** The event stream to the media process is open (its hello arrived): sessions can be made. */
  get connected(): boolean { return this.instanceId !== null; }

  stop(): void {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.stream?.close();
    this.client.close();
  }
}
