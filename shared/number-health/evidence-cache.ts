// The cached evidence of numbers (number_evidence_cache, migration 019): set resolution reads one small row per
// member instead of every member's facts. Triggers clear a row and bump its generation whenever what the rule reads
// changes (provider rows, handset summaries, the phone row); computing writes back only under the generation read
// before the facts, so a change that lands meanwhile is never cached over.
import type { Db } from '../db.ts';
import { evaluateEvidence, evidenceValidUntil, TIER, type EvidenceState, type RecommendedAction } from './evidence.ts';
import { evidenceInput, loadFacts } from './facts.ts';

export interface CachedEvidence {
  phone_id: number;
  evidence_state: EvidenceState;
  tier: number;
  health_warning: string | null;
  recommended_action: RecommendedAction;
  /** When this evidence can next change with time alone (ms); null: never by time. */
  valid_until: number | null;
}

/** Computes the evidence of numbers whose cached row was missing or expired (`generations`: what was read before),
 *  stores it when still current, and returns it. */
export async function refreshEvidence(db: Db, organizationId: string, generations: Map<number, number>, now: number): Promise<CachedEvidence[]> {
  const ids = [...generations.keys()];
  const facts = await loadFacts(db, organizationId, ids);
  const out: CachedEvidence[] = [];
  const cols = { id: [] as number[], gen: [] as number[], state: [] as string[], tier: [] as number[], warning: [] as (string | null)[],
    action: [] as string[], until: [] as (Date | null)[] };
  for (const [id, f] of facts) {
    const input = evidenceInput(f, now);
    const ev = evaluateEvidence(input);
    const until = evidenceValidUntil(input);
    out.push({ phone_id: id, evidence_state: ev.evidence_state, tier: TIER[ev.evidence_state], health_warning: ev.health_warning,
      recommended_action: ev.recommended_action, valid_until: until });
    cols.id.push(id); cols.gen.push(generations.get(id)!); cols.state.push(ev.evidence_state); cols.tier.push(TIER[ev.evidence_state]);
    cols.warning.push(ev.health_warning); cols.action.push(ev.recommended_action); cols.until.push(until === null ? null : new Date(until));
  }
  if (cols.id.length) {
    await db.none(
      `INSERT INTO number_evidence_cache AS c (phone_id, organization_id, generation, evidence_state, tier, health_warning, recommended_action, valid_until)
       SELECT u.id, $1, u.gen, u.state, u.tier, u.warning, u.action, u.until
         FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::smallint[], $6::text[], $7::text[], $8::timestamptz[])
              AS u(id, gen, state, tier, warning, action, until)
       ON CONFLICT (phone_id) DO UPDATE SET evidence_state = EXCLUDED.evidence_state, tier = EXCLUDED.tier,
         health_warning = EXCLUDED.health_warning, recommended_action = EXCLUDED.recommended_action, valid_until = EXCLUDED.valid_until
       WHERE c.generation = EXCLUDED.generation`,
      [organizationId, cols.id, cols.gen, cols.state, cols.tier, cols.warning, cols.action, cols.until]);
  }
  return out;
}
