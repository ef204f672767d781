// Caller-ID selection from a Number Set (POST .../sets/{id}/resolve and POST /v1/calls/dial with number_set_id).
// Eligible: outbound-enabled members in state ACTIVE or STANDBY whose number is ACTIVE. Order: the healthiest
// evidence tier, then priority (lower first), then a recipient-sticky tie-breaker: rendezvous hashing of
// destination and phone id, so a destination keeps its number while that number stays in the best tier, and
// adding or retiring one member moves only the destinations that hashed to it. Nothing is reserved. Members'
// evidence comes from number_evidence_cache (evidence-cache.ts), computed for the members whose row is missing
// or expired.
import type { Static } from '@sinclair/typebox';
import { DomainError } from '../errors.ts';
import type { Db } from '../db.ts';
import { isUuid } from '../ids.ts';
import { notFound } from '../errors.ts';
import type { EvidenceState, RecommendedAction } from './evidence.ts';
import { refreshEvidence } from './evidence-cache.ts';
import type { ResolutionResponse } from './schemas.ts';

export const SELECTION_SOURCE = 'number_set_sticky_health';

/** What the preview answers: resolveNumberSet builds the API shape itself, so it is the response schema's type. */
export type Resolution = Static<typeof ResolutionResponse>;

/** FNV-1a over the key, then a murmur3 finalizer: a well-spread 32-bit weight per (destination, number). */
export function rendezvousWeight(destination: string, phoneId: number): number {
  let h = 0x811c9dc5;
  const key = `${destination}|${phoneId}`;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

interface Candidate { phone_id: number; phone_number: string; priority: number; tier: number | null; generation: number | null;
  evidence_state: EvidenceState | null; health_warning: string | null; recommended_action: RecommendedAction | null }

/** A set's selection ranking: its eligible members at the best (tier, priority), valid while the set's version
 *  is unchanged and until the first member's evidence can change with time. */
interface Ranked { phone_id: number; phone_number: string; priority: number; tier: number; evidence_state: EvidenceState;
  health_warning: string | null; recommended_action: RecommendedAction }
interface Ranking { version: number; validUntil: number; eligible: number; best: Ranked[] }

const RANKINGS_MAX = 2000;
const rankings = new Map<string, Ranking>();

/** Reads the eligible members and their evidence (computing what the cache lacks) and ranks them. */
async function rank(db: Db, organizationId: string, setId: string, version: number, now: number): Promise<Ranking> {
  const rows = await db.any<Candidate & { eligible: number; valid_until: Date | null }>(
    `WITH e AS (
       SELECT m.phone_id, p.phone_number, m.priority, c.generation, c.valid_until,
              CASE WHEN c.evidence_state IS NOT NULL AND (c.valid_until IS NULL OR c.valid_until > $3) THEN c.tier END AS tier,
              c.evidence_state, c.health_warning, c.recommended_action
         FROM number_set_members m JOIN phone_numbers p ON p.id = m.phone_id AND p.status = 'ACTIVE'
         LEFT JOIN number_evidence_cache c ON c.phone_id = m.phone_id
        WHERE m.set_id = $2 AND m.organization_id = $1 AND m.outbound_enabled AND m.state IN ('ACTIVE', 'STANDBY'))
     SELECT e.*, (SELECT count(*)::int FROM e) AS eligible,
            (SELECT min(valid_until) FROM e WHERE tier IS NOT NULL) AS valid_until
       FROM e
      WHERE e.tier IS NULL OR (e.tier, e.priority) = (SELECT tier, priority FROM e WHERE tier IS NOT NULL ORDER BY tier, priority LIMIT 1)`,
    [organizationId, setId, new Date(now)]);
  const stale = new Map(rows.filter((r) => r.tier === null).map((r) => [r.phone_id, r.generation ?? 0]));
  const fresh = stale.size ? await refreshEvidence(db, organizationId, stale, now) : [];
  const byId = new Map(fresh.map((e) => [e.phone_id, e]));
  let validUntil = rows.length && rows[0].valid_until ? rows[0].valid_until.getTime() : Infinity;
  for (const e of fresh) if (e.valid_until !== null) validUntil = Math.min(validUntil, e.valid_until);
  const all: Ranked[] = [];
  for (const r of rows) {
    const e = r.tier === null ? byId.get(r.phone_id) : r;
    if (!e || e.tier === null) continue; // a number that left the organization meanwhile
    all.push({ phone_id: r.phone_id, phone_number: r.phone_number, priority: r.priority, tier: e.tier,
      evidence_state: e.evidence_state!, health_warning: e.health_warning, recommended_action: e.recommended_action! });
  }
  const top = all.reduce<Ranked | null>((b, c) => (!b || c.tier < b.tier || (c.tier === b.tier && c.priority < b.priority) ? c : b), null);
  return { version, validUntil, eligible: rows[0]?.eligible ?? 0,
    best: top ? all.filter((c) => c.tier === top.tier && c.priority === top.priority) : [] };
}

export async function resolveNumberSet(db: Db, organizationId: string, setId: string, destination: string, now: number): Promise<Resolution> {
  const head = isUuid(setId)
    ? await db.oneOrNone<{ version: number }>('SELECT version FROM number_sets WHERE id = $1 AND organization_id = $2', [setId, organizationId]) : null;
  if (!head) throw notFound(`Number Set ${setId}`);
  let r = rankings.get(setId);
  if (!r || r.version !== head.version || now >= r.validUntil) {
    // The version is read before the members and evidence: a change landing meanwhile moves it again, so a ranking
    // built from newer data under an older version is only recomputed once more, never kept past a change.
    r = await rank(db, organizationId, setId, head.version, now);
    rankings.delete(setId);
    if (rankings.size >= RANKINGS_MAX) rankings.delete(rankings.keys().next().value!);
    rankings.set(setId, r);
  }
  let best: Ranked | null = null;
  let bestWeight = 0;
  for (const c of r.best) {
    const w = rendezvousWeight(destination, c.phone_id);
    if (!best || w > bestWeight || (w === bestWeight && c.phone_id < best.phone_id)) { best = c; bestWeight = w; }
  }
  if (!best) {
    throw new DomainError('no_active_number', `Number Set ${setId} has no eligible member (outbound-enabled, ACTIVE or STANDBY, number active).`,
      { resolutionHint: 'PATCH the set to enable or add a member, or pass from_number.' });
  }
  const warning = best.evidence_state === 'FLAGGED'
    ? `Every eligible member of the set is flagged; selected the best of them. ${best.health_warning}` : best.health_warning;
  return {
    number_set_id: setId, phone_id: best.phone_id, from_number: best.phone_number, evidence_state: best.evidence_state,
    health_warning: warning, recommended_action: best.recommended_action, selection_source: SELECTION_SOURCE,
    eligible_members: r.eligible,
  };
}

/** The evidence of an exact caller ID: what a dial with from_number answers, with a warning when it is risky. */
export interface CallerIdEvidence { evidence_state: EvidenceState; health_warning: string | null; recommended_action: RecommendedAction }

/** A number's cached evidence as columns of a query that joins number_evidence_cache as `cache` (`now`: the
 *  parameter holding the time): the dial path reads them in its placement query, not in a query of their own. */
export const CACHED_EVIDENCE_COLUMNS = (cache: string, now: string) =>
  `${cache}.generation AS evidence_generation,
   ${cache}.evidence_state IS NOT NULL AND (${cache}.valid_until IS NULL OR ${cache}.valid_until > ${now}) AS evidence_fresh,
   ${cache}.evidence_state, ${cache}.health_warning, ${cache}.recommended_action`;

export interface CachedEvidenceColumns { evidence_generation: number | null; evidence_fresh: boolean | null;
  evidence_state: EvidenceState | null; health_warning: string | null; recommended_action: RecommendedAction | null }

/** The number's evidence from those columns, computed (and cached) when the cached row is missing or expired. */
export async function callerIdEvidence(db: Db, organizationId: string, phoneId: number, row: CachedEvidenceColumns,
  now: number): Promise<CallerIdEvidence | null> {
  if (row.evidence_fresh) return { evidence_state: row.evidence_state!, health_warning: row.health_warning, recommended_action: row.recommended_action! };
  const [e] = await refreshEvidence(db, organizationId, new Map([[phoneId, row.evidence_generation ?? 0]]), now);
  return e ? { evidence_state: e.evidence_state, health_warning: e.health_warning, recommended_action: e.recommended_action } : null;
}
