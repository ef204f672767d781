// Destination rules: which numbers a call may dial. Applied to every number the platform rings (to_number, and a
// bridge's connect_number). This is the one place that decides a destination's class. The organization's
// allow_countries opens ordinary numbers of international countries; nothing opens emergency, short-code,
// premium or special-rate numbers, in any country.
//
// Order of the rules:
//  1. short codes: a bare short code ("911", "112", "15") or a calling code followed by one ("+1911", "+44999",
//     "+3315", "+44118118"): 403, reason emergency when it is an emergency number (shared/phone/emergency.ts),
//     special_service otherwise. After a calling code, a number libphonenumber finds invalid with 6 digits or
//     fewer is a short code (a longer invalid one is a mistyped number: destination_invalid).
//  2. E.164 syntax: destination_invalid.
//  0. The sandbox's own inventory (+1 <sandbox area code> 555 xxxx) is always dialable, except 555-1212
//     (directory assistance): it is the sandbox's network, whatever libphonenumber thinks of 555 lines.
//  3. NANP rules libphonenumber does not express: N11 as area code or exchange (911 emergency, the others
//     special services), 988 crisis line, 555-1212 directory assistance, the legacy 976 premium exchange.
//  4. libphonenumber (max metadata) says invalid (no assigned range): destination_invalid. This is what answers
//     closed or unassigned ranges such as DE 0190 (closed in 2006), BE 0900 with 9 digits, NANP 880-882.
//  5. The number's type, whatever the allowlist:
//     - PREMIUM_RATE, and every non-geographic "international network" code (+8xx satellite, UIFN, +979
//       premium, ...): premium. These are what toll fraud (IRSF) pumps.
//     - SHARED_COST, UAN, PERSONAL_NUMBER, PAGER, VOICEMAIL, and a valid number of no known type: special_rate.
//       Shared cost and UAN ranges are billed above a normal call in many countries (GB 084/087 style, AU 1300);
//       personal numbering (GB 070, NANP 5XX) forwards anywhere at a rate the owner sets, a classic fraud vector;
//       pagers and voicemail access numbers are not people (voicemail access is how PBX hacks dial out).
//     - VOIP inside the NANP: the only NANP range so typed is Canada's 600 non-geographic service code (carrier-
//       priced, satellite and data services). VOIP elsewhere (e.g. NL 085, GB 056) is billed like a fixed line
//       and stays dialable once its country is allowed.
//     - FIXED_LINE, MOBILE, FIXED_LINE_OR_MOBILE, TOLL_FREE: dialable.
//  6. Country: the number's real region (libphonenumber), so +7 7xx is KZ and not RU, +1 876 is JM and not US.
//     US, CA and the US territories are domestic; any other region needs the organization's allow_countries.
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { isSandboxInventoryNumber } from '../numbers/inventory.ts';
import { isEmergencyNumber, isEmergencyShortCode } from '../phone/emergency.ts';
import { parseE164, type ParsedNumber } from '../phone/e164.ts';

export type BlockReason = 'emergency' | 'special_service' | 'premium' | 'special_rate' | 'international';

export type Verdict =
  | { ok: true; country: string }
  | { ok: false; code: 'destination_invalid' }
  | { ok: false; code: 'destination_blocked'; reason: BlockReason; country: string };

/** Countries called without an allowlist entry: the NANP mainland and the US territories. */
export const DOMESTIC_COUNTRIES = ['US', 'CA', 'PR', 'VI', 'GU', 'MP', 'AS'];

const DIALABLE_TYPES = new Set(['FIXED_LINE', 'MOBILE', 'FIXED_LINE_OR_MOBILE', 'TOLL_FREE']);

const block = (reason: BlockReason, country: string): Verdict => ({ ok: false, code: 'destination_blocked', reason, country });

