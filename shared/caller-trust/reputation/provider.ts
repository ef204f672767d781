// What a reputation provider answers, whoever it is: per carrier a risk level (null: the provider has no answer
// for that carrier, which is never the same as low risk) and the label a handset shows when the number is flagged;
// and remediation requests it re-evaluates asynchronously. Sandbox (default) and Telnyx adapters implement it.

import type { MobileNetwork, RiskLevel } from '../../mobile-networks.ts';

export interface NetworkEvidence {
  carrier: MobileNetwork;
  /** null: unavailable on this carrier. */
  riskLevel: RiskLevel | null;
  /** What the called party's handset shows (e.g. "Spam Risk"); null when not flagged or unknown. */
  displayedLabel: string | null;
}

export const isFlagged = (r: RiskLevel | null) => r === 'MEDIUM' || r === 'HIGH';

export type RemediationKind = 'own_brand' | 'umbrella';
export type RemediationStatus = 'open' | 'in_review' | 'resolved' | 'rejected';

export interface ProviderRemediationState {
  status: RemediationStatus;
  /** Why a request was rejected (the provider's words), null otherwise. */
  reason: string | null;
}

export interface ReputationProvider {
  /** Stored in number_reputation.provider and on each lookup. */
  readonly name: string;
  /** How long to wait between two polls of a remediation request. */
  readonly remediationPollMs: number;
  /** One live lookup of one number on every carrier (always one entry per carrier). */
  lookup(phoneNumber: string): Promise<NetworkEvidence[]>;
  /** Files a re-evaluation request; answers the provider's request id. */
  submitRemediation(r: { phoneNumber: string; kind: RemediationKind; callPurpose: string }): Promise<string>;
  remediationState(providerRef: string, phoneNumber: string): Promise<ProviderRemediationState>;
}

/** A provider call that failed; retryable: a timeout, a network error, a 429 or a 5xx (worth asking again). */
export class ProviderError extends Error {
  constructor(message: string, readonly retryable: boolean, readonly status: number | null = null) {
    super(message);
  }
}
