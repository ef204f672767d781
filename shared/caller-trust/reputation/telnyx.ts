import type { TelnyxReputationSettings } from '../../config.ts';
import { MOBILE_NETWORKS, RISK_LEVELS, type RiskLevel } from '../../mobile-networks.ts';
import { ProviderError, type NetworkEvidence, type ProviderRemediationState, type RemediationKind,
  type ReputationProvider } from './provider.ts';

// The Telnyx Number Reputation adapter (REPUTATION_PROVIDER=telnyx). Telnyx's reputation feed is Hiya's, AT&T's
// spam-analytics engine, and answers one overall spam_risk per number; it is mapped to ATT, and TMOBILE and VERIZON
// are reported unavailable (null), never guessed. Endpoints (https://developers.telnyx.com, Number Reputation):
//   GET  {base}/enterprises/{enterprise_id}/reputation/numbers/{+E.164 url-encoded}?fresh=true
//        -> { data: { phone_number, reputation_data: null | { spam_risk: low|medium|high|null, spam_category,
//             maturity_score, connection_score, engagement_score, sentiment_score, last_refreshed_at } } }
//   POST {base}/enterprises/{enterprise_id}/reputation/remediation { phone_numbers: [..], call_purpose }
//        -> 202 { data: { id, status, ... } }
//   GET  {base}/enterprises/{enterprise_id}/reputation/remediation/{id}
//        -> { data: { id, status: pending|in_progress|completed|failed|cancelled,
//             results?: { remediated: [..], refused: [..], requires_review: [..], ineligible: [..], not_flagged: [..] } } }
// Errors are { errors: [{ code, title, detail }] }. Each request has a timeout; timeouts, network errors, 429 and 5xx
// are retried with exponential back-off (Retry-After honoured up to a cap), anything else fails at once.

/** Config.reputation.telnyx plus the retry policy. */
export interface TelnyxSettings extends TelnyxReputationSettings {
  /** Attempts per call (1 = no retry). */
  attempts: number;
  /** First back-off; doubled per retry. */
  backoffMs: number;
}

const MAX_RETRY_AFTER_MS = 10_000;
const DEFAULT_LABEL = 'Spam Risk';

interface TelnyxReputationData { spam_risk?: string | null; spam_category?: string | null }
interface TelnyxNumber { data?: { phone_number?: string; reputation_data?: TelnyxReputationData | null } }
interface TelnyxRemediation {
  data?: { id?: string; status?: string; results?: Partial<Record<'remediated' | 'refused' | 'requires_review' | 'ineligible' | 'not_flagged', string[]>> | null };
}

export const telnyxSettings = (s: TelnyxReputationSettings): TelnyxSettings => ({ ...s, attempts: 3, backoffMs: 500 });

/** Maps Telnyx's answer to per-carrier evidence (exported for the unit tests of recorded responses). */
export function telnyxEvidence(body: TelnyxNumber): NetworkEvidence[] {
  const data = body.data?.reputation_data ?? null;
  const risk = typeof data?.spam_risk === 'string' ? data.spam_risk.toUpperCase() : null;
  const level = (RISK_LEVELS as readonly string[]).includes(risk ?? '') ? risk as RiskLevel : null;
  const flagged = level === 'MEDIUM' || level === 'HIGH';
  return MOBILE_NETWORKS.map((carrier) => carrier === 'ATT'
    ? { carrier, riskLevel: level, displayedLabel: flagged ? (data?.spam_category || DEFAULT_LABEL) : null }
    : { carrier, riskLevel: null, displayedLabel: null });
}

/** Maps a Telnyx remediation request to our case status for one number. */
export function telnyxRemediationState(body: TelnyxRemediation, phoneNumber: string): ProviderRemediationState {
  const d = body.data ?? {};
  switch (d.status) {
    case 'pending': return { status: 'open', reason: null };
    case 'in_progress': return { status: 'in_review', reason: null };
    case 'completed': {
      const r = d.results ?? {};
      if (r.remediated?.includes(phoneNumber)) return { status: 'resolved', reason: null };
      const bucket = (['refused', 'requires_review', 'ineligible', 'not_flagged'] as const).find((b) => r[b]?.includes(phoneNumber));
      return { status: 'rejected', reason: bucket ? `provider outcome: ${bucket}` : 'provider outcome: number not in the results' };
    }
    case 'failed': case 'cancelled': return { status: 'rejected', reason: `provider request ${d.status}` };
    default: throw new ProviderError(`unknown remediation status "${d.status}"`, false);
  }
}

