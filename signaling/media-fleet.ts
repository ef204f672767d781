// Signaling's media: which media process carries which call, in one place. Two modes (MEDIA_FLEET, the same setting
// as the media processes'):
//   - single (MEDIA_FLEET=0, the default): one MediaLink to MEDIA_CONTROL_URL carries every call, as before; when it
//     is lost every call with media is lost.
//   - fleet (MEDIA_FLEET=1): media processes announce themselves and their load in Redis (media/fleet-announcer.ts);
//     this process keeps one MediaLink per announced process (opened as announcements appear, closed when they lapse
//     or the link is lost), places each new call's session on the least-loaded live, non-draining one, and records
//     the choice per call in Redis (`media:call:<call id>`, so the SIP legs of the call, handled by whichever
//     signaling process, find the same media process). A media process that dies (its link's event stream ends
//     without `shutdown`) loses only its own calls: `lost` names them.
// Least-loaded: fewest routers (one per session) as announced, plus the sessions this process placed there since
// that announcement; ties go to the lower worker CPU.
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { MediaControlClient, MediaControlError } from '../shared/media/control-client.ts';
import type { MediaAnnouncement, SessionCloseReason, SessionCreated } from '../shared/media/protocol.ts';
import type { MediaSettings } from '../shared/media/settings.ts';
import type { Keyer, Redis } from '../shared/redis.ts';
import { mediaFleetKey } from '../media/fleet-announcer.ts';
import { MediaLink } from './media.ts';

/** How often the fleet's announcements are read. */
export const FLEET_POLL_MS = 1_000;

interface FleetEvents {
  /** Media sessions are gone (their media process died, stopped or restarted): `carries` says which calls'. */
  lost: [reason: string, carries: (callId: string) => boolean];
  /** One session ended on media's side (not at signaling's request). */
  session_closed: [callId: string, reason: SessionCloseReason];
}

/** One media process this signaling process talks to. */
interface Member {
  /** The media process's instance id (fleet), or `single`. */
  id: string;
  link: MediaLink;
  /** Its latest announcement (fleet mode). */
  announced: MediaAnnouncement | null;
  /** Sessions placed there by this process since `announced` was written. */
  placedSince: number;
  /** It answered `unavailable` (draining) to a create: not chosen again until it announces otherwise. */
  refused: boolean;
}

export type CreateOptions = Parameters<MediaControlClient['createSession']>[1];

export interface FleetMemberInfo { instance: string; controlUrl: string; connected: boolean; sessions: number; transports: number; workerCpu: number; draining: boolean }

export class MediaFleet extends EventEmitter<FleetEvents> {
  private readonly members = new Map<string, Member>();
  /** Which member carries each call this process has touched (fleet mode; the single member carries all). */
  private readonly calls = new Map<string, string>();
  private poller: NodeJS.Timeout | null = null;
  private polling = false;
  private stopped = false;

  private constructor(private readonly settings: MediaSettings, private readonly redis: Redis, private readonly key: Keyer,
    private readonly log: Logger) { super(); }

  static create(settings: MediaSettings, redis: Redis, key: Keyer, log: Logger): MediaFleet {
    const fleet = new MediaFleet(settings, redis, key, log);
    if (!settings.fleet) fleet.join('single', settings.controlUrl, null);
    return fleet;
  }

  get fleetMode(): boolean { return this.settings.fleet; }

  start(): void {
    if (!this.settings.fleet) {
      for (const m of this.members.values()) m.link.start();
      return;
    }
    const poll = () => {
      if (this.polling || this.stopped) return;
      this.polling = true;
      this.refresh().catch((err) => this.log.warn({ err }, 'reading the media fleet failed')).finally(() => { this.polling = false; });
    };
    poll();
    this.poller = setInterval(poll, FLEET_POLL_MS);
  }

  stop(): void {
    this.stopped = true;
    if (this.poller) clearInterval(this.poller);
    for (const m of this.members.values()) m.link.stop();
    this.members.clear();
  }

  /** Some media process's event stream is open (readiness). */
  get connected(): boolean {
    for (const m of this.members.values()) if (m.link.connected) return true;
    return false;
  }

  /** The media processes this process talks to, with their announced load (metrics). */
  list(): FleetMemberInfo[] {
    return [...this.members.values()].map((m) => ({
      instance: m.id, controlUrl: m.announced?.controlUrl ?? this.settings.controlUrl, connected: m.link.connected,
      sessions: m.announced?.sessions ?? 0, transports: m.announced?.transports ?? 0, workerCpu: m.announced?.workerCpu ?? 0,
      draining: m.announced?.draining ?? false,
    }));
  }

  /** The call's media session: where the call has one already (created by this or another signaling process, e.g.
   *  the SIP legs of a browser call), else on the least-loaded live media process that takes it. */
  async createSession(callId: string, opts: CreateOptions = {}): Promise<SessionCreated> {
    if (!this.settings.fleet) return this.single().link.client.createSession(callId, opts);
    const recorded = await this.memberOf(callId);
    if (recorded) return recorded.link.client.createSession(callId, opts);
    let lastError: unknown = null;
    for (const m of this.candidates()) {
      // First writer wins: two signaling processes placing the same call agree on one media process.
      const ok = await this.redis.set(this.callKey(callId), m.id, 'PX', this.settings.sessionMaxMs + 60_000, 'NX');
      if (ok !== 'OK') {
        const other = await this.memberOf(callId);
        if (!other) throw new MediaControlError(0, 'unreachable', `call ${callId} is on a media process this signaling process does not reach`);
        return other.link.client.createSession(callId, opts);
      }
      try {
        const created = await m.link.client.createSession(callId, opts);
        this.calls.set(callId, m.id);
        m.placedSince++;
        return created;
      } catch (err) {
        // Draining (503 unavailable) or gone meanwhile: the next one takes the call.
        if (!(err instanceof MediaControlError) || !(err.code === 'unavailable' || err.code === 'unreachable')) throw err;
        if (err.code === 'unavailable') m.refused = true;
        this.log.warn({ call_id: callId, media: m.id, code: err.code }, 'a media process refused a new session: trying the next one');
        await this.redis.del(this.callKey(callId));
        lastError = err;
      }
    }
    throw lastError ?? new MediaControlError(503, 'unavailable', 'no media process is available to take the call');
  }

