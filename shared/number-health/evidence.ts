// The one rule that turns a number's evidence into its evidence_state, health_warning, recommended_action and
// readiness progress. Pure (no I/O, the time is an input) so every row of the reference's table is unit-tested.
//
//   RETIRED           the number is not held any more (RELEASED) or the set membership looked at is RETIRED
//   SETUP_INCOMPLETE  still PROVISIONING, or identity (CNAM display name), registration with the call-analytics
//                     providers (status registered, shared/number-registration) or reputation monitoring is missing
//   FLAGGED           a HIGH provider risk on any carrier (of any age: an old HIGH is not proof of clean), or recent
//                     negative handset evidence (the latest observation of a carrier is WRONG_NAME, SPAM, SCAM,
//                     BLOCKED or NO_RING and is recent)
//   WATCH             a MEDIUM provider risk on any carrier
//   CLEAN_OBSERVED    fresh LOW on ATT, TMOBILE and VERIZON, complete setup, and the readiness policy met with recent
//                     qualifying handset evidence; not a cross-carrier guarantee
//   NEEDS_DATA        everything else: a carrier unavailable (null risk), stale or never checked, or readiness not
//                     met yet. Unknown is never clean.
import { MOBILE_NETWORKS, type MobileNetwork, type RiskLevel } from '../mobile-networks.ts';
import { HANDSET_RECENT_MS, NEGATIVE_OUTCOMES, PROVIDER_FRESH_MS, READINESS, type Outcome, type TesterNetwork } from './policy.ts';

export const EVIDENCE_STATES = ['CLEAN_OBSERVED', 'NEEDS_DATA', 'WATCH', 'FLAGGED', 'SETUP_INCOMPLETE', 'RETIRED'] as const;
export type EvidenceState = (typeof EVIDENCE_STATES)[number];

/** Selection order of Number Sets: healthiest first. Unknown (NEEDS_DATA) ranks above a known MEDIUM risk. */
export const TIER: Record<EvidenceState, number> = {
  CLEAN_OBSERVED: 0, NEEDS_DATA: 1, WATCH: 2, SETUP_INCOMPLETE: 3, FLAGGED: 4, RETIRED: 5,
};

export const ACTIONS = ['NONE', 'COMPLETE_SETUP', 'REQUEST_REMEDIATION', 'MONITOR', 'FRESH_CHECK', 'RUN_SPAM_TEST'] as const;
export type RecommendedAction = (typeof ACTIONS)[number];


/** One provider answer (a number_reputation row). risk null: the provider had no answer. */
export interface ProviderScore { carrier: MobileNetwork; risk_level: RiskLevel | null; checked_at: number }

/** The latest handset observation of one carrier. */
export interface LatestObservation { carrier: TesterNetwork; outcome: Outcome; observed_at: number }

/** Counts of qualifying human evidence (after the UTC-day dedup). */
export interface ReadinessCounts {
  qualifyingCalls: number;
  consentedTesters: number;
  activeDays: number;
  cleanCarriers: readonly string[];
  callbackVerified: boolean;
  lastQualifyingAt: number | null;
}

export const NO_READINESS: ReadinessCounts = {
  qualifyingCalls: 0, consentedTesters: 0, activeDays: 0, cleanCarriers: [], callbackVerified: false, lastQualifyingAt: null,
};

export interface EvidenceInput {
  now: number;
  numberStatus: 'PROVISIONING' | 'ACTIVE' | 'RELEASED';
  retiredMembership: boolean;
  /** registration: the number is registered with the call-analytics providers (shared/number-registration). */
  setup: { identity: boolean; monitoring: boolean; registration: boolean };
  scores: readonly ProviderScore[];
  latest: readonly LatestObservation[];
  readiness: ReadinessCounts;
}

/** Per carrier: the provider's answer as the policy sees it. */
export type CarrierRisk = RiskLevel | 'UNAVAILABLE' | 'STALE' | 'NOT_CHECKED';

export interface Evidence {
  evidence_state: EvidenceState;
  health_warning: string | null;
  recommended_action: RecommendedAction;
  readiness: ReturnType<typeof readinessProgress>;
}

export function carrierRisks(scores: readonly ProviderScore[], now: number): Record<MobileNetwork, CarrierRisk> {
  const out = { ATT: 'NOT_CHECKED', TMOBILE: 'NOT_CHECKED', VERIZON: 'NOT_CHECKED' } as Record<MobileNetwork, CarrierRisk>;
  for (const s of scores) {
    if (s.risk_level === null) out[s.carrier] = 'UNAVAILABLE';
    // A stale LOW is unknown; a stale MEDIUM or HIGH still warns (see the table above).
    else if (s.risk_level === 'LOW' && now - s.checked_at > PROVIDER_FRESH_MS) out[s.carrier] = 'STALE';
    else out[s.carrier] = s.risk_level;
  }
  return out;
}

