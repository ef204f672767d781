import { randomUUID } from 'node:crypto';
import type { Db } from '../../db.ts';
import type { NetworkEvidence, ProviderRemediationState, RemediationKind, ReputationProvider } from './provider.ts';

// The deterministic sandbox provider. By the last digit of the number (docs/reference/reputation.md):
//   ...7  TMOBILE HIGH "Scam Likely"; ATT and VERIZON LOW
//   ...8  ATT MEDIUM "Spam Risk", VERIZON HIGH "Potential Spam"; TMOBILE LOW
//   ...9  VERIZON unavailable (null); ATT and TMOBILE LOW
//   ...0  unavailable on every carrier
//   else  LOW on every carrier
// A remediation request goes in_review SANDBOX_REMEDIATION_REVIEW_MS after it was filed and is decided
// SANDBOX_REMEDIATION_DECIDE_MS later (both times SANDBOX_TIME_SCALE): rejected when the number ends in 77, resolved
// otherwise. From the decision on, a resolved number is LOW on every carrier it was flagged on. The provider keeps its
// requests in sandbox_reputation_requests, as a real provider remembers its own re-evaluations.

export const SANDBOX_LOOKUP_MS = 50;
export const SANDBOX_REMEDIATION_REVIEW_MS = 2000;
export const SANDBOX_REMEDIATION_DECIDE_MS = 5000;
export const SANDBOX_REJECTED_SUFFIX = '77';

/** The sandbox's evidence for a number that no remediation has cleared. */
export function sandboxEvidence(phoneNumber: string): NetworkEvidence[] {
  const last = phoneNumber.slice(-1);
  const low = (carrier: NetworkEvidence['carrier']): NetworkEvidence => ({ carrier, riskLevel: 'LOW', displayedLabel: null });
  const none = (carrier: NetworkEvidence['carrier']): NetworkEvidence => ({ carrier, riskLevel: null, displayedLabel: null });
  switch (last) {
    case '7': return [low('ATT'), { carrier: 'TMOBILE', riskLevel: 'HIGH', displayedLabel: 'Scam Likely' }, low('VERIZON')];
    case '8': return [{ carrier: 'ATT', riskLevel: 'MEDIUM', displayedLabel: 'Spam Risk' }, low('TMOBILE'),
      { carrier: 'VERIZON', riskLevel: 'HIGH', displayedLabel: 'Potential Spam' }];
    case '9': return [low('ATT'), low('TMOBILE'), none('VERIZON')];
    case '0': return [none('ATT'), none('TMOBILE'), none('VERIZON')];
    default: return [low('ATT'), low('TMOBILE'), low('VERIZON')];
  }
}

export class SandboxReputationProvider implements ReputationProvider {
  readonly name = 'sandbox';
  readonly remediationPollMs: number;
  private readonly reviewMs: number;
  private readonly decideMs: number;

  constructor(private readonly db: Db, private readonly timeScale: number) {
    this.reviewMs = SANDBOX_REMEDIATION_REVIEW_MS * timeScale;
    this.decideMs = SANDBOX_REMEDIATION_DECIDE_MS * timeScale;
    this.remediationPollMs = Math.max(10, Math.round(1000 * timeScale));
  }

  async lookup(phoneNumber: string): Promise<NetworkEvidence[]> {
    await new Promise((r) => setTimeout(r, SANDBOX_LOOKUP_MS * this.timeScale));
    const evidence = sandboxEvidence(phoneNumber);
    if (!evidence.some((e) => e.riskLevel === 'MEDIUM' || e.riskLevel === 'HIGH')) return evidence;
    const cleared = await this.db.oneOrNone(
      `SELECT 1 FROM sandbox_reputation_requests
        WHERE phone_number = $1 AND submitted_at <= now() - make_interval(secs => $2)`,
      [phoneNumber, (this.reviewMs + this.decideMs) / 1000]);
    if (!cleared || phoneNumber.endsWith(SANDBOX_REJECTED_SUFFIX)) return evidence;
    return evidence.map((e) => (e.riskLevel === 'MEDIUM' || e.riskLevel === 'HIGH' ? { ...e, riskLevel: 'LOW', displayedLabel: null } : e));
  }

  async submitRemediation(r: { phoneNumber: string; kind: RemediationKind }): Promise<string> {
    const ref = randomUUID();
    await this.db.none('INSERT INTO sandbox_reputation_requests (provider_ref, phone_number, kind) VALUES ($1, $2, $3)',
      [ref, r.phoneNumber, r.kind]);
    return ref;
  }

  async remediationState(providerRef: string, phoneNumber: string): Promise<ProviderRemediationState> {
    const row = await this.db.oneOrNone<{ age_ms: number }>(
      `SELECT extract(epoch FROM now() - submitted_at) * 1000 AS age_ms FROM sandbox_reputation_requests WHERE provider_ref = $1`,
      [providerRef]);
    if (!row) return { status: 'rejected', reason: 'The provider has no such remediation request.' };
    const age = Number(row.age_ms);
    if (age < this.reviewMs) return { status: 'open', reason: null };
    if (age < this.reviewMs + this.decideMs) return { status: 'in_review', reason: null };
    return phoneNumber.endsWith(SANDBOX_REJECTED_SUFFIX)
      ? { status: 'rejected', reason: 'The carriers\' analytics kept the label after re-evaluation (sandbox: numbers ending in 77).' }
      : { status: 'resolved', reason: null };
  }
}