export class TelnyxReputationProvider implements ReputationProvider {
  readonly name = 'telnyx';
  readonly remediationPollMs = 60_000;

  constructor(private readonly s: TelnyxSettings, private readonly fetchImpl: typeof fetch = fetch) {}

  private enterprisePath(rest: string) {
    return `${this.s.baseUrl}/enterprises/${encodeURIComponent(this.s.enterpriseId)}/reputation/${rest}`;
  }

  async lookup(phoneNumber: string): Promise<NetworkEvidence[]> {
    return telnyxEvidence(await this.call<TelnyxNumber>('GET', this.enterprisePath(`numbers/${encodeURIComponent(phoneNumber)}?fresh=true`)));
  }

  async submitRemediation(r: { phoneNumber: string; kind: RemediationKind; callPurpose: string }): Promise<string> {
    const body = await this.call<TelnyxRemediation>('POST', this.enterprisePath('remediation'),
      { phone_numbers: [r.phoneNumber], call_purpose: r.callPurpose });
    if (!body.data?.id) throw new ProviderError('remediation accepted without an id', false);
    return body.data.id;
  }

  async remediationState(providerRef: string, phoneNumber: string): Promise<ProviderRemediationState> {
    return telnyxRemediationState(await this.call<TelnyxRemediation>('GET', this.enterprisePath(`remediation/${encodeURIComponent(providerRef)}`)), phoneNumber);
  }

  /** One API call with timeout and retries; a POST is retried only when the request surely did not arrive
   *  (no response at all is ambiguous for a POST, so only 429 and 503 are retried for it). */
  private async call<T>(method: 'GET' | 'POST', url: string, body?: unknown): Promise<T> {
    let lastError: ProviderError | null = null;
    for (let attempt = 1; attempt <= this.s.attempts; attempt++) {
      let waitMs = this.s.backoffMs * 2 ** (attempt - 1);
      try {
        const res = await this.fetchImpl(url, {
          method,
          headers: { authorization: `Bearer ${this.s.apiKey}`, accept: 'application/json',
            ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.s.timeoutMs),
        });
        const text = await res.text();
        if (res.ok) {
          try {
            return JSON.parse(text) as T;
          } catch {
            throw new ProviderError(`Telnyx answered ${res.status} with a body that is not JSON`, false, res.status);
          }
        }
        const retryable = res.status === 429 || res.status >= 500;
        lastError = new ProviderError(`Telnyx answered ${res.status}: ${errorDetail(text)}`,
          retryable && (method === 'GET' || res.status === 429 || res.status === 503), res.status);
        const retryAfter = Number(res.headers.get('retry-after'));
        if (retryAfter > 0) waitMs = Math.min(retryAfter * 1000, MAX_RETRY_AFTER_MS);
      } catch (err) {
        if (err instanceof ProviderError) throw err;
        const timedOut = (err as Error).name === 'TimeoutError';
        lastError = new ProviderError(timedOut ? `Telnyx did not answer within ${this.s.timeoutMs} ms` : `Telnyx unreachable: ${(err as Error).message}`,
          method === 'GET');
      }
      if (!lastError.retryable || attempt === this.s.attempts) break;
      await new Promise((r) => setTimeout(r, waitMs));
    }
    throw lastError!;
  }
}

function errorDetail(text: string): string {
  try {
    const e = (JSON.parse(text) as { errors?: { code?: string; title?: string; detail?: string }[] }).errors?.[0];
    if (e) return [e.code, e.title, e.detail].filter(Boolean).join(' ');
  } catch { /* not JSON */ }
  return text.slice(0, 200) || '(empty body)';
}