/** The verdict on a short code (bare, or after a calling code), or null when `input` is not one. */
export function shortCodeVerdict(input: string | ParsedNumber): Verdict | null {
  if (typeof input === 'string') {
    if (/^\d{2,6}$/.test(input)) return block(isEmergencyShortCode(input) ? 'emergency' : 'special_service', 'ZZ');
    // A calling code has at most 3 digits and a short code at most 6: longer numbers skip the parse.
    if (!/^\+[1-9]\d{1,8}$/.test(input)) return null;
    // Too short for E.164 ("+44999", "+1911"): only this rule looks at it, so it is parsed here.
    const parsed = parseE164(input);
    if (parsed) return shortCodeVerdict(parsed);
    const lib = parsePhoneNumberFromString(input);
    if (!lib) return null; // unknown calling code: destination_invalid
    return shortCodeOf(lib.countryCallingCode, lib.nationalNumber, lib.isValid(), lib.country ?? 'ZZ');
  }
  if (input.e164.length > 10 || input.callingCode === '') return null;
  return shortCodeOf(input.callingCode, input.nationalNumber, input.valid, input.isoCountry);
}

function shortCodeOf(callingCode: string, national: string, valid: boolean, country: string): Verdict | null {
  if (isEmergencyNumber(callingCode, national) && !valid) return block('emergency', country);
  if (!valid && national.length <= 6) return block('special_service', country);
  return null;
}

/** The destination rules' verdict. Give the parsed number where it is at hand (the dial path parses each number
 *  once, shared/calls/place.ts); a string is checked for short codes and parsed here. */
export function classifyDestination(number: string | Readonly<ParsedNumber>, allowCountries: readonly string[] = []): Verdict {
  const input = typeof number === 'string' ? number : number.e164;
  // The sandbox's inventory first: it is most of what is dialed here, and a regex is cheaper than a parse.
  if (isSandboxInventoryNumber(input)) return input.endsWith('5551212') ? block('special_service', 'US') : { ok: true, country: 'US' };
  const short = shortCodeVerdict(number);
  if (short) return short;
  const parsed = typeof number === 'string' ? parseE164(number) : number;
  if (!parsed) return { ok: false, code: 'destination_invalid' };
  if (parsed.callingCode === '1') {
    const npa = parsed.areaCode!;
    const nxx = parsed.exchange!;
    const country = parsed.isoCountry;
    if (npa === '911' || nxx === '911' || npa === '988') return block('emergency', country);
    if (npa.endsWith('11') || nxx.endsWith('11') || input.endsWith('5551212')) return block('special_service', country);
    if (nxx === '976') return block('premium', country);
  }
  if (!parsed.valid) return { ok: false, code: 'destination_invalid' };
  // Valid but in no region: a non-geographic calling code (+800, +808, +870, +881, +882, +883, +979).
  if (parsed.isoCountry === 'ZZ') return block('premium', 'ZZ');
  const type = parsed.type;
  if (type === 'PREMIUM_RATE') return block('premium', parsed.isoCountry);
  const dialable = type === 'VOIP' ? parsed.callingCode !== '1' : DIALABLE_TYPES.has(type as string);
  if (!dialable) return block('special_rate', parsed.isoCountry);
  const country = parsed.isoCountry;
  if (DOMESTIC_COUNTRIES.includes(country) || allowCountries.includes(country)) return { ok: true, country };
  return block('international', country);
}

/** Demo keys may only ring the sandbox's fictional numbers: NANP numbers in the 555 exchange (except
 *  555-1212, directory assistance), which is where every sandbox test number lives. */
export function isDemoDestination(number: string | Readonly<ParsedNumber>): boolean {
  const p = typeof number === 'string' ? parseE164(number) : number;
  return !!p && p.callingCode === '1' && p.exchange === '555' && !p.e164.endsWith('5551212');
}

export const BLOCK_MESSAGES: Record<BlockReason, string> = {
  emergency: 'is an emergency number; the platform never dials emergency services',
  special_service: 'is a short code or special-service number (N11, directory, carrier service codes)',
  premium: 'is a premium-rate number (or an international network billed like one)',
  special_rate: 'is a special-rate number (shared cost, personal numbering, pager, voicemail access or a non-geographic service)',
  international: 'is international; ask an administrator to allow its country for your organization',
};
