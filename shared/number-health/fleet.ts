// The fleet view (GET /v1/number-health/numbers) and the evidence-based session scopes (FLAGGED, NEEDS_DATA):
// numbers are read in keyset pages of ids and their facts in batches, so a page costs a handful of queries
// whatever the fleet size. A state filter is computed (evidence depends on the time), so it scans batches until
// the page is full.
import type { Static } from '@sinclair/typebox';
import type { Db } from '../db.ts';
import { isUuid } from '../ids.ts';
import type { PageParams } from '../pagination.ts';
import type { EvidenceState } from './evidence.ts';
import { evidenceOf, loadFacts, type NumberFacts } from './facts.ts';
import { PROVIDER_FRESH_MS } from './policy.ts';
import type { FleetItemResponse } from './schemas.ts';
import { membershipsOf } from './sets.ts';

export interface FleetFilter { team_id?: string; number_set_id?: string; area_code?: string; state?: EvidenceState }

const SCAN_BATCH = 500;

/** Ids of the organization's numbers matching the non-evidence filters, in keyset order after `after`. */
async function idPage(db: Db, organizationId: string, f: FleetFilter, order: 'asc' | 'desc', after: number | null, n: number): Promise<number[]> {
  const where = ['organization_id = $1'];
  const args: unknown[] = [organizationId];
  const arg = (v: unknown) => { args.push(v); return `$${args.length}`; };
  if (f.team_id !== undefined) where.push(`team_id = ${arg(f.team_id)}`);
  if (f.area_code !== undefined) where.push(`area_code = ${arg(f.area_code)}`);
  if (f.number_set_id !== undefined) {
    if (!isUuid(f.number_set_id)) return [];
    where.push(`id IN (SELECT phone_id FROM number_set_members WHERE set_id = ${arg(f.number_set_id)} AND organization_id = $1)`);
  }
  if (after !== null) where.push(`id ${order === 'desc' ? '<' : '>'} ${arg(after)}`);
  const rows = await db.any<{ id: number }>(
    `SELECT id FROM phone_numbers WHERE ${where.join(' AND ')} ORDER BY id ${order === 'desc' ? 'DESC' : 'ASC'} LIMIT ${n}`, args);
  return rows.map((r) => r.id);
}

export interface FleetItem { facts: NumberFacts; memberships: Awaited<ReturnType<typeof membershipsOf>> extends Map<number, infer V> ? V : never; evidence: ReturnType<typeof evidenceOf> }

/** Evidence of a batch of numbers: RETIRED through the filtered set's membership, or when every membership is. */
async function evaluate(db: Db, organizationId: string, ids: number[], f: FleetFilter, now: number): Promise<FleetItem[]> {
  const [facts, memberships] = await Promise.all([loadFacts(db, organizationId, ids), membershipsOf(db, organizationId, ids)]);
  return ids.filter((id) => facts.has(id)).map((id) => {
    const ms = memberships.get(id) ?? [];
    const retired = f.number_set_id !== undefined
      ? ms.some((m) => m.number_set_id === f.number_set_id && m.state === 'RETIRED')
      : ms.length > 0 && ms.every((m) => m.state === 'RETIRED');
    return { facts: facts.get(id)!, memberships: ms, evidence: evidenceOf(facts.get(id)!, now, retired) };
  });
}

/** One page (limit + 1 items, for the cursor) of the fleet. */
export async function fleetPage(db: Db, organizationId: string, f: FleetFilter, p: PageParams, now: number): Promise<FleetItem[]> {
  const after = p.after === null ? null : Number(p.after);
  if (f.state === undefined) return evaluate(db, organizationId, await idPage(db, organizationId, f, p.order, after, p.limit + 1), f, now);
  const out: FleetItem[] = [];
  let cursor = after;
  for (;;) {
    const ids = await idPage(db, organizationId, f, p.order, cursor, SCAN_BATCH);
    if (!ids.length) return out;
    for (const item of await evaluate(db, organizationId, ids, f, now)) {
      if (item.evidence.evidence_state !== f.state) continue;
      out.push(item);
      if (out.length > p.limit) return out;
    }
    if (ids.length < SCAN_BATCH) return out;
    cursor = ids[ids.length - 1];
  }
}

/** Ids of the organization's ACTIVE numbers whose evidence is `state` (session scopes FLAGGED and NEEDS_DATA). */
export async function activeIdsInState(db: Db, organizationId: string, state: EvidenceState, now: number): Promise<number[]> {
  const out: number[] = [];
  for (let cursor: number | null = null; ;) {
    const ids = await idPage(db, organizationId, {}, 'asc', cursor, SCAN_BATCH);
    if (!ids.length) return out;
    for (const item of await evaluate(db, organizationId, ids, {}, now)) {
      if (item.facts.status === 'ACTIVE' && item.evidence.evidence_state === state) out.push(item.facts.id);
    }
    cursor = ids[ids.length - 1];
  }
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** An item of GET /v1/number-health/numbers. */
export function fleetItemView({ facts: f, memberships, evidence: e }: FleetItem, now: number): Static<typeof FleetItemResponse> {
  const missing = [
    ...(f.cnam_display_name.trim() === '' || f.cnam_status === 'failed' ? ['identity'] : []),
    ...(f.registration_status !== 'registered' ? ['registration'] : []),
    ...(f.reputation_enrolled_at === null ? ['monitoring'] : []),
  ];
  return {
    phone_id: f.id,
    phone_number: f.phone_number,
    number_status: f.status,
    area_code: f.area_code,
    team_id: f.team_id,
    identity: {
      status: missing.length ? 'INCOMPLETE' : 'COMPLETE',
      missing,
      cnam_display_name: f.cnam_display_name,
      cnam_status: f.cnam_status,
      monitoring_enrolled_at: iso(f.reputation_enrolled_at),
      registration_status: f.registration_status,
    },
    provider_scores: f.scores.map((s) => ({
      carrier: s.carrier, risk_level: s.risk_level, displayed_label: s.displayed_label, provider: s.provider,
      checked_at: s.checked_at.toISOString(), fresh: now - s.checked_at.getTime() <= PROVIDER_FRESH_MS,
    })),
    set_memberships: memberships,
    observations: f.latest,
    evidence_state: e.evidence_state,
    health_warning: e.health_warning,
    recommended_action: e.recommended_action,
    readiness: e.readiness,
  };
}
