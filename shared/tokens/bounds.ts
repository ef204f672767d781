import type { Principal } from '../accounts/principal.ts';
import { DomainError } from '../errors.ts';

// The credential's ceiling (an API key's allowed caller IDs and destinations, or a client token's bounds): a
// sender or a destination outside it is 403 forbidden, before anything is written. Empty lists mean no ceiling.

/** from: [wire name, number]; to: the destinations as [wire name, number]. */
export function assertWithinBounds(p: Principal, from: [string, string], to: [string, string][]): void {
  if (p.allowedFrom.length && !p.allowedFrom.includes(from[1])) {
    throw new DomainError('forbidden', `${from[0]} is outside the caller IDs this credential may use.`,
      { fields: { [from[0]]: 'is not in the credential\'s allowed caller IDs' } });
  }
  if (!p.allowedTo.length) return;
  for (const [field, n] of to) {
    if (!p.allowedTo.includes(n)) {
      throw new DomainError('forbidden', `${field} is outside the destinations this credential may call.`,
        { fields: { [field]: 'is not in the credential\'s allowed destinations' } });
    }
  }
}
