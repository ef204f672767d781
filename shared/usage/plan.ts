// The organization's plan: included voice minutes per UTC calendar month (null = no minute limit) and whether the
// subscription is active. A new organization is active with no limit; the admin CLI sets both.
import type { Db } from '../db.ts';
import { DomainError } from '../errors.ts';

export interface PlanFacts { subscriptionActive: boolean; includedMinutes: number | null; usedMinutes: number }

/** The rule of every paid operation: without an active subscription it is refused (402 no_active_subscription)
 *  before anything is reserved, charged or written. Applied by the call paths (decidePlan), the SMS accept path
 *  (shared/sms/messages.ts) and every charge (SpendCharges.charge: SMS hand-over, reputation checks, remediation). */
export function subscriptionRefusal(subscriptionActive: boolean): DomainError | null {
  if (subscriptionActive) return null;
  return new DomainError('no_active_subscription', 'Your organization has no active subscription.',
    { resolutionHint: 'An administrator can reactivate it: admin org plan --org <id> --active true' });
}

/** Null when the plan lets a call be placed, else the refusal. Calls in progress are not counted until they end. */
export function decidePlan(f: PlanFacts): DomainError | null {
  const inactive = subscriptionRefusal(f.subscriptionActive);
  if (inactive) return inactive;
  if (f.includedMinutes !== null && f.usedMinutes >= f.includedMinutes) {
    return new DomainError('voice_usage_exhausted',
      `The ${f.includedMinutes} voice minutes included this month are used (${f.usedMinutes} used).`,
      { resolutionHint: 'Included minutes renew on the 1st (UTC); an administrator can raise them: admin org plan --org <id> --included-minutes <n>' });
  }
  return null;
}

export interface PlanRow { organization_id: string; subscription_active: boolean; voice_minutes_included: number | null }

export async function getPlan(db: Db, organizationId: string): Promise<PlanRow | null> {
  return db.oneOrNone('SELECT id AS organization_id, subscription_active, voice_minutes_included FROM organizations WHERE id = $1', [organizationId]);
}

/** Changes the given parts (undefined keeps, null included minutes = no limit); null when there is no such organization. */
export async function setPlan(db: Db, organizationId: string, p: { active?: boolean; includedMinutes?: number | null }): Promise<PlanRow | null> {
  return db.oneOrNone(
    `UPDATE organizations SET subscription_active = COALESCE($2, subscription_active),
            voice_minutes_included = CASE WHEN $3 THEN $4::integer ELSE voice_minutes_included END
      WHERE id = $1 RETURNING id AS organization_id, subscription_active, voice_minutes_included`,
    [organizationId, p.active ?? null, p.includedMinutes !== undefined, p.includedMinutes ?? null]);
}