  /** The control client of the media process that carries the call. */
  async clientOf(callId: string): Promise<MediaControlClient> {
    if (!this.settings.fleet) return this.single().link.client;
    const m = await this.memberOf(callId);
    if (!m) throw new MediaControlError(0, 'unreachable', `no reachable media process carries call ${callId}`);
    return m.link.client;
  }

  /** Closes the call's session, wherever it is (not_found when there is none). */
  async closeSession(callId: string): Promise<void> {
    if (!this.settings.fleet) { await this.single().link.client.closeSession(callId); return; }
    const m = await this.memberOf(callId);
    this.calls.delete(callId);
    await this.redis.del(this.callKey(callId)).catch(() => undefined);
    if (!m) throw new MediaControlError(404, 'not_found', `no media session for call ${callId}`);
    await m.link.client.closeSession(callId);
  }

  private single(): Member { return this.members.get('single')!; }

  private callKey(callId: string): string { return this.key('media', 'call', callId); }

  /** The member carrying the call: remembered here, else as recorded in Redis; null when none (or not reachable). */
  private async memberOf(callId: string): Promise<Member | null> {
    let id = this.calls.get(callId);
    if (!id) {
      id = (await this.redis.get(this.callKey(callId))) ?? undefined;
      if (id) this.calls.set(callId, id);
    }
    return id ? this.members.get(id) ?? null : null;
  }

  /** Live, connected, non-draining members, least loaded first. */
  private candidates(): Member[] {
    const now = Date.now();
    const load = (m: Member) => (m.announced?.routers ?? 0) + m.placedSince;
    return [...this.members.values()]
      .filter((m) => m.link.connected && m.announced && !m.announced.draining && !m.refused && m.announced.expiresAt > now)
      .sort((a, b) => load(a) - load(b) || (a.announced!.workerCpu - b.announced!.workerCpu));
  }

  /** Reads the announcements: joins new media processes, renews the known ones, lets lapsed ones go. */
  private async refresh(): Promise<void> {
    const raw = await this.redis.hgetall(mediaFleetKey(this.key));
    if (this.stopped) return;
    const now = Date.now();
    const seen = new Set<string>();
    for (const [instance, json] of Object.entries(raw)) {
      let a: MediaAnnouncement;
      try { a = JSON.parse(json) as MediaAnnouncement; } catch { continue; }
      if (a.expiresAt <= now) {
        // Lapsed (its process died without removing it): gone for everyone.
        await this.redis.hdel(mediaFleetKey(this.key), instance).catch(() => undefined);
        continue;
      }
      seen.add(instance);
      const m = this.members.get(instance);
      if (!m) { this.join(instance, a.controlUrl, a).link.start(); continue; }
      if (m.announced?.at !== a.at) {
        m.announced = a;
        m.placedSince = 0;
        m.refused = m.refused && a.draining;
      }
    }
    // Gone from the fleet and not connected: let go. One still connected (alive, but not announcing, e.g. cut off from
    // Redis) keeps its calls; it gets no new ones (its announcement lapsed), and its link's end will say when it is gone.
    for (const m of [...this.members.values()]) if (!seen.has(m.id) && !m.link.connected) this.leave(m, 'media_lost');
  }

  private join(id: string, url: string, announced: MediaAnnouncement | null): Member {
    const link = new MediaLink(url, this.settings.controlSecret, this.log);
    const m: Member = { id, link, announced, placedSince: 0, refused: false };
    this.members.set(id, m);
    link.on('session_closed', (callId, reason) => {
      if (this.calls.get(callId) === id) this.calls.delete(callId);
      this.emit('session_closed', callId, reason);
    });
    link.on('lost', (reason, wasConnected) => {
      if (!this.settings.fleet) { this.emit('lost', reason, () => true); return; }
      // Its stream ended: whatever it carried is gone. A media process that is still alive announces itself again
      // under the same id and is joined anew (its old sessions are not trusted: their calls ended). One this process
      // could never reach keeps its announcement (others may reach it); it is retried at the next read.
      this.leave(m, reason);
      if (reason === 'media_lost' && wasConnected) void this.redis.hdel(mediaFleetKey(this.key), id).catch(() => undefined);
    });
    return m;
  }

  /** Stops talking to a member; its calls are lost. */
  private leave(m: Member, reason: string): void {
    if (this.members.get(m.id) !== m) return;
    this.members.delete(m.id);
    m.link.stop();
    const lost = new Set<string>();
    for (const [callId, id] of this.calls) if (id === m.id) lost.add(callId);
    for (const callId of lost) this.calls.delete(callId);
    if (lost.size) this.log.warn({ media: m.id, reason, calls: lost.size }, 'a media process is gone: its calls lose their media');
    this.emit('lost', reason, (callId) => lost.has(callId));
  }
}
