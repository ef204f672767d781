import type { Redis } from 'ioredis';
import { broadcastAndAwait, onBroadcast } from '../broadcast.ts';
import type { Db } from '../db.ts';
import { PgListener } from '../db-listen.ts';
import type { Keyer } from '../redis.ts';
import { reportRedisErrors } from '../unavailable.ts';
import type { Logger } from '../log.ts';
import type { Principal } from './principal.ts';
import { accountSnapshotView } from './views.ts';

// GET /v1/account is the hottest authenticated read. Its organization/user part and its footprint are kept in
// memory per process and dropped when they change: triggers NOTIFY ol_account with the organization id on every
// change that can alter a snapshot (migration 005), and a process that watches (the gateway) drops that
// organization's entries when the notice arrives, so a change committed anywhere shows within the notice's
// latency. A gateway's own writes show on its very next request (forgetAccount), and an API request that changes
// the footprint (RouteDef.changesAccount) answers only once every gateway dropped it (announceAccountChange): read
// your writes on any replica. While the LISTEN connection is down nothing is served from memory: the footprint is counted from live rows, and the identity is kept for a
// few seconds only.
//
// Reads that do reach PostgreSQL are batched: every footprint request of one event-loop turn waits for one
// grouped query sent after all of them arrived.
const ACCOUNT_CHANNEL = 'ol_account';
const UNWATCHED_IDENTITY_TTL_MS = 5_000;
const WATCHED_IDENTITY_TTL_MS = 10 * 60_000;
const MAX_ENTRIES = 100_000;

export interface Identity {
  plan: string;
  user: { id: string; email: string; name: string | null } | null;
  organization: { id: string; name: string; slug: string };
}
export interface Footprint { phone_numbers: number; enrolled_reputation_numbers: number; own_brand_enterprise: boolean }

interface IdentityEntry { value: Promise<Identity>; resolved: Identity | null; expires: number }

interface Waiter { resolve(f: Footprint): void; reject(e: unknown): void }

/** What one gateway keeps of organizations' accounts (identities and footprints), for GET /v1/account and the auth
 *  path; one per process, in the gateway's deps (gateway/app.ts). */
export class AccountReader {
  /** By organization, then user ('' for none). */
  private readonly identities = new Map<string, Map<string, IdentityEntry>>();
  private identityCount = 0;
  private readonly footprints = new Map<string, Footprint>();
  private pending = new Map<string, Waiter[]>();
  private scheduled = false;
  /** True while a LISTEN on ol_account is in effect: only then is a footprint served from memory. */
  watched = false;
  /** Bumped by every change notice: a count that was in flight across one may have read the old rows, so its
   *  answer is used once but not kept. */
  private epoch = 0;

  constructor(private readonly db: Db) {}

  identity(organizationId: string, userId: string | null, now = Date.now()): Identity | Promise<Identity> {
    let byUser = this.identities.get(organizationId);
    const hit = byUser?.get(userId ?? '');
    if (hit && hit.expires > now) return hit.resolved ?? hit.value;
    const value = this.db.one(
      `SELECT o.id AS org_id, o.name AS org_name, o.slug, o.plan, u.id AS user_id, u.email, u.name AS user_name
         FROM organizations o LEFT JOIN users u ON u.id = $2 AND u.organization_id = o.id
        WHERE o.id = $1`,
      [organizationId, userId],
    ).then((row): Identity => ({
      plan: row.plan,
      user: row.user_id ? { id: row.user_id, email: row.email, name: row.user_name ?? null } : null,
      organization: { id: row.org_id, name: row.org_name, slug: row.slug },
    }));
    if (this.identityCount >= MAX_ENTRIES) {
      this.identities.clear();
      this.identityCount = 0;
    }
    if (!byUser || this.identities.get(organizationId) !== byUser) this.identities.set(organizationId, (byUser = new Map()));
    // Stored before it resolves, so a change notice that arrives meanwhile drops it (forget) and it is not kept.
    const ttl = this.watched ? WATCHED_IDENTITY_TTL_MS : UNWATCHED_IDENTITY_TTL_MS;
    const entry: IdentityEntry = { value, resolved: null, expires: now + ttl };
    if (!byUser.has(userId ?? '')) this.identityCount++;
    byUser.set(userId ?? '', entry);
    const users = byUser;
    value.then((id) => { entry.resolved = id; },
      () => { if (users.get(userId ?? '') === entry) users.delete(userId ?? ''); });
    return value;
  }

