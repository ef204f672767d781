import type { Static } from '@sinclair/typebox';
import type { Db, Tx } from '../../db.ts';
import { notFound, validationError } from '../../errors.ts';
import { keysetClause, type PageParams } from '../../pagination.ts';
import { isE164 } from '../../phone/e164.ts';
import { MOBILE_NETWORKS, type MobileNetwork, type RiskLevel } from '../../mobile-networks.ts';
import { isFlagged, type NetworkEvidence } from './provider.ts';
import type { ReputationResponse } from './schemas.ts';

// The cached evidence (number_reputation, one row per number and carrier; Number Health reads the same rows): read
// one number's, list the organization's with filters, write a refresh.

export interface OwnedNumber { id: number; phone_number: string; organization_id: string; reputation_enrolled_at: Date | null }

interface EvidenceRow { phone_id: number; carrier: MobileNetwork; risk_level: RiskLevel | null; displayed_label: string | null; provider: string; checked_at: Date }

/** A held (not released) number of the organization by its E.164 form; 400 when it is not E.164, 404 when not owned. */
export async function ownedNumber(db: Db | Tx, organizationId: string, phone: string, field = 'phone'): Promise<OwnedNumber> {
  if (!isE164(phone)) throw validationError({ [field]: 'must be an E.164 number such as +14155550123' });
  const row = await db.oneOrNone<OwnedNumber>(
    `SELECT id::int AS id, phone_number, organization_id, reputation_enrolled_at FROM phone_numbers
      WHERE phone_number = $1 AND organization_id = $2 AND status <> 'RELEASED'`, [phone, organizationId]);
  if (!row) throw notFound(`Phone number ${phone}`);
  return row;
}

export async function readEvidence(db: Db | Tx, phoneIds: number[]): Promise<Map<number, EvidenceRow[]>> {
  const out = new Map<number, EvidenceRow[]>();
  if (!phoneIds.length) return out;
  const rows = await db.any<EvidenceRow>(
    'SELECT phone_id::int AS phone_id, carrier, risk_level, displayed_label, provider, checked_at FROM number_reputation WHERE phone_id = ANY($1::bigint[])',
    [phoneIds]);
  for (const r of rows) {
    const list = out.get(r.phone_id) ?? [];
    list.push(r);
    out.set(r.phone_id, list);
  }
  return out;
}

/** Writes one lookup's evidence for every carrier (inside the transaction that completes the lookup). */
export async function writeEvidence(tx: Tx, n: OwnedNumber, evidence: NetworkEvidence[], provider: string): Promise<void> {
  for (const e of evidence) {
    await tx.none(
      `INSERT INTO number_reputation (phone_id, carrier, organization_id, risk_level, displayed_label, provider, checked_at)
       VALUES ($1, $2, $3, $4, $5, $6, now())
       ON CONFLICT (phone_id, carrier) DO UPDATE SET organization_id = EXCLUDED.organization_id, risk_level = EXCLUDED.risk_level,
         displayed_label = EXCLUDED.displayed_label, provider = EXCLUDED.provider, checked_at = EXCLUDED.checked_at`,
      [n.id, e.carrier, n.organization_id, e.riskLevel, isFlagged(e.riskLevel) ? e.displayedLabel : null, provider]);
  }
}

/** The API shape of one number's evidence. */
export function reputationView(n: Pick<OwnedNumber, 'id' | 'phone_number' | 'reputation_enrolled_at'>, rows: EvidenceRow[], freshnessMs: number,
  now = Date.now()): Static<typeof ReputationResponse> {
  const carriers = {} as Record<MobileNetwork, { risk_level: RiskLevel | null; displayed_label: string | null; checked_at: string | null }>;
  for (const c of MOBILE_NETWORKS) {
    const r = rows.find((x) => x.carrier === c);
    carriers[c] = { risk_level: r?.risk_level ?? null, displayed_label: r?.displayed_label ?? null, checked_at: r ? r.checked_at.toISOString() : null };
  }
  const oldest = rows.length === MOBILE_NETWORKS.length ? Math.min(...rows.map((r) => r.checked_at.getTime())) : null;
  return {
    phone_number: n.phone_number,
    phone_id: n.id,
    carriers,
    flagged: rows.some((r) => isFlagged(r.risk_level)),
    checked_at: oldest === null ? null : new Date(oldest).toISOString(),
    stale: oldest === null || now - oldest > freshnessMs,
    provider: rows[0]?.provider ?? null,
    enrolled_at: n.reputation_enrolled_at ? n.reputation_enrolled_at.toISOString() : null,
  };
}

export interface ReputationFilters { risk_level?: RiskLevel | 'UNAVAILABLE'; carrier?: MobileNetwork; stale?: boolean; flagged?: boolean }

/** A page of the organization's held numbers (by phone id) with their evidence, filtered. */
export async function listReputation(db: Db, organizationId: string, f: ReputationFilters, freshnessMs: number, p: PageParams) {
  const values: unknown[] = [organizationId];
  const where: string[] = [];
  const carrierCond = f.carrier ? ` AND r.carrier = $${values.push(f.carrier)}` : '';
  if (f.risk_level === 'UNAVAILABLE') {
    // A carrier with no answer: a NULL risk level, or no row at all yet.
    where.push(f.carrier
      ? `NOT EXISTS (SELECT 1 FROM number_reputation r WHERE r.phone_id = p.id AND r.risk_level IS NOT NULL${carrierCond})`
      : `(SELECT count(r.risk_level) FROM number_reputation r WHERE r.phone_id = p.id) < ${MOBILE_NETWORKS.length}`);
  } else if (f.risk_level) {
    where.push(`EXISTS (SELECT 1 FROM number_reputation r WHERE r.phone_id = p.id AND r.risk_level = $${values.push(f.risk_level)}${carrierCond})`);
  } else if (f.carrier) {
    where.push(`EXISTS (SELECT 1 FROM number_reputation r WHERE r.phone_id = p.id${carrierCond})`);
  }
  if (f.flagged !== undefined) {
    where.push(`${f.flagged ? '' : 'NOT '}EXISTS (SELECT 1 FROM number_reputation r WHERE r.phone_id = p.id AND r.risk_level IN ('MEDIUM', 'HIGH'))`);
  }
  if (f.stale !== undefined) {
    const staleSql = `(SELECT count(*) < ${MOBILE_NETWORKS.length} OR min(r.checked_at) < now() - make_interval(secs => $${values.push(freshnessMs / 1000)})
                        FROM number_reputation r WHERE r.phone_id = p.id)`;
    where.push(f.stale ? staleSql : `NOT ${staleSql}`);
  }
  const k = keysetClause('p.id', p, values.length + 1);
  const rows = await db.any<OwnedNumber>(
    `SELECT p.id::int AS id, p.phone_number, p.organization_id, p.reputation_enrolled_at FROM phone_numbers p
      WHERE p.organization_id = $1 AND p.status <> 'RELEASED'${where.map((w) => ` AND ${w}`).join('')}${k.where}${k.tail}`,
    [...values, ...k.values]);
  return rows;
}
