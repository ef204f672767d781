// Password-reset requests are limited per email and per client address, counted whether or not the email has an
// account (so the limit tells nothing about who has one): a flood of links to one inbox, or a scan from one address,
// stops at the limit for the rest of the hour.
import type { Keyer } from '../redis.ts';
import { DomainError } from '../errors.ts';
import { sha256 } from '../ids.ts';
import type { FixedWindowLimiter } from '../ratelimit/fixed-window-limiter.ts';

export const RESETS_PER_EMAIL_PER_HOUR = 3;
export const RESETS_PER_ADDRESS_PER_HOUR = 20;

/** Takes one request of the email's and of the address's hourly allowance; rate_limited (with Retry-After) past either. */
export async function throttlePasswordResets(limiter: FixedWindowLimiter, key: Keyer, email: string, address: string): Promise<void> {
  const counts: [string, number][] = [
    [key('pwreset', 'email', sha256(email).toString('base64url')), RESETS_PER_EMAIL_PER_HOUR],
    [key('pwreset', 'address', address), RESETS_PER_ADDRESS_PER_HOUR],
  ];
  for (const [k, limit] of counts) {
    const d = await limiter.take(k, limit);
    if (!d.allowed) {
      throw new DomainError('rate_limited', `Too many password reset requests; retry in ${d.resetSeconds} s.`,
        { retryAfterSeconds: d.resetSeconds, resolutionHint: 'A link already sent stays valid for an hour: check the inbox.' });
    }
  }
}
