// Rule 9 of Authentication: Number Health writes are attributed to a user, so the credential must carry one
// (api_keys.user_id; client tokens inherit their key's). A key made without a user is refused before any write.
import type { Principal } from '../accounts/principal.ts';
import { DomainError } from '../errors.ts';

export function attributedUser(p: Principal): string {
  if (!p.userId) {
    throw new DomainError('user_required', 'This Number Health operation is attributed to a user, and this credential has no associated user.',
      { resolutionHint: 'Use an API key created for a user (admin key create --user ...), not an organization-only key.' });
  }
  return p.userId;
}