  footprint(organizationId: string): Footprint | Promise<Footprint> {
    if (this.watched) {
      const hit = this.footprints.get(organizationId);
      if (hit) return hit;
    }
    return new Promise((resolve, reject) => {
      let waiters = this.pending.get(organizationId);
      if (!waiters) this.pending.set(organizationId, (waiters = []));
      waiters.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  /** Drops what is kept of one organization. */
  forget(organizationId: string): void {
    this.epoch++;
    this.footprints.delete(organizationId);
    this.identityCount -= this.identities.get(organizationId)?.size ?? 0;
    this.identities.delete(organizationId);
  }

  /** Drops everything kept (notices may have been missed). */
  reset(): void {
    this.epoch++;
    this.footprints.clear();
    this.identities.clear();
    this.identityCount = 0;
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    this.scheduled = false;
    const epoch = this.epoch;
    try {
      const rows = await this.db.any({
        name: 'account-footprint',
        text: `SELECT o.id AS organization_id, o.own_brand_enterprise, count(p.id)::int AS phones,
                      count(p.reputation_enrolled_at)::int AS enrolled
                 FROM organizations o
                 LEFT JOIN phone_numbers p ON p.organization_id = o.id AND p.status <> 'RELEASED'
                WHERE o.id = ANY($1::uuid[])
                GROUP BY o.id`,
        values: [[...batch.keys()]],
      });
      const byOrg = new Map(rows.map((r) => [r.organization_id as string, r]));
      const keep = this.watched && epoch === this.epoch;
      if (keep && this.footprints.size + batch.size > MAX_ENTRIES) this.footprints.clear();
      for (const [org, waiters] of batch) {
        const r = byOrg.get(org);
        const f = { phone_numbers: r?.phones ?? 0, enrolled_reputation_numbers: r?.enrolled ?? 0, own_brand_enterprise: r?.own_brand_enterprise === true };
        if (keep) this.footprints.set(org, f);
        for (const w of waiters) w.resolve(f);
      }
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
    }
  }
}


/** Redis channel of announceAccountChange (shared/broadcast.ts). */
const ACCOUNT_CHANGED_CHANNEL = 'events:account-changed';

/** Keeps this process's account snapshots in step with the database: LISTENs on ol_account and drops what a
 *  notice names, and applies announceAccountChange's announcements. Until this runs (and while its connection is
 *  down) footprints are counted for every request. */
/** noticeDelayMs: a test hook (ACCOUNT_NOTICE_FAULT_DELAY_MS): change notices arrive this much later (what a busy database
 *  or network does), to show that an API change is seen on every replica without them. */
export async function watchAccountChanges(reader: AccountReader, db: Db, redis: Redis, key: Keyer, log: Logger, noticeDelayMs = 0): Promise<{ stop(): Promise<void> }> {
  const subscriber = redis.duplicate({ enableAutoPipelining: false });
  reportRedisErrors(subscriber, log, 'account-changes');
  await onBroadcast(subscriber, redis, key, ACCOUNT_CHANGED_CHANNEL, (organizationId) => reader.forget(organizationId));
  const listener = new PgListener(db, ACCOUNT_CHANNEL, {
    onNotify: (organizationId) => {
      if (noticeDelayMs > 0) setTimeout(() => reader.forget(organizationId), noticeDelayMs);
      else reader.forget(organizationId);
    },
    onUp: () => { reader.reset(); reader.watched = true; },
    onDown: (err) => {
      reader.watched = false;
      reader.reset();
      log.warn({ err: err.message }, 'account change notices lost; counting footprints live until they are back');
    },
  });
  await listener.start();
  return {
    stop: async () => {
      reader.watched = false;
      await listener.stop();
      await subscriber.quit().catch(() => undefined);
    },
  };
}

/** After an API request changed an organization's footprint (a number ordered or released): returns once every
 *  gateway has dropped what it kept of it, so the next GET /v1/account on any replica shows the change. Changes
 *  made elsewhere (workers, the admin CLI) show within the database notice's latency. */
export async function announceAccountChange(reader: AccountReader, redis: Redis, key: Keyer, organizationId: string): Promise<void> {
  reader.forget(organizationId);
  await broadcastAndAwait(redis, key, ACCOUNT_CHANGED_CHANNEL, organizationId);
}

/** GET /v1/account's answer: the document {"data": snapshot} (exactly the reference's fields; the footprint
 *  reflects live rows) as UTF-8 JSON. It is asked for on every request and changes rarely, so the encoded document
 *  is kept per credential and rebuilt only when the organization/user part or the footprint was replaced. */
export function accountSnapshotDocument(reader: AccountReader, p: Principal): Buffer | Promise<Buffer> {
  const footprint = reader.footprint(p.organizationId);
  const identity = reader.identity(p.organizationId, p.userId);
  // Both are usually in memory: then the answer is ready without a promise.
  if (identity instanceof Promise || footprint instanceof Promise) {
    return Promise.all([identity, footprint]).then(([i, f]) => snapshotDocument(p, i, f));
  }
  return snapshotDocument(p, identity, footprint);
}

function snapshotDocument(p: Principal, identity: Identity, footprint: Footprint): Buffer {
  const kept = documents.get(p);
  if (kept && kept.identity === identity && kept.footprint === footprint) return kept.document;
  const document = Buffer.from(JSON.stringify({ data: accountSnapshotView(p, identity, footprint) }));
  documents.set(p, { identity, footprint, document });
  return document;
}
// Keyed by the cached principal object, so an entry goes with its credential.
const documents = new WeakMap<Principal, { identity: Identity; footprint: Footprint; document: Buffer }>();
