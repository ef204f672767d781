// Channel accounting: how many channels each organization holds right now (bridge calls 2, AI calls 1), in Redis.
// Per organization there is a counter and a hash of holds (call id -> channels and admission time); admission of
// a whole call is one Lua script that checks the limit and records the hold, so two gateways admitting at once
// can never exceed the limit. Release is idempotent per call. The holds are the truth: the reconciler (workers)
// frees holds of calls that are over in Postgres and repairs the counter from the holds.
import type { Redis } from 'ioredis';
import type { Keyer } from '../redis.ts';
import { defineScript, script } from '../redis-scripts.ts';

export interface Hold { channels: number; admittedAt: number }

export class ChannelAccounts {
  private readonly admitScript;
  private readonly releaseScript;
  private readonly recountScript;

  constructor(private readonly redis: Redis, private readonly key: Keyer) {
    defineScript(redis, 'olChanAdmit', new URL('./admit.lua', import.meta.url), 3);
    defineScript(redis, 'olChanRelease', new URL('./release.lua', import.meta.url), 3);
    defineScript(redis, 'olChanRecount', new URL('./recount.lua', import.meta.url), 3);
    this.admitScript = script(redis, 'olChanAdmit');
    this.releaseScript = script(redis, 'olChanRelease');
    this.recountScript = script(redis, 'olChanRecount');
  }

  private keys(orgId: string): [string, string, string] {
    return [this.key('chan', orgId, 'used'), this.key('chan', orgId, 'holds'), this.key('chan', 'orgs')];
  }

  /** Admits `channels` for the call if the organization stays within `limit`. */
  async admit(orgId: string, callId: string, channels: number, limit: number, now = Date.now()): Promise<{ admitted: boolean; used: number }> {
    const [ok, used] = (await this.admitScript(...this.keys(orgId), callId, channels, limit, now, orgId)) as [number, number];
    return { admitted: ok === 1, used };
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
