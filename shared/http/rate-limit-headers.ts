// The rate-limit headers of an answer (HTTP machinery: the limiter itself, shared/ratelimit/, decides; this writes).
import type { RateDecision } from '../ratelimit/fixed-window-limiter.ts';

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
