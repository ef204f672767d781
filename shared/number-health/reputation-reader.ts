// Reads the provider evidence that caller trust's reputation provider writes (number_reputation, migration 012).
// Number Health never writes it and never asks for a paid check.
import type { Db, Tx } from '../db.ts';
import type { MobileNetwork, RiskLevel } from '../mobile-networks.ts';

export interface ReputationRow {
  phone_id: number;
  carrier: MobileNetwork;
  risk_level: RiskLevel | null;
  displayed_label: string | null;
  provider: string;
  checked_at: Date;
}

/** The provider rows of the given numbers of one organization, grouped by phone id. */
export async function readReputation(db: Db | Tx, organizationId: string, phoneIds: number[]): Promise<Map<number, ReputationRow[]>> {
  const out = new Map<number, ReputationRow[]>();
  if (!phoneIds.length) return out;
  const rows = await db.any<ReputationRow>(
    `SELECT phone_id, carrier, risk_level, displayed_label, provider, checked_at FROM number_reputation
      WHERE organization_id = $1 AND phone_id = ANY($2::bigint[])`,
    [organizationId, phoneIds],
  );
  for (const r of rows) {
    const list = out.get(r.phone_id);
    if (list) list.push(r); else out.set(r.phone_id, [r]);
  }
  return out;
}
