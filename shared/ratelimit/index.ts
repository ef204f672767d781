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

interface Lease {
  limit: number;
  resetAt: number;
  /** This process owns the window's tokens numbered next..last. */
  next: number;
  last: number;
  deniedUntil: number;
  refilling: Promise<unknown> | null;
}

/** Fixed windows counted in Redis: atomic, so every replica shares one count per key. Shared by the gateway's
 *  per-key request limit and the per-organization call-rate guardrail.
 *
 *  With a lease share, a process takes a block of a key's tokens in one round trip (at most leaseShare x limit,
 *  never more than MAX_LEASE) and hands them out locally; requests arriving meanwhile wait for that one refill.
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
    if (l && !l.refilling && l.limit === limit) {
      const now = Date.now();
      if (now < l.resetAt) {
        if (l.next <= l.last) return decision(true, limit, l.next++, l.resetAt, now);
        if (now < l.deniedUntil) return decision(false, limit, limit, l.resetAt, now);
      }
    }
    return this.takeSlow(key, limit);
  }

  private async takeSlow(key: string, limit: number): Promise<RateDecision> {
    for (;;) {
      const now = Date.now();
      const l = this.leases.get(key);
      if (l?.refilling) {
        await l.refilling.catch(() => undefined);
        continue;
      }
      if (l && l.limit === limit && now < l.resetAt) {
        if (l.next <= l.last) return decision(true, limit, l.next++, l.resetAt, now);
        if (now < l.deniedUntil) return decision(false, limit, limit, l.resetAt, now);
      }
      return this.refill(key, limit, l);
    }
  }

  /** Asks Redis for a block of tokens; the caller gets the first one (or the refusal). */
  private async refill(key: string, limit: number, old: Lease | undefined): Promise<RateDecision> {
    const want = Math.max(1, Math.min(MAX_LEASE, Math.floor(limit * this.leaseShare)));
    const l: Lease = old ?? { limit, resetAt: 0, next: 1, last: 0, deniedUntil: 0, refilling: null };
    if (!old) this.sweep();
    this.leases.set(key, l);
    const asked = this.lease(key, this.windowMs, limit, want);
    l.refilling = asked;
    try {
      const [count, ttl, granted] = (await asked) as [number, number, number];
      const now = Date.now();
      Object.assign(l, { limit, resetAt: now + ttl, next: count - granted + 1, last: count, deniedUntil: 0 });
      if (granted === 0) {
        l.deniedUntil = Math.min(l.resetAt, now + DENIAL_MEMORY_MS);
        return decision(false, limit, limit, l.resetAt, now);
      }
      return decision(true, limit, l.next++, l.resetAt, now);
    } finally {
      l.refilling = null;
    }
  }

  private sweep(): void {
    if (this.leases.size < SWEEP_AT) return;
    const now = Date.now();
    for (const [k, l] of this.leases) if (l.resetAt <= now && !l.refilling) this.leases.delete(k);
  }
}

/** The decision for the request that took token number `n` of the window (n > limit: refused). */
function decision(allowed: boolean, limit: number, n: number, resetAt: number, now: number): RateDecision {
  return {
    allowed, limit, remaining: Math.max(0, limit - n), resetAt,
    resetSeconds: Math.max(1, Math.ceil((resetAt - now) / 1000)),
  };
}

/** The rate-limit headers every response carries (IETF RateLimit fields plus the X-RateLimit-* trio), set on
 *  `into`. The texts that stay the same from one request to the next (limit, policy, reset time) are remembered
 *  from the previous call rather than formatted again. */
export function setRateLimitHeaders(into: Record<string, string>, d: RateDecision, policy = 'default'): void {
  if (d.limit !== memo.limit || policy !== memo.policy) {
    memo.limit = d.limit;
    memo.policy = policy;
    memo.limitText = String(d.limit);
    memo.policyText = `"${policy}";q=${d.limit};w=60`;
  }
  if (d.resetAt !== memo.resetAt) {
    memo.resetAt = d.resetAt;
    memo.resetText = String(d.resetAt);
  }
  const remaining = String(d.remaining);
  into['X-RateLimit-Limit'] = memo.limitText;
  into['X-RateLimit-Remaining'] = remaining;
  into['X-RateLimit-Reset'] = memo.resetText;
  into['RateLimit'] = `"${policy}";r=${remaining};t=${d.resetSeconds}`;
  into['RateLimit-Policy'] = memo.policyText;
  if (!d.allowed) into['Retry-After'] = String(d.resetSeconds);
}
const memo = { limit: -1, policy: '', limitText: '', policyText: '', resetAt: -1, resetText: '' };
