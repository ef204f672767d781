// CNAM registration providers: submit a number's display name to the caller-name databases and learn whether it
// was registered or rejected. The sandbox provider is the default; shared/cnam/telnyx.ts is the production
// adapter's shape for one carrier; shared/cnam/configured.ts picks one.

export type CnamResult =
  | { status: 'registered' }
  | { status: 'rejected'; reason: string }
  /** Submitted; the provider's answer comes later (the job asks again after `retryInMs`). */
  | { status: 'pending'; retryInMs: number };

export interface CnamProvider {
  readonly name: string;
  register(phoneNumber: string, displayName: string): Promise<CnamResult>;
}

/** Words the sandbox treats as impersonating a public authority (whole words, any case). */
export const SANDBOX_RESERVED_WORDS = ['POLICE', 'SHERIFF', 'FBI', 'IRS', 'EMERGENCY', 'GOVERNMENT', 'MEDICARE', '911'];

/** The sandbox's CNAM database: rejects a name containing a reserved word, or made only of digits and punctuation
 *  (it would read as a phone number); registers every other name. Deterministic, so tests can rely on it. */
export const sandboxCnamProvider: CnamProvider = {
  name: 'sandbox',
  async register(_phoneNumber, displayName) {
    const words = displayName.toUpperCase().split(/[^A-Z0-9]+/).filter(Boolean);
    const reserved = SANDBOX_RESERVED_WORDS.find((w) => words.includes(w));
    if (reserved) return { status: 'rejected', reason: `contains the reserved word "${reserved}" (names may not impersonate a public authority)` };
    if (!/[A-Za-z]/.test(displayName)) return { status: 'rejected', reason: 'has no letter: a caller name must not read as a number' };
    return { status: 'registered' };
  },
};
