// E.164 parsing for the rules that need it: validation, country, NANP area code. Deliberately small: it knows the
// North American Numbering Plan in detail (the sandbox's home) and other countries by calling code only.

export interface ParsedNumber {
  e164: string;
  /** Country calling code without '+', e.g. "1", "44". */
  callingCode: string;
  /** ISO 3166-1 alpha-2, or "ZZ" when the calling code is not in our table. */
  isoCountry: string;
  /** NANP only: the three-digit area code (NPA). */
  areaCode: string | null;
  /** NANP only: the exchange (NXX). */
  exchange: string | null;
}

// Calling codes to ISO country; longest prefix wins. +1 is NANP; Canada is told apart by area code below.
const CALLING_CODES: Record<string, string> = {
  '1': 'US', '7': 'RU', '20': 'EG', '27': 'ZA', '30': 'GR', '31': 'NL', '32': 'BE', '33': 'FR', '34': 'ES',
  '36': 'HU', '39': 'IT', '40': 'RO', '41': 'CH', '43': 'AT', '44': 'GB', '45': 'DK', '46': 'SE', '47': 'NO',
  '48': 'PL', '49': 'DE', '51': 'PE', '52': 'MX', '53': 'CU', '54': 'AR', '55': 'BR', '56': 'CL', '57': 'CO',
  '58': 'VE', '60': 'MY', '61': 'AU', '62': 'ID', '63': 'PH', '64': 'NZ', '65': 'SG', '66': 'TH', '81': 'JP',
  '82': 'KR', '84': 'VN', '86': 'CN', '90': 'TR', '91': 'IN', '92': 'PK', '93': 'AF', '94': 'LK', '95': 'MM',
  '98': 'IR', '212': 'MA', '213': 'DZ', '216': 'TN', '218': 'LY', '234': 'NG', '254': 'KE', '351': 'PT',
  '352': 'LU', '353': 'IE', '354': 'IS', '358': 'FI', '370': 'LT', '371': 'LV', '372': 'EE', '380': 'UA',
  '420': 'CZ', '421': 'SK', '852': 'HK', '886': 'TW', '971': 'AE', '972': 'IL', '966': 'SA',
};

const CANADIAN_AREA_CODES = new Set([
  '204', '226', '236', '249', '250', '263', '289', '306', '343', '354', '365', '367', '368', '382', '403', '416',
  '418', '428', '431', '437', '438', '450', '460', '468', '474', '506', '514', '519', '548', '579', '581', '584',
  '587', '604', '613', '639', '647', '672', '683', '705', '709', '742', '753', '778', '780', '782', '807', '819',
  '825', '867', '873', '879', '902', '905',
]);

const E164 = /^\+[1-9]\d{6,14}$/;

/** Returns null when the string is not a syntactically valid, dialable E.164 number. */
export function parseE164(input: string): ParsedNumber | null {
  if (typeof input !== 'string' || !E164.test(input)) return null;
  const digits = input.slice(1);
  if (digits.startsWith('1')) {
    // NANP: +1 NPA NXX XXXX, NPA and NXX start with 2-9.
    if (!/^1[2-9]\d{2}[2-9]\d{6}$/.test(digits)) return null;
    const areaCode = digits.slice(1, 4);
    return {
      e164: input, callingCode: '1', areaCode, exchange: digits.slice(4, 7),
      isoCountry: CANADIAN_AREA_CODES.has(areaCode) ? 'CA' : 'US',
    };
  }
  for (const len of [3, 2, 1]) {
    const cc = digits.slice(0, len);
    if (CALLING_CODES[cc]) return { e164: input, callingCode: cc, isoCountry: CALLING_CODES[cc], areaCode: null, exchange: null };
  }
  return { e164: input, callingCode: digits.slice(0, 3), isoCountry: 'ZZ', areaCode: null, exchange: null };
}

export const isE164 = (s: string) => parseE164(s) !== null;
