import type { Redis } from 'ioredis';
import { defineScript, script } from '../redis-scripts.ts';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix ms at which the window resets. */
  resetAt: number;
  /** Seconds until reset, rounded up (Retry-After and the RateLimit header's t). */
  resetSeconds: number;
}

export interface LimiterOptions {
  windowMs?: number;
  /** Share of a key's limit that one process may take from Redis at once and hand out locally; 0 (the default)
   *  asks Redis for every request. */
  leaseShare?: number;
}

/** The most tokens one lease takes, whatever the limit. */
const MAX_LEASE = 1000;
/** How long a refusal is answered locally before Redis is asked again (the window may have been reset). */
const DENIAL_MEMORY_MS = 1000;
const SWEEP_AT = 10_000;

interface Refill {
  /** Tokens this refill will bring that no waiting request has claimed yet. */
  unclaimed: number;
  /** Settles (never rejects) when Redis has answered. */
  settled: Promise<void>;
}

interface Lease {
  limit: number;
  resetAt: number;
  /** Tokens this process holds for the current window. */
  tokens: number;
  /** The highest count Redis has reported for the window (tokens granted to every replica). */
  seen: number;
  deniedUntil: number;
  /** The latest refill in flight, while it still has tokens to promise. */
  pending: Refill | null;
}

/** Fixed windows counted in Redis: atomic, so every replica shares one count per key. Shared by the gateway's
 *  per-key request limit and the per-organization call-rate guardrail.
 *
 *  With a lease share, a process takes a block of a key's tokens in one round trip (at most leaseShare x limit,
 *  never more than MAX_LEASE) and hands them out locally. A request that finds no token waits for a refill already
 *  on its way if that refill has a token left to promise, and otherwise sends its own, so refills run in parallel
 *  and each serves up to a block of requests (with blocks of one, every request asks Redis itself, concurrently).
 *  Redis never grants a token twice, so the limit is never exceeded; what a replica leased and did not use is lost
 *  to the others until the window resets (at most leaseShare x limit per replica). With one replica the counts and
 *  headers are exact. */
export class FixedWindowLimiter {
  private readonly lease;
  private readonly leases = new Map<string, Lease>();
  private readonly windowMs: number;
  private readonly leaseShare: number;

  constructor(redis: Redis, opts: LimiterOptions = {}) {
    defineScript(redis, 'olWindowLease', new URL('./window-lease.lua', import.meta.url), 1);
    this.lease = script(redis, 'olWindowLease');
    this.windowMs = opts.windowMs ?? 60_000;
    this.leaseShare = opts.leaseShare ?? 0;
  }

  /** Counts one request against `key` and decides: at once from a held block, else after asking Redis. */
  take(key: string, limit: number): RateDecision | Promise<RateDecision> {
    const l = this.leases.get(key);
    return (l !== undefined && l.limit === limit && fromHeld(l)) || this.takeSlow(key, limit);
  }

  private async takeSlow(key: string, limit: number): Promise<RateDecision> {
    for (;;) {
      const l = this.leases.get(key);
      if (l !== undefined && l.limit === limit) {
        const held = fromHeld(l);
        if (held) return held;
        const r = l.pending;
        if (r !== null && r.unclaimed > 0) {
          r.unclaimed--;
          await r.settled;
          continue;
        }
      }
      return this.refill(key, limit, l);
    }
  }

  /** Asks Redis for a block of tokens; the caller gets the first one (or the refusal). */
  private async refill(key: string, limit: number, current: Lease | undefined): Promise<RateDecision> {
    const want = Math.max(1, Math.min(MAX_LEASE, Math.floor(limit * this.leaseShare)));
    let l = current;
    if (l === undefined || l.limit !== limit) {
      if (l === undefined) this.sweep();
      l = { limit, resetAt: 0, tokens: 0, seen: 0, deniedUntil: 0, pending: null };
      this.leases.set(key, l);
    }
    const asked = this.lease(key, this.windowMs, limit, want) as Promise<[number, number, number]>;
    const r: Refill = { unclaimed: want - 1, settled: asked.then(() => undefined, () => undefined) };
    l.pending = r;
    let answer: [number, number, number];
    try {
      answer = await asked;
    } finally {
      if (l.pending === r) l.pending = null;
    }
    const [count, ttl, granted] = answer;
    const now = Date.now();
    // A window that started anew (this grant is its first, or the one held has run out) makes held tokens void.
    if (count === granted || now >= l.resetAt) {
      l.tokens = 0;
      l.seen = 0;
    }
    l.resetAt = now + ttl;
    l.seen = Math.max(l.seen, count);
    l.tokens += granted;
    if (granted === 0) {
      l.deniedUntil = Math.min(l.resetAt, now + DENIAL_MEMORY_MS);
      return decision(false, limit, 0, l.resetAt, now);
    }
    l.deniedUntil = 0;
    return spend(l, now);
  }

  private sweep(): void {
    if (this.leases.size < SWEEP_AT) return;
    const now = Date.now();
    for (const [k, l] of this.leases) if (l.resetAt <= now && l.pending === null) this.leases.delete(k);
  }
}

/** The decision this process can make alone for a current window: a held token, or a refusal it still remembers;
 *  null when Redis must be asked. */
function fromHeld(l: Lease): RateDecision | null {
  const now = Date.now();
  if (now >= l.resetAt) return null;
  if (l.tokens > 0) return spend(l, now);
  if (now < l.deniedUntil) return decision(false, l.limit, 0, l.resetAt, now);
  return null;
}

/** Uses one held token. Remaining = the limit less what every replica was granted, plus what this one still holds. */
function spend(l: Lease, now: number): RateDecision {
  l.tokens--;
  return decision(true, l.limit, l.limit - l.seen + l.tokens, l.resetAt, now);
}

function decision(allowed: boolean, limit: number, remaining: number, resetAt: number, now: number): RateDecision {
  return {
    allowed, limit, remaining: Math.max(0, remaining), resetAt,
    resetSeconds: Math.max(1, Math.ceil((resetAt - now) / 1000)),
  };
}
