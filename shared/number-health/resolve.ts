// Caller-ID selection from a Number Set (POST .../sets/{id}/resolve and POST /v1/calls/dial with number_set_id).
// Eligible: outbound-enabled members in state ACTIVE or STANDBY whose number is ACTIVE. Order: the healthiest
// evidence tier, then priority (lower first), then a recipient-sticky tie-breaker: rendezvous hashing of
// destination and phone id, so a destination keeps its number while that number stays in the best tier, and
// adding or retiring one member moves only the destinations that hashed to it. Nothing is reserved.
import { ApiError } from '../errors.ts';
import type { Db } from '../db.ts';
import { isUuid } from '../ids.ts';
import { notFound } from '../errors.ts';
import { TIER, type EvidenceState, type RecommendedAction } from './evidence.ts';
import { evidenceOf, loadFacts } from './facts.ts';

export const SELECTION_SOURCE = 'number_set_sticky_health';

export interface Resolution {
  number_set_id: string;
  phone_id: number;
  from_number: string;
  evidence_state: EvidenceState;
  health_warning: string | null;
  recommended_action: RecommendedAction;
  selection_source: typeof SELECTION_SOURCE;
  eligible_members: number;
}

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

export async function resolveNumberSet(db: Db, organizationId: string, setId: string, destination: string, now: number): Promise<Resolution> {
  const set = isUuid(setId)
    ? await db.oneOrNone('SELECT id FROM number_sets WHERE id = $1 AND organization_id = $2', [setId, organizationId]) : null;
  if (!set) throw notFound(`Number Set ${setId}`);
  const facts = await loadFacts(db, organizationId, { setId });
  let best: { tier: number; priority: number; weight: number; id: number; ev: ReturnType<typeof evidenceOf> } | null = null;
  for (const f of facts.values()) {
    const ev = evidenceOf(f, now);
    const c = { tier: TIER[ev.evidence_state], priority: f.priority!, weight: rendezvousWeight(destination, f.id), id: f.id, ev };
    if (!best || c.tier < best.tier || (c.tier === best.tier && (c.priority < best.priority
      || (c.priority === best.priority && (c.weight > best.weight || (c.weight === best.weight && c.id < best.id)))))) best = c;
  }
  if (!best) {
    throw new ApiError('no_active_number', `Number Set ${setId} has no eligible member (outbound-enabled, ACTIVE or STANDBY, number active).`,
      { resolutionHint: 'PATCH the set to enable or add a member, or pass from_number.' });
  }
  const chosen = facts.get(best.id)!;
  const warning = best.ev.evidence_state === 'FLAGGED'
    ? `Every eligible member of the set is flagged; selected the best of them. ${best.ev.health_warning}` : best.ev.health_warning;
  return {
    number_set_id: setId, phone_id: chosen.id, from_number: chosen.phone_number, evidence_state: best.ev.evidence_state,
    health_warning: warning, recommended_action: best.ev.recommended_action, selection_source: SELECTION_SOURCE,
    eligible_members: facts.size,
  };
}

/** The evidence of an exact caller ID (dial with from_number): dialed as given, with a warning when it is risky. */
export async function evidenceOfNumber(db: Db, organizationId: string, phoneNumber: string, now: number) {
  const row = await db.oneOrNone<{ id: number }>(
    `SELECT id FROM phone_numbers WHERE organization_id = $1 AND phone_number = $2 AND status <> 'RELEASED'`, [organizationId, phoneNumber]);
  if (!row) return null;
  const f = (await loadFacts(db, organizationId, { phoneIds: [row.id] })).get(row.id)!;
  return evidenceOf(f, now);
}
