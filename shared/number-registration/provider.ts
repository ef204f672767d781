// Number registration providers: register a number, with the business that calls from it, at the call-analytics
// providers that label calls (the Free Caller Registry path that carriers' analytics engines read), learn whether
// it was registered or rejected, and withdraw it when the number is released. The sandbox provider is the only one
// so far (NUMBER_REGISTRATION_PROVIDER=sandbox, the default); a production adapter implements the same interface.
import type { NumberRegistrationSettings } from '../config.ts';

/** Why a provider rejected a number: a machine code, with the provider's words in `message`. */
export const REJECTION_CODES = ['business_unverified', 'number_ownership_unverified'] as const;
export type RejectionCode = (typeof REJECTION_CODES)[number];

/** What is registered with a number: the business calling from it (from the organization's APPROVED enterprise
 *  registration, or from the request) and why it calls. */
export interface RegistrationDetails {
  business_name: string;
  ein: string;
  call_purpose: string;
  /** The business's address on one line; null when the request gave none. */
  address: string | null;
  source: 'enterprise_registration' | 'request';
  enterprise_registration_id: string | null;
}

export type RegistrationVerdict =
  | { status: 'registered' }
  | { status: 'rejected'; code: RejectionCode; message: string }
  /** Submitted; the provider has not decided yet: the job asks again after `retryInMs`. */
  | { status: 'pending'; retryInMs: number };

export interface NumberRegistrationProvider {
  readonly name: string;
  /** Submits (or asks again about) the number's registration. Idempotent per number and details. */
  register(phoneNumber: string, details: RegistrationDetails): Promise<RegistrationVerdict>;
  /** Withdraws the number's registration (the number was released). Idempotent. */
  withdraw(phoneNumber: string): Promise<void>;
}

/** The sandbox registry answers this long after a submission (times SANDBOX_TIME_SCALE). */
export const SANDBOX_REGISTRATION_MS = 3000;

/** The sandbox's deterministic table, first match wins (docs/reference/number-registration.md):
 *    number ending 13            rejected business_unverified, unless the details come from the organization's
 *                                APPROVED enterprise registration (a vetted business)
 *    number ending 14            rejected number_ownership_unverified
 *    anything else               registered */
export const SANDBOX_TABLE: readonly { when: string; verdict: RegistrationVerdict }[] = [
  { when: 'the number ends in 13 and the details were given in the request (not an APPROVED enterprise registration)', verdict: { status: 'rejected', code: 'business_unverified', message: 'The registry could not match the business name and EIN to a registered business.' } },
  { when: 'the number ends in 14', verdict: { status: 'rejected', code: 'number_ownership_unverified', message: 'The registry could not confirm that the business holds this number.' } },
];

export function sandboxVerdict(phoneNumber: string, details: Pick<RegistrationDetails, 'source'>): RegistrationVerdict {
  if (phoneNumber.endsWith('13') && details.source !== 'enterprise_registration') return SANDBOX_TABLE[0].verdict;
  if (phoneNumber.endsWith('14')) return SANDBOX_TABLE[1].verdict;
  return { status: 'registered' };
}

export const sandboxNumberRegistrationProvider: NumberRegistrationProvider = {
  name: 'sandbox',
  async register(phoneNumber, details) { return sandboxVerdict(phoneNumber, details); },
  async withdraw() { /* the sandbox registry keeps nothing */ },
};

/** The configured provider. */
export function numberRegistrationProvider(settings: NumberRegistrationSettings): NumberRegistrationProvider {
  switch (settings.provider) {
    case 'sandbox': return sandboxNumberRegistrationProvider;
  }
}
