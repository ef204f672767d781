// The readiness policy of Number Health, in one place: the thresholds of the reference's Limits table, the UTC-day
// dedup rule and the freshness windows. The evidence function, the readiness recount and GET
// /v1/number-health/policy all read these constants.
import type { Static } from '@sinclair/typebox';
import { FRESH_CHECK_PRICE_CENTS, REMEDIATION_PRICE_CENTS } from '../caller-trust/prices.ts';
import { MOBILE_NETWORKS } from '../mobile-networks.ts';
import type { PolicyResponse } from './schemas.ts';

export const POLICY_VERSION = '2026-11-23';

/** A spam-test tester's network: one of the mobile networks, or another / unknown one. */
export const TESTER_NETWORKS = [...MOBILE_NETWORKS, 'OTHER', 'UNKNOWN'] as const;
export type TesterNetwork = (typeof TESTER_NETWORKS)[number];

export const READINESS = {
  qualifyingHumanCalls: 8,
  consentedTesters: 5,
  activeDays: 4,
  conversationalSeconds: 60,
  cleanCarriers: MOBILE_NETWORKS,
  verifiedCallback: true,
  providerRisk: 'LOW',
  noRecentNegativeDisplay: true,
} as const;

const DAY_MS = 24 * 3600_000;
/** A provider answer older than this is stale: the number's risk is then unknown (NEEDS_DATA), never clean. */
export const PROVIDER_FRESH_MS = 7 * DAY_MS;
/** Handset evidence (clean or negative) counts as recent for this long. */
export const HANDSET_RECENT_MS = 30 * DAY_MS;

/** Only these modes produce readiness evidence; RAPID_AUDIT and CONNECTIVITY_QA never do. */
export const READINESS_MODES = ['HUMAN_READINESS'] as const;
/** Modes whose observations are handset evidence (a person looked at a phone); CONNECTIVITY_QA is synthetic. */
export const HANDSET_MODES = ['HUMAN_READINESS', 'RAPID_AUDIT'] as const;

export const OUTCOMES = ['CLEAN', 'NUMBER_ONLY', 'LOCATION', 'WRONG_NAME', 'SPAM', 'SCAM', 'BLOCKED', 'NO_RING', 'UNKNOWN'] as const;
export type Outcome = (typeof OUTCOMES)[number];
/** Negative display: wrong name, spam or scam labels, blocked, no ring. */
export const NEGATIVE_OUTCOMES: readonly Outcome[] = ['WRONG_NAME', 'SPAM', 'SCAM', 'BLOCKED', 'NO_RING'];
/** Non-spam outcomes; NUMBER_ONLY and LOCATION do not confirm the correct name (only CLEAN does). */
export const NON_NEGATIVE_OUTCOMES: readonly Outcome[] = ['CLEAN', 'NUMBER_ONLY', 'LOCATION'];

/** The UTC calendar day of an instant (the readiness dedup key's day). */
export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The body of GET /v1/number-health/policy. */
export function policyView(): Static<typeof PolicyResponse> {
  return {
    policy_version: POLICY_VERSION,
    thresholds: {
      qualifying_human_calls: READINESS.qualifyingHumanCalls,
      consented_testers: READINESS.consentedTesters,
      active_days: READINESS.activeDays,
      conversational_duration_seconds: READINESS.conversationalSeconds,
      clean_observation_carriers: [...READINESS.cleanCarriers],
      verified_callback: READINESS.verifiedCallback,
      provider_risk: READINESS.providerRisk,
      no_recent_negative_display: READINESS.noRecentNegativeDisplay,
    },
    dedup: {
      rule: 'utc_calendar_day',
      description: 'Only one qualifying number/tester interaction per UTC calendar day counts. Extra calls are accepted '
        + 'and kept as evidence, just not counted again; there is no 48-hour rejection.',
    },
    counted_modes: [...READINESS_MODES],
    freshness: {
      provider_check_days: PROVIDER_FRESH_MS / DAY_MS,
      handset_evidence_days: HANDSET_RECENT_MS / DAY_MS,
    },
    prices: {
      currency: 'USD',
      fresh_check_cents: FRESH_CHECK_PRICE_CENTS,
      remediation_cents: { ...REMEDIATION_PRICE_CENTS },
    },
  };
}
