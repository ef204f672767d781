// Caller-ID selection for POST /v1/calls/dial (the only place a Number Set selects a caller ID). An exact
// from_number wins over number_set_id and is dialed as given, with its evidence and a warning when it is risky
// (never switched or refused for reputation alone; an inactive number then fails normally in placement).
import type { Db } from '../db.ts';
import { DomainError, validationError } from '../errors.ts';
import { isE164 } from '../phone/e164.ts';
import type { EvidenceState, RecommendedAction } from './evidence.ts';
import { resolveNumberSet, SELECTION_SOURCE, type CallerIdEvidence } from './resolve.ts';

export interface CallerIdSelection {
  from: string | undefined;
  selection_source: 'exact_from_number' | typeof SELECTION_SOURCE;
  evidence_state: EvidenceState | null;
  health_warning: string | null;
  recommended_action: RecommendedAction | null;
}

/** With number_set_id and no from_number: the set's selection. Otherwise the exact from_number, whose evidence
 *  placement reads with its own facts (placeCall withEvidence, one round trip): `exactSelection` turns it into the
 *  answer. */
export async function selectCallerId(db: Db, organizationId: string, req: { from?: string; numberSetId?: string; to?: string },
  now: number): Promise<CallerIdSelection | null> {
  if (req.from !== undefined || req.numberSetId === undefined) return null;
  // Without a dialable destination there is nothing to be sticky to: placement reports the destination error.
  if (req.to === undefined || !isE164(req.to)) return { from: undefined, selection_source: SELECTION_SOURCE, ...NONE };
  const r = await resolveNumberSet(db, organizationId, req.numberSetId, req.to, now).catch((err) => {
    // On dial the set is a body field, not the resource of the path: an unknown one is a bad field.
    if (err instanceof DomainError && err.code === 'not_found') throw validationError({ number_set_id: 'is not a Number Set of your organization' });
    throw err;
  });
  return { from: r.from_number, selection_source: SELECTION_SOURCE, evidence_state: r.evidence_state,
    health_warning: r.health_warning, recommended_action: r.recommended_action };
}

/** The exact from_number's selection, from its evidence as placement read it. */
export const exactSelection = (from: string, ev: CallerIdEvidence | null): CallerIdSelection =>
  ({ from, selection_source: 'exact_from_number', ...(ev ?? NONE) });

const NONE = { evidence_state: null, health_warning: null, recommended_action: null };
