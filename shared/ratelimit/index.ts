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

/** Counts one hit against `key` in a fixed window and decides. Shared by the gateway's per-key request limit and
 *  the per-organization call-rate guardrail. */
export class FixedWindowLimiter {
  private readonly hit;
  constructor(redis: Redis, private readonly windowMs = 60_000) {
    defineScript(redis, 'olFixedWindow', new URL('./fixed-window.lua', import.meta.url), 1);
    this.hit = script(redis, 'olFixedWindow');
  }

  async take(key: string, limit: number, now = Date.now()): Promise<RateDecision> {
    const [count, ttl] = (await this.hit(key, this.windowMs)) as [number, number];
    const resetSeconds = Math.max(1, Math.ceil(ttl / 1000));
    return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetAt: now + ttl, resetSeconds };
  }
}

/** The rate-limit headers every response carries (IETF RateLimit fields plus the X-RateLimit-* trio). */
export function rateLimitHeaders(d: RateDecision, policy = 'default'): Record<string, string> {
  const h: Record<string, string> = {
    'X-RateLimit-Limit': String(d.limit),
    'X-RateLimit-Remaining': String(d.remaining),
    'X-RateLimit-Reset': String(d.resetAt),
    'RateLimit': `"${policy}";r=${d.remaining};t=${d.resetSeconds}`,
    'RateLimit-Policy': `"${policy}";q=${d.limit};w=60`,
  };
  if (!d.allowed) h['Retry-After'] = String(d.resetSeconds);
  return h;
}
