// Production CNAM adapter for Telnyx: a number's caller-name listing is part of its voice settings
// (PATCH /v2/phone_numbers/{id}/voice with cnam_listing { cnam_listing_enabled, cnam_listing_details }). Telnyx
// looks the number up by its own id, so the adapter first finds it (GET /v2/phone_numbers?filter[phone_number]=).
// Telnyx validates the listing synchronously (422 with errors[].detail) and propagates it to the CNAM databases
// afterwards without a status to poll: "registered" here means Telnyx accepted the listing.
import type { CnamProvider, CnamResult } from './provider.ts';

interface TelnyxError { code?: string; title?: string; detail?: string }

export class TelnyxCnamProvider implements CnamProvider {
  readonly name = 'telnyx';

  constructor(private readonly apiKey: string, private readonly baseUrl = 'https://api.telnyx.com/v2', private readonly fetchImpl: typeof fetch = fetch) {}

  private async call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const res = await this.fetchImpl(`${this.baseUrl.replace(/\/$/, '')}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.apiKey}`, accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    let json: any = null;
    try { json = text ? JSON.parse(text) : null; } catch { /* not JSON: kept null */ }
    return { status: res.status, json };
  }

  async register(phoneNumber: string, displayName: string): Promise<CnamResult> {
    const found = await this.call('GET', `/phone_numbers?filter[phone_number]=${encodeURIComponent(phoneNumber)}&page[size]=1`);
    if (found.status !== 200) throw new Error(`telnyx: listing ${phoneNumber} answered ${found.status}`);
    const id: string | undefined = found.json?.data?.[0]?.id;
    if (!id) return { status: 'rejected', reason: `${phoneNumber} is not a number of the Telnyx account` };
    const r = await this.call('PATCH', `/phone_numbers/${encodeURIComponent(id)}/voice`,
      { cnam_listing: { cnam_listing_enabled: true, cnam_listing_details: displayName } });
    if (r.status === 200) {
      const listing = r.json?.data?.cnam_listing;
      if (listing?.cnam_listing_enabled === true && listing?.cnam_listing_details === displayName) return { status: 'registered' };
      throw new Error('telnyx: the voice settings came back without the CNAM listing');
    }
    // A refusal of the request itself is the provider's verdict on the name; anything else is retried.
    if (r.status === 400 || r.status === 422) {
      const errors: TelnyxError[] = r.json?.errors ?? [];
      return { status: 'rejected', reason: errors.map((e) => e.detail ?? e.title ?? e.code).filter(Boolean).join('; ') || `refused (${r.status})` };
    }
    throw new Error(`telnyx: CNAM listing answered ${r.status}`);
  }
}
