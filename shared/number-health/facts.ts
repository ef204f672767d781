// Loads what the evidence rule needs for a batch of numbers: the phone rows, their handset-evidence summaries and
// the provider rows, in two queries whatever the batch size (fleet pages and set resolution both use it).
import type { Db, Tx } from '../db.ts';
import { evaluateEvidence, NO_READINESS, type Evidence, type EvidenceInput, type LatestObservation, type ReadinessCounts } from './evidence.ts';
import type { TesterNetwork, Outcome } from './policy.ts';
import { readReputation, type ReputationRow } from './reputation-reader.ts';

export interface ObservationSummary {
  carrier: TesterNetwork;
  outcome: Outcome;
  observed_label: string;
  observed_at: string;
  duration_seconds: number | null;
  callback_verified: boolean;
  attempt_id: string;
  mode: string;
}

export interface NumberFacts {
  id: number;
  phone_number: string;
  status: 'PROVISIONING' | 'ACTIVE' | 'RELEASED';
  area_code: string;
  team_id: string | null;
  cnam_display_name: string;
  cnam_status: string;
  reputation_enrolled_at: Date | null;
  /** The number's registration with the call-analytics providers (not_registered when never submitted). */
  registration_status: string;
  readiness: ReadinessCounts;
  latest: ObservationSummary[];
  scores: ReputationRow[];
}

interface Row {
  id: number; phone_number: string; status: NumberFacts['status']; area_code: string; team_id: string | null;
  cnam_display_name: string; cnam_status: string; reputation_enrolled_at: Date | null; registration_status: string;
  qualifying_calls: number | null; consented_testers: number | null; active_days: number | null; clean_carriers: string[] | null;
  callback_verified: boolean | null; last_qualifying_at: Date | null; latest_by_carrier: Record<string, ObservationSummary> | null;
}

/** The facts of the given numbers of one organization. */
export async function loadFacts(db: Db | Tx, organizationId: string, phoneIds: number[]): Promise<Map<number, NumberFacts>> {
  const out = new Map<number, NumberFacts>();
  if (!phoneIds.length) return out;
  const [rows, scores] = await Promise.all([
    db.any<Row>(
      `SELECT p.id, p.phone_number, p.status, p.area_code, p.team_id, p.cnam_display_name, p.cnam_status, p.reputation_enrolled_at,
              COALESCE(nr.status, 'not_registered') AS registration_status, s.qualifying_calls, s.consented_testers, s.active_days, s.clean_carriers, s.callback_verified,
              s.last_qualifying_at, s.latest_by_carrier
         FROM phone_numbers p LEFT JOIN number_health_summaries s ON s.phone_id = p.id
              LEFT JOIN number_registrations nr ON nr.phone_id = p.id
        WHERE p.organization_id = $1 AND p.id = ANY($2::bigint[])`,
      [organizationId, phoneIds],
    ),
    readReputation(db, organizationId, phoneIds),
  ]);
  for (const r of rows) {
    out.set(r.id, {
      id: r.id, phone_number: r.phone_number, status: r.status, area_code: r.area_code, team_id: r.team_id,
      cnam_display_name: r.cnam_display_name, cnam_status: r.cnam_status, reputation_enrolled_at: r.reputation_enrolled_at,
      registration_status: r.registration_status,
      readiness: r.qualifying_calls === null ? NO_READINESS : {
        qualifyingCalls: r.qualifying_calls, consentedTesters: r.consented_testers!, activeDays: r.active_days!,
        cleanCarriers: r.clean_carriers!, callbackVerified: r.callback_verified!,
        lastQualifyingAt: r.last_qualifying_at ? r.last_qualifying_at.getTime() : null,
      },
      latest: Object.values(r.latest_by_carrier ?? {}),
      scores: scores.get(r.id) ?? [],
    });
  }
  return out;
}

/** The evidence of one number; `retiredMembership` when it is looked at through a RETIRED set membership. */
export function evidenceOf(f: NumberFacts, now: number, retiredMembership = false): Evidence {
  return evaluateEvidence(evidenceInput(f, now, retiredMembership));
}

export function evidenceInput(f: NumberFacts, now: number, retiredMembership = false): EvidenceInput {
  return ({
    now, numberStatus: f.status, retiredMembership,
    setup: { identity: f.cnam_display_name.trim() !== '' && f.cnam_status !== 'failed', monitoring: f.reputation_enrolled_at !== null,
      registration: f.registration_status === 'registered' },
    scores: f.scores.map((s) => ({ carrier: s.carrier, risk_level: s.risk_level, checked_at: s.checked_at.getTime() })),
    latest: f.latest.map((o): LatestObservation => ({ carrier: o.carrier, outcome: o.outcome, observed_at: Date.parse(o.observed_at) })),
    readiness: f.readiness,
  });
}
