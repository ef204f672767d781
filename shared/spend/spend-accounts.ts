// The daily spend cap over calls in progress: per organization and UTC day, one Redis hash holds the settled spend,
// the money reserved by live calls and each live call's reservation. Admission reserves atomically (reserve.lua,
// O(1)): min(the call's worst case, the cap's remaining money), or refuses. At the end of a call its reservation is
// replaced by its cost (settle.lua); a call is never billed more than it reserved (shared/calls/pricing.ts).
// PostgreSQL is the truth (org_daily_spend and the live calls' spend_reserved_cents): a day missing from Redis
// (first call of the day, or Redis lost it) is seeded from it before anything is admitted, and the calls
// reconciler settles reservations of calls that are over and repairs the counter.
import type { Redis } from 'ioredis';
import type { Db } from '../db.ts';
import type { Keyer } from '../redis.ts';
import { defineScript, script } from '../redis-scripts.ts';

/** A day's hash lives this long after its last admission (calls last at most 3 hours). */
const DAY_TTL_SECONDS = 3 * 86400;

export type Admission =
  | { admitted: true; reservedCents: number }
  | { admitted: false; settled: number; reserved: number };

export interface Reservation { cents: number; admittedAt: number }

export class SpendAccounts {
  private readonly reserveScript;
  private readonly settleScript;
  private readonly seedScript;
  private readonly recountScript;

  constructor(private readonly redis: Redis, private readonly key: Keyer, private readonly db: Db) {
    defineScript(redis, 'olSpendReserve', new URL('./reserve.lua', import.meta.url), 2);
    defineScript(redis, 'olSpendSettle', new URL('./settle.lua', import.meta.url), 2);
    defineScript(redis, 'olSpendSeed', new URL('./seed.lua', import.meta.url), 2);
    defineScript(redis, 'olSpendRecount', new URL('./recount.lua', import.meta.url), 2);
    this.reserveScript = script(redis, 'olSpendReserve');
    this.settleScript = script(redis, 'olSpendSettle');
    this.seedScript = script(redis, 'olSpendSeed');
    this.recountScript = script(redis, 'olSpendRecount');
  }

  dayKey(orgId: string, day: string) { return this.key('spend', orgId, day); }
  private get setKey() { return this.key('spend', 'days'); }

  /** Reserves up to `worstCents` for the call if at least `minimumCents` of the cap remains. */
  async reserve(orgId: string, day: string, callId: string, o: { worstCents: number; minimumCents: number; capCents: number; now: number }): Promise<Admission> {
    for (let attempt = 0; ; attempt++) {
      const [status, take, settled, reserved] = (await this.reserveScript(this.dayKey(orgId, day), this.setKey, callId,
        o.worstCents, o.minimumCents, o.capCents, o.now, `${orgId}|${day}`, DAY_TTL_SECONDS)) as number[];
      if (status === 1) return { admitted: true, reservedCents: take };
      if (status === 0) return { admitted: false, settled, reserved };
      if (attempt > 0) throw new Error(`spend day ${orgId}|${day} could not be seeded`);
      await this.seed(orgId, day);
    }
  }

  /** Replaces the call's reservation by its cost (-1: drop it without cost); idempotent. */
  async settle(orgId: string, day: string, callId: string, costCents: number): Promise<number> {
    return (await this.settleScript(this.dayKey(orgId, day), this.setKey, callId, costCents, `${orgId}|${day}`)) as number;
  }

  /** Seeds the day from PostgreSQL unless it is already in Redis; true when it was seeded now. One query: the
   *  settled spend and the live calls admitted that day, in one snapshot. */
  async seed(orgId: string, day: string): Promise<boolean> {
    const rows = await this.db.any<{ settled: string; id: string | null; cents: number | null; at: string | null }>(
      `SELECT COALESCE((SELECT cents FROM org_daily_spend WHERE organization_id = $1 AND day = $2::date), 0) AS settled,
              c.id, c.spend_reserved_cents AS cents, (extract(epoch FROM c.created_at) * 1000)::bigint AS at
         FROM (SELECT 1) one
         LEFT JOIN calls c ON c.organization_id = $1 AND c.ended_at IS NULL AND c.spend_reserved_cents IS NOT NULL
                          AND c.created_at >= ($2::date)::timestamp AT TIME ZONE 'UTC'
                          AND c.created_at < ($2::date + 1)::timestamp AT TIME ZONE 'UTC'`,
      [orgId, day]);
    const holds = rows.filter((r) => r.id !== null).flatMap((r) => [r.id!, `${r.cents}:${r.at}`]);
    return (await this.seedScript(this.dayKey(orgId, day), this.setKey, rows[0].settled, `${orgId}|${day}`, DAY_TTL_SECONDS, ...holds)) === 1;
  }

  /** Whether the call's reservation is in Redis now ('unbuilt': the day is not seeded); one round trip. */
  async holding(orgId: string, day: string, callId: string): Promise<'held' | 'absent' | 'unbuilt'> {
    const [settled, held] = await this.redis.hmget(this.dayKey(orgId, day), 'settled', callId);
    if (settled === null) return 'unbuilt';
    return held === null ? 'absent' : 'held';
  }

  async exists(orgId: string, day: string): Promise<boolean> {
    return (await this.redis.hexists(this.dayKey(orgId, day), 'settled')) === 1;
  }

  /** The day as Redis holds it (null when missing). */
  async read(orgId: string, day: string): Promise<{ settled: number; reserved: number; calls: Map<string, Reservation> } | null> {
    const raw = await this.redis.hgetall(this.dayKey(orgId, day));
    if (raw.settled === undefined) return null;
    const calls = new Map<string, Reservation>();
    for (const [f, v] of Object.entries(raw)) {
      if (f === 'settled' || f === 'reserved') continue;
      const [cents, at] = v.split(':');
      calls.set(f, { cents: Number(cents), admittedAt: Number(at) });
    }
    return { settled: Number(raw.settled), reserved: Number(raw.reserved ?? 0), calls };
  }

  /** "<organization id>|<day>" of every day with reservations. */
  async daysHolding(): Promise<{ orgId: string; day: string }[]> {
    return (await this.redis.smembers(this.setKey)).map((m) => {
      const [orgId, day] = m.split('|');
      return { orgId, day };
    });
  }

  /** Sets the day's reserved counter to the sum of its reservations. */
  async recount(orgId: string, day: string): Promise<{ before: number; after: number }> {
    const [before, after] = (await this.recountScript(this.dayKey(orgId, day), this.setKey, `${orgId}|${day}`)) as number[];
    return { before, after };
  }
}
