// Channel accounting: how many channels each organization holds right now (bridge calls 2, AI calls 1), in Redis.
// Per organization there is a counter and a hash of holds (call id -> channels and admission time); admission of
// a whole call is one Lua script that checks the limit and records the hold, so two gateways admitting at once
// can never exceed the limit. Release is idempotent per call. The holds are the truth: the reconciler (workers)
// frees holds of calls that are over in Postgres and repairs the counter from the holds.
// Redis may lose everything (a restart without persistence, a failover to an empty replica): the accounts' epoch key
// is written when they are built from PostgreSQL's live calls, and admission refuses to count on accounts without
// it, so an empty Redis never admits past the limit; the first admission after a loss rebuilds them (rebuild()).
import type { Redis } from 'ioredis';
import type { Db } from '../db.ts';
import { randomToken } from '../ids.ts';
import type { Keyer } from '../redis.ts';
import { defineScript, script } from '../redis-scripts.ts';

export interface Hold { channels: number; admittedAt: number }

/** How long one rebuild may hold its lock, and how long another process waits for it before giving up. */
const REBUILD_LOCK_MS = 30_000;
const REBUILD_WAIT_MS = 30_000;

/** Whether the call's channels are counted in Redis right now ('unbuilt': the accounts are not built). */
export type Holding = 'held' | 'absent' | 'unbuilt';

export class ChannelAccounts {
  private readonly admitScript;
  private readonly releaseScript;
  private readonly recountScript;
  private readonly rebuildScript;

  constructor(private readonly redis: Redis, private readonly key: Keyer, private readonly db: Db) {
    defineScript(redis, 'olChanAdmit', new URL('./admit.lua', import.meta.url), 4);
    defineScript(redis, 'olChanRelease', new URL('./release.lua', import.meta.url), 3);
    defineScript(redis, 'olChanRecount', new URL('./recount.lua', import.meta.url), 3);
    defineScript(redis, 'olChanRebuild', new URL('./rebuild.lua', import.meta.url), 4);
    this.admitScript = script(redis, 'olChanAdmit');
    this.releaseScript = script(redis, 'olChanRelease');
    this.recountScript = script(redis, 'olChanRecount');
    this.rebuildScript = script(redis, 'olChanRebuild');
  }

  private keys(orgId: string): [string, string, string] {
    return [this.key('chan', orgId, 'used'), this.key('chan', orgId, 'holds'), this.key('chan', 'orgs')];
  }

  private get epochKey() { return this.key('chan', 'epoch'); }

  /** Admits `channels` for the call if the organization stays within `limit`; builds the accounts from PostgreSQL
   *  first when Redis has lost them. */
  async admit(orgId: string, callId: string, channels: number, limit: number, now = Date.now()): Promise<{ admitted: boolean; used: number }> {
    for (let attempt = 0; ; attempt++) {
      const [ok, used] = (await this.admitScript(...this.keys(orgId), this.epochKey, callId, channels, limit, now, orgId)) as [number, number];
      if (ok !== -1) return { admitted: ok === 1, used };
      if (attempt > 1) throw new Error('channel accounts could not be rebuilt');
      await this.rebuild();
    }
  }

  /** Whether the call holds its channels in Redis now (one round trip, no PostgreSQL). */
  async holding(orgId: string, callId: string): Promise<Holding> {
    const r = await this.redis.multi().exists(this.epochKey).hexists(this.keys(orgId)[1], callId).exec();
    if (!r || r.some(([err]) => err)) throw r?.find(([err]) => err)?.[0] ?? new Error('channel holding check aborted');
    if (r[0][1] === 0) return 'unbuilt';
    return r[1][1] === 1 ? 'held' : 'absent';
  }

  /** Whether the accounts are built (false after Redis lost its state, until the next rebuild). */
  async built(): Promise<boolean> {
    return (await this.redis.exists(this.epochKey)) === 1;
  }

  /** Builds the accounts from PostgreSQL's live calls unless they are built. One process builds (a Redis lock);
   *  the others wait for its epoch. Calls being placed right now that PostgreSQL does not show yet are not counted:
   *  their dial re-admits them before anything is dialed (shared/calls/admission.ts). */
  async rebuild(): Promise<void> {
    const token = randomToken(12);
    const lock = this.key('chan', 'rebuild-lock');
    const giveUp = Date.now() + REBUILD_WAIT_MS;
    while (!(await this.built())) {
      if ((await this.redis.set(lock, token, 'PX', REBUILD_LOCK_MS, 'NX')) === 'OK') {
        try {
          await this.build();
        } finally {
          if ((await this.redis.get(lock)) === token) await this.redis.del(lock);
        }
        return;
      }
      if (Date.now() > giveUp) throw new Error('channel accounts are being rebuilt by another process; gave up waiting');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private async build(): Promise<void> {
    const live = await this.db.any<{ organization_id: string; id: string; channels: number; at: string }>(
      `SELECT organization_id, id, channels, (extract(epoch FROM created_at) * 1000)::bigint AS at FROM calls WHERE ended_at IS NULL`);
    const byOrg = new Map<string, string[]>();
    // Organizations Redis still lists (only when the epoch alone was lost) are emptied unless they have live calls.
    for (const org of await this.organizationsHolding()) byOrg.set(org, []);
    for (const c of live) {
      let pairs = byOrg.get(c.organization_id);
      if (!pairs) byOrg.set(c.organization_id, (pairs = []));
      pairs.push(c.id, `${c.channels}:${c.at}`);
    }
    for (const [org, pairs] of byOrg) await this.rebuildScript(...this.keys(org), this.epochKey, org, ...pairs);
    await this.redis.set(this.epochKey, String(Date.now()));
  }

  /** Frees the call's channels; returns how many it held (0 when it held none: already released). */
  async release(orgId: string, callId: string): Promise<number> {
    return (await this.releaseScript(...this.keys(orgId), callId, orgId)) as number;
  }

  async used(orgId: string): Promise<number> {
    return Number((await this.redis.get(this.keys(orgId)[0])) ?? 0);
  }

  async holds(orgId: string): Promise<Map<string, Hold>> {
    const raw = await this.redis.hgetall(this.keys(orgId)[1]);
    const out = new Map<string, Hold>();
    for (const [callId, v] of Object.entries(raw)) {
      const [n, at] = v.split(':');
      out.set(callId, { channels: Number(n), admittedAt: Number(at) });
    }
    return out;
  }

  async organizationsHolding(): Promise<string[]> {
    return this.redis.smembers(this.keys('')[2]);
  }

  /** Channels held now, every organization together (the counters of the organizations holding any). */
  async totalUsed(): Promise<number> {
    const orgs = await this.organizationsHolding();
    if (!orgs.length) return 0;
    const used = await this.redis.mget(orgs.map((org) => this.keys(org)[0]));
    return used.reduce((sum, v) => sum + Number(v ?? 0), 0);
  }

  /** Sets the counter to the sum of the holds; returns the counter before and after. */
  async recount(orgId: string): Promise<{ before: number; after: number }> {
    const [before, after] = (await this.recountScript(...this.keys(orgId), orgId)) as [number, number];
    return { before, after };
  }
}
