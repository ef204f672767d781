// Charges that are not calls (a paid reputation check, a remediation case, an SMS segment) go through the same daily
// spend cap as calls and land in the same settled total, so usage and the guardrail count one thing. Like a call,
// a new charge needs an active subscription (shared/usage/plan.ts): refused before anything is reserved or written.
// A charge reserves its price in Redis (the cap check, atomic with every call's admission), then one PostgreSQL
// transaction records it in spend_charges and adds it to org_daily_spend, then the reservation is settled. A
// (organization, kind, ref) is charged at most once: two racing requests for the same paid check both reserve,
// one row wins, the loser drops its reservation. A crash between the commit and the settle leaves a reservation
// whose id is the charge row's id; the calls reconciler settles it from that row (shared/calls/reconcile.ts).
import { randomUUID } from 'node:crypto';
import type { Db } from '../db.ts';
import { subscriptionRefusal } from '../usage/plan.ts';
import type { SpendAccounts } from './spend-accounts.ts';

export type ChargeKind = 'reputation_check' | 'remediation' | 'sms';

export interface ChargeRequest {
  organizationId: string;
  kind: ChargeKind;
  /** What is being paid for, unique per organization and kind (a check id, a message id ...). */
  ref: string;
  cents: number;
  quantity?: number;
  /** The organization's daily spend cap (organizations.daily_spend_cap_cents). */
  capCents: number;
  now?: Date;
}

export type ChargeResult =
  | { charged: true; chargeId: string; cents: number; day: string }
  | { charged: false; reason: 'duplicate'; chargeId: string }
  | { charged: false; reason: 'spend_cap'; settled: number; reserved: number };

export const utcDay = (d: Date) => d.toISOString().slice(0, 10);

export class SpendCharges {
  constructor(private readonly db: Db, private readonly spend: SpendAccounts) {}

  /** Throws the plan's refusal (DomainError no_active_subscription) when a new charge would be made for an organization
   *  whose subscription is inactive; a duplicate (already paid) is answered as such. */
  async charge(c: ChargeRequest): Promise<ChargeResult> {
    const now = c.now ?? new Date();
    const day = utcDay(now);
    // One round trip: the organization's subscription and an earlier charge of the same ref.
    const account = await this.db.oneOrNone<{ subscription_active: boolean; existing: string | null }>(
      `SELECT o.subscription_active, sc.id AS existing FROM organizations o
         LEFT JOIN spend_charges sc ON sc.organization_id = o.id AND sc.kind = $2 AND sc.ref = $3
        WHERE o.id = $1`, [c.organizationId, c.kind, c.ref]);
    if (!account) throw new Error(`no organization ${c.organizationId} to charge`);
    if (account.existing) return { charged: false, reason: 'duplicate', chargeId: account.existing };
    const refusal = subscriptionRefusal(account.subscription_active);
    if (refusal) throw refusal;
    const id = randomUUID();
    if (c.cents > 0) {
      const admission = await this.spend.reserve(c.organizationId, day, id,
        { worstCents: c.cents, minimumCents: c.cents, capCents: c.capCents, now: now.getTime() });
      if (!admission.admitted) return { charged: false, reason: 'spend_cap', settled: admission.settled, reserved: admission.reserved };
    }
    let inserted = false;
    try {
      inserted = await this.db.tx('spend-charge', async (t) => {
        const row = await t.oneOrNone(
          `INSERT INTO spend_charges (id, organization_id, day, kind, ref, cents, quantity, created_at)
           VALUES ($1, $2, $3::date, $4, $5, $6, $7, $8)
           ON CONFLICT (organization_id, kind, ref) DO NOTHING RETURNING id`,
          [id, c.organizationId, day, c.kind, c.ref, c.cents, c.quantity ?? 1, now]);
        if (!row) return false;
        if (c.cents > 0) {
          await t.none(
            `INSERT INTO org_daily_spend (organization_id, day, cents) VALUES ($1, $2::date, $3)
             ON CONFLICT (organization_id, day) DO UPDATE SET cents = org_daily_spend.cents + EXCLUDED.cents`,
            [c.organizationId, day, c.cents]);
        }
        return true;
      });
    } finally {
      if (c.cents > 0) await this.spend.settle(c.organizationId, day, id, inserted ? c.cents : -1);
    }
    if (!inserted) return { charged: false, reason: 'duplicate', chargeId: (await this.find(c.organizationId, c.kind, c.ref))! };
    return { charged: true, chargeId: id, cents: c.cents, day };
  }

  private async find(orgId: string, kind: ChargeKind, ref: string): Promise<string | null> {
    const row = await this.db.oneOrNone<{ id: string }>(
      'SELECT id FROM spend_charges WHERE organization_id = $1 AND kind = $2 AND ref = $3', [orgId, kind, ref]);
    return row?.id ?? null;
  }
}
