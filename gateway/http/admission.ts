// Admission: the per-minute request limits decided before a request runs. A request with a valid credential counts
// against its key; one without (no credential, a bad one, or an unknown path without a key) counts against its
// client address, so a flood of bad keys cannot hammer the key lookup.
import type { Principal } from '../../shared/accounts/principal.ts';
import { ApiError } from '../../shared/http/error-status.ts';
import type { Keyer, Redis } from '../../shared/redis.ts';
import { setRateLimitHeaders } from '../../shared/http/rate-limit-headers.ts';
import { FixedWindowLimiter, type RateDecision } from '../../shared/ratelimit/fixed-window-limiter.ts';
import type { Authenticator } from './auth.ts';

const ANONYMOUS_LIMIT = 600;
// A busy key costs one Redis round trip per 1% of its limit instead of one per request; a replica can strand at
// most that 1% of a window unused (see FixedWindowLimiter).
const RATE_LEASE_SHARE = 0.01;

export class Admission {
  private readonly limiter: FixedWindowLimiter;
  /** Per-key request counters live under this prefix and the key id. */
  private readonly keyPrefix: string;
  /** The counter key of each cached credential, built once (a new string per request would be hashed anew). */
  private readonly keys = new WeakMap<Principal, string>();

  constructor(redis: Redis, private readonly key: Keyer) {
    this.limiter = new FixedWindowLimiter(redis, { leaseShare: RATE_LEASE_SHARE });
    this.keyPrefix = key('rl', 'key', '');
  }

  /** Counts one request of the credential; synchronous while its lease covers it (the hot path awaits nothing). */
  credential(p: Principal, headers: Record<string, string>): void | Promise<void> {
    const taken = this.limiter.take(this.counterKey(p), p.rateLimit);
    if (taken instanceof Promise) return taken.then((d) => admit(d, headers));
    admit(taken, headers);
  }

  /** Counts a request for an unknown path or method: against its key when it carries a valid one. */
  async unrouted(auth: Authenticator, authorization: string | undefined, remote: () => string, headers: Record<string, string>): Promise<Principal | null> {
    const principal = authorization ? await auth.authenticate(authorization).catch(() => null) : null;
    if (!principal) {
      await this.anonymous(remote(), headers);
      return null;
    }
    await this.credential(principal, headers);
    return principal;
  }

  async anonymous(remote: string, headers: Record<string, string>): Promise<void> {
    admit(await this.limiter.take(this.key('rl', 'ip', remote), ANONYMOUS_LIMIT), headers, 'anonymous');
  }

  private counterKey(p: Principal): string {
    let k = this.keys.get(p);
    if (k === undefined) this.keys.set(p, (k = this.keyPrefix + p.keyId));
    return k;
  }
}

/** Puts a rate-limit decision's headers on the response and refuses the request (429) when it is over. */
function admit(d: RateDecision, headers: Record<string, string>, policy: 'default' | 'anonymous' = 'default'): void {
  setRateLimitHeaders(headers, d, policy);
  if (d.allowed) return;
  if (policy === 'anonymous') throw new ApiError('rate_limited', 'Too many unauthenticated requests from this address.');
  throw new ApiError('rate_limited', `Rate limit of ${d.limit} requests per minute exceeded; retry after ${d.resetSeconds} s.`,
    { resolutionHint: 'Slow down, or ask for a higher per-key limit.' });
}