const recentNegatives = (latest: readonly LatestObservation[], now: number) =>
  latest.filter((o) => NEGATIVE_OUTCOMES.includes(o.outcome) && now - o.observed_at <= HANDSET_RECENT_MS);

export function readinessProgress(i: EvidenceInput) {
  const r = i.readiness;
  const risks = carrierRisks(i.scores, i.now);
  const count = (required: number, observed: number) => ({ required, observed, met: observed >= required });
  const clean = READINESS.cleanCarriers.filter((c) => r.cleanCarriers.includes(c));
  const parts = {
    qualifying_human_calls: count(READINESS.qualifyingHumanCalls, r.qualifyingCalls),
    consented_testers: count(READINESS.consentedTesters, r.consentedTesters),
    active_days: count(READINESS.activeDays, r.activeDays),
    clean_observation_carriers: { required: [...READINESS.cleanCarriers], observed: clean, met: clean.length === READINESS.cleanCarriers.length },
    verified_callback: { met: r.callbackVerified },
    provider_risk: { required: READINESS.providerRisk, carriers: risks, met: MOBILE_NETWORKS.every((c) => risks[c] === 'LOW') },
    no_recent_negative_display: { met: recentNegatives(i.latest, i.now).length === 0 },
  };
  return { ...parts, met: Object.values(parts).every((p) => p.met) };
}

/** The next instant at which the evidence can change with time alone (a LOW answer going stale, a negative or the
 *  latest qualifying evidence stopping being recent); null when nothing ahead depends on time. */
export function evidenceValidUntil(i: EvidenceInput): number | null {
  const edges = [
    ...i.scores.filter((s) => s.risk_level === 'LOW').map((s) => s.checked_at + PROVIDER_FRESH_MS),
    ...i.latest.filter((o) => NEGATIVE_OUTCOMES.includes(o.outcome)).map((o) => o.observed_at + HANDSET_RECENT_MS),
    ...(i.readiness.lastQualifyingAt === null ? [] : [i.readiness.lastQualifyingAt + HANDSET_RECENT_MS]),
  ].filter((x) => x >= i.now);
  return edges.length ? Math.min(...edges) : null;
}

export function evaluateEvidence(i: EvidenceInput): Evidence {
  const readiness = readinessProgress(i);
  const out = (evidence_state: EvidenceState, health_warning: string | null, recommended_action: RecommendedAction): Evidence =>
    ({ evidence_state, health_warning, recommended_action, readiness });

  if (i.numberStatus === 'RELEASED') return out('RETIRED', 'The number is released; its history is kept.', 'NONE');
  if (i.retiredMembership) return out('RETIRED', 'Retired from the Number Set: not used for outbound selection; history kept.', 'NONE');

  const missing = [
    ...(i.numberStatus === 'PROVISIONING' ? ['provisioning'] : []),
    ...(i.setup.identity ? [] : ['identity (CNAM display name)']),
    ...(i.setup.registration ? [] : ['number registration']),
    ...(i.setup.monitoring ? [] : ['reputation monitoring']),
  ];
  if (missing.length) return out('SETUP_INCOMPLETE', `Setup incomplete: ${missing.join(', ')}.`, 'COMPLETE_SETUP');

  const risks = readiness.provider_risk.carriers;
  const high = MOBILE_NETWORKS.filter((c) => risks[c] === 'HIGH');
  const negatives = recentNegatives(i.latest, i.now);
  if (high.length || negatives.length) {
    const why = [
      ...high.map((c) => `HIGH provider risk on ${c}`),
      ...negatives.map((o) => `${o.outcome} observed on ${o.carrier} at ${new Date(o.observed_at).toISOString()}`),
    ];
    return out('FLAGGED', `Flagged: ${why.join('; ')}.`, 'REQUEST_REMEDIATION');
  }
  const medium = MOBILE_NETWORKS.filter((c) => risks[c] === 'MEDIUM');
  if (medium.length) return out('WATCH', `MEDIUM provider risk on ${medium.join(', ')}.`, 'MONITOR');

  const unknown = MOBILE_NETWORKS.filter((c) => risks[c] !== 'LOW');
  if (unknown.length) {
    return out('NEEDS_DATA', `Provider risk unknown on ${unknown.map((c) => `${c} (${risks[c].toLowerCase().replace('_', ' ')})`).join(', ')}: unknown is not clean.`,
      'FRESH_CHECK');
  }
  const recent = i.readiness.lastQualifyingAt !== null && i.now - i.readiness.lastQualifyingAt <= HANDSET_RECENT_MS;
  if (!readiness.met || !recent) {
    const short = Object.entries(readiness).filter(([k, v]) => k !== 'met' && typeof v === 'object' && !v.met).map(([k]) => k);
    if (!recent && readiness.met) short.push('recent handset evidence');
    return out('NEEDS_DATA', `Readiness not met: ${short.join(', ')}.`, 'RUN_SPAM_TEST');
  }
  return out('CLEAN_OBSERVED', null, 'NONE');
}
