// Destination rules: which numbers a call may dial. Applied to every number the platform rings (to_number, and a
// bridge's connect_number). The organization's allow_countries opens international countries; nothing opens
// emergency, special-service or premium numbers.
import { parseE164, type ParsedNumber } from '../phone/e164.ts';

export type BlockReason = 'emergency' | 'special_service' | 'premium' | 'international';

export type Verdict =
  | { ok: true; parsed: ParsedNumber; country: string }
  | { ok: false; code: 'destination_invalid' }
  | { ok: false; code: 'destination_blocked'; reason: BlockReason; country: string };

/** Countries called without an allowlist entry: the NANP mainland and the US territories. */
export const DOMESTIC_COUNTRIES = ['US', 'CA', 'PR', 'VI', 'GU', 'MP', 'AS'];

/** NANP area codes of other countries and of the US territories (+1 is not only the US and Canada). */
const NANP_COUNTRIES: Record<string, string> = {
  '242': 'BS', '246': 'BB', '264': 'AI', '268': 'AG', '284': 'VG', '340': 'VI', '345': 'KY', '441': 'BM',
  '473': 'GD', '649': 'TC', '658': 'JM', '876': 'JM', '664': 'MS', '670': 'MP', '671': 'GU', '684': 'AS',
  '721': 'SX', '758': 'LC', '767': 'DM', '784': 'VC', '787': 'PR', '939': 'PR', '809': 'DO', '829': 'DO',
  '849': 'DO', '868': 'TT', '869': 'KN',
};

/** NANP codes that reach a service rather than a subscriber. */
const NANP_SERVICE_NPAS = new Set(['456', '500', '700', '710', '950', '958', '959']);
const NANP_PREMIUM_NPAS = new Set(['900', '976']);
const NANP_PREMIUM_EXCHANGES = new Set(['976']);

/** Premium-rate ranges outside NANP, as calling code + leading digits of the national number. */
const INTERNATIONAL_PREMIUM_PREFIXES = [
  '449', '4487', '4470', // United Kingdom: 09 premium, 087 revenue share, 070 personal numbering
  '49900', '49137', // Germany: 0900, 0137
  '3389', '3381', '3382', // France: 089, 081, 082
  '3989', // Italy: 899
  '34803', '34806', '34807', '34905', // Spain
  '61190', // Australia: 1900
];

/** Emergency and short codes that must never be dialed, as a full NANP number's area code or as a national number. */
const EMERGENCY_CODES = new Set(['911', '112', '999', '000', '110', '119', '100', '101', '102', '15', '17', '18', '933', '988']);

export function classifyDestination(input: string, allowCountries: readonly string[] = []): Verdict {
  const parsed = parseE164(input);
  if (!parsed) return { ok: false, code: 'destination_invalid' };
  const digits = input.slice(1);
  if (parsed.callingCode === '1') {
    const npa = parsed.areaCode!;
    const nxx = parsed.exchange!;
    const country = NANP_COUNTRIES[npa] ?? parsed.isoCountry;
    if (npa === '911' || npa === '988' || nxx === '911') return { ok: false, code: 'destination_blocked', reason: 'emergency', country };
    if (npa.endsWith('11') || nxx.endsWith('11') || NANP_SERVICE_NPAS.has(npa) || digits.endsWith('5551212')) {
      return { ok: false, code: 'destination_blocked', reason: 'special_service', country };
    }
    if (NANP_PREMIUM_NPAS.has(npa) || NANP_PREMIUM_EXCHANGES.has(nxx)) return { ok: false, code: 'destination_blocked', reason: 'premium', country };
    return openFor(parsed, country, allowCountries);
  }
  if (parsed.isoCountry === 'ZZ') {
    // Global networks (+87x satellite, +88x international networks) bill like premium numbers.
    if (/^8[78]/.test(digits)) return { ok: false, code: 'destination_blocked', reason: 'premium', country: 'ZZ' };
    return { ok: false, code: 'destination_invalid' };
  }
  const national = digits.slice(parsed.callingCode.length);
  if (EMERGENCY_CODES.has(national) || national.length < 6) {
    return { ok: false, code: 'destination_blocked', reason: EMERGENCY_CODES.has(national) ? 'emergency' : 'special_service', country: parsed.isoCountry };
  }
  if (INTERNATIONAL_PREMIUM_PREFIXES.some((p) => digits.startsWith(p))) {
    return { ok: false, code: 'destination_blocked', reason: 'premium', country: parsed.isoCountry };
  }
  return openFor(parsed, parsed.isoCountry, allowCountries);
}

function openFor(parsed: ParsedNumber, country: string, allowCountries: readonly string[]): Verdict {
  if (DOMESTIC_COUNTRIES.includes(country) || allowCountries.includes(country)) return { ok: true, parsed, country };
  return { ok: false, code: 'destination_blocked', reason: 'international', country };
}

/** Demo keys may only ring the sandbox's fictional numbers: NANP numbers in the 555 exchange (except
 *  555-1212, directory assistance), which is where every sandbox test number lives. */
export function isDemoDestination(e164: string): boolean {
  const p = parseE164(e164);
  return !!p && p.callingCode === '1' && p.exchange === '555' && !e164.endsWith('5551212');
}

export const BLOCK_MESSAGES: Record<BlockReason, string> = {
  emergency: 'is an emergency number; the platform never dials emergency services',
  special_service: 'is a special-service number (N11, directory, carrier service codes)',
  premium: 'is a premium-rate number',
  international: 'is international; ask an administrator to allow its country for your organization',
};
