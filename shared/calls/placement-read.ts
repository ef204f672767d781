// What placing a call reads from PostgreSQL, in one round trip (a prepared statement): the organization's limits,
// the caller ID's live number with its cached Number Health evidence (or, for a number it does not hold, its caller
// ID's standing), and the destination's compliance facts. Each part's columns belong to the module that decides
// with them (shared/compliance/guard.ts, shared/number-health/resolve.ts, shared/caller-ids/standing.ts); this file only puts them in one statement, because every round trip on the dial path costs
// throughput (bench:dial-compliance).
import { callerIdSql, type CallerIdFacts } from '../caller-ids/standing.ts';
import type { Db, Tx } from '../db.ts';
import { factsFromRow, factsParams, factsSql, type FactsRow, type LoadedFacts } from '../compliance/guard.ts';
import { CACHED_EVIDENCE_COLUMNS, type CachedEvidenceColumns } from '../number-health/resolve.ts';

export interface PlacementLimits {
  channel_limit: number;
  calls_per_minute: number;
  daily_spend_cap_cents: number;
  allow_countries: string[];
  max_call_minutes: number;
  /** The caller ID's live (not released) number of the organization; null: not one of its numbers. */
  phone_id: number | null;
  /** That number's sub-entity; a call placed from it takes it. */
  phone_sub_entity_id: string | null;
  phone_status: string | null;
  phone_max: number | null;
}

export interface PlacementRead {
  limits: PlacementLimits;
  /** The caller ID's cached evidence (null columns when it is not a number of the organization). */
  evidence: CachedEvidenceColumns;
  compliance: LoadedFacts;
  /** The organization's caller ID of that number when it does not hold the number; null: none. */
  callerId: CallerIdFacts | null;
}

const FACTS = factsSql({ to: '$3', now: '$4', monthFloor: '$5' });
const CALLER_ID = callerIdSql({ number: '$2', own: 'p.id' });
const TEXT =
  `SELECT o.channel_limit, o.calls_per_minute, o.daily_spend_cap_cents::float8 AS daily_spend_cap_cents, o.allow_countries,
          o.max_call_minutes, p.id AS phone_id, p.sub_entity_id AS phone_sub_entity_id, p.status AS phone_status, p.max_call_minutes AS phone_max,
          ${CACHED_EVIDENCE_COLUMNS('nec', '$4')},
          ${CALLER_ID.columns},
          ${FACTS.columns}
     FROM organizations o
     LEFT JOIN phone_numbers p ON p.organization_id = o.id AND p.phone_number = $2 AND p.status <> 'RELEASED'
     LEFT JOIN number_evidence_cache nec ON nec.phone_id = p.id
     ${CALLER_ID.joins}
     ${FACTS.joins}
    WHERE o.id = $1`;

type Row = PlacementLimits & CachedEvidenceColumns & FactsRow
  & { caller_id_status: CallerIdFacts['status'] | null; caller_id_held_elsewhere: boolean | null };

/** `to` must be a valid E.164 number (placeCall's step 1). */
export async function readPlacement(db: Db | Tx, organizationId: string, from: string, to: string, nowMs: number): Promise<PlacementRead> {
  const r = await db.one<Row>({ name: 'placement-read', text: TEXT, values: [organizationId, from, to, ...factsParams(nowMs)] });
  return {
    limits: {
      channel_limit: r.channel_limit, calls_per_minute: r.calls_per_minute, daily_spend_cap_cents: r.daily_spend_cap_cents,
      allow_countries: r.allow_countries, max_call_minutes: r.max_call_minutes, phone_id: r.phone_id, phone_sub_entity_id: r.phone_sub_entity_id, phone_status: r.phone_status,
      phone_max: r.phone_max,
    },
    evidence: { evidence_generation: r.evidence_generation, evidence_fresh: r.evidence_fresh, evidence_state: r.evidence_state,
      health_warning: r.health_warning, recommended_action: r.recommended_action },
    compliance: await factsFromRow(r, to),
    callerId: r.caller_id_status === null ? null
      : { phone_number: from, status: r.caller_id_status, held_elsewhere: r.caller_id_held_elsewhere === true },
  };
}
