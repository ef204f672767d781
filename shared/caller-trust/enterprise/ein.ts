// The Employer Identification Number: NN-NNNNNNN, whose first two digits are a prefix the IRS assigns to its
// campuses (and to online and SBA issuance). Prefixes never assigned are refused, as a carrier's vetting would.

export const EIN_PATTERN = /^\d{2}-\d{7}$/;

// IRS "How EINs are assigned and valid EIN prefixes": every two-digit value except these was assigned.
const NEVER_ASSIGNED = new Set(['00', '07', '08', '09', '17', '18', '19', '28', '29', '49', '69', '70', '78', '79', '89', '96', '97']);

/** The valid campus prefixes, in order (for the documentation and error messages). */
export const VALID_EIN_PREFIXES: readonly string[] = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'))
  .filter((p) => !NEVER_ASSIGNED.has(p));

/** Why the EIN is not acceptable, or null. */
export function einProblem(ein: string): string | null {
  if (!EIN_PATTERN.test(ein)) return 'must be NN-NNNNNNN (two digits, a hyphen, seven digits)';
  if (NEVER_ASSIGNED.has(ein.slice(0, 2))) return `prefix ${ein.slice(0, 2)} is not a valid IRS campus prefix`;
  return null;
}
