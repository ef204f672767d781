// Leg accounting: the legs that are live right now, per organization, in Redis (browser sockets, carrier legs, the
// staff phone of a bridge). Signaling keeps it current for browser calls as they connect and end; the signaling
// reconciler rebuilds it from Postgres (the call rows are the truth) every few seconds, which repairs whatever a
// crashed process left behind. Per organization: a hash "<call id>:<role>" -> since (ms); plus a set of the
// organizations that have live legs.
import type { Redis } from 'ioredis';
import type { Keyer } from '../redis.ts';

export class LegAccounts {
  constructor(private readonly redis: Redis, private readonly key: Keyer) {}

  private hash(orgId: string) { return this.key('legs', orgId); }
  private orgs() { return this.key('legs', 'orgs'); }

  async up(orgId: string, callId: string, role: string, since = Date.now()): Promise<void> {
    await this.redis.multi().hset(this.hash(orgId), `${callId}:${role}`, since).sadd(this.orgs(), orgId).exec();
  }

  /** Drops the legs of a call (every role when roles is omitted). */
  async down(orgId: string, callId: string, roles: string[] = ['browser', 'destination', 'connect']): Promise<void> {
    await this.redis.hdel(this.hash(orgId), ...roles.map((r) => `${callId}:${r}`));
  }

  /** Live legs per organization and role. */
  async counts(): Promise<Map<string, Map<string, number>>> {
    const out = new Map<string, Map<string, number>>();
    for (const org of await this.redis.smembers(this.orgs())) {
      const by = new Map<string, number>();
      for (const field of await this.redis.hkeys(this.hash(org))) {
        const role = field.slice(field.lastIndexOf(':') + 1);
        by.set(role, (by.get(role) ?? 0) + 1);
      }
      out.set(org, by);
    }
    return out;
  }

  /** Replaces every organization's legs with `truth` (org -> field -> since), in one transaction. */
  async replace(truth: Map<string, Map<string, number>>): Promise<{ before: number; after: number }> {
    const orgs = new Set([...(await this.redis.smembers(this.orgs())), ...truth.keys()]);
    let before = 0;
    let after = 0;
    const m = this.redis.multi();
    for (const org of orgs) {
      before += await this.redis.hlen(this.hash(org));
      m.del(this.hash(org));
      const legs = truth.get(org);
      if (legs && legs.size) {
        m.hset(this.hash(org), Object.fromEntries(legs));
        after += legs.size;
      } else {
        m.srem(this.orgs(), org);
      }
    }
    if (truth.size) m.sadd(this.orgs(), ...truth.keys());
    await m.exec();
    return { before, after };
  }
}
