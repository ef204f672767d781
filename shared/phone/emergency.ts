// Emergency numbers, kept by hand on purpose: libphonenumber-js ships no short-number metadata (Google's
// ShortNumberInfo is not part of it), and these rarely change. The table only chooses the *reason* of a refusal:
// every short code is refused anyway (see shared/calls/destinations.ts), listed here or not.

/** Dialed as emergency numbers on every mobile network (GSM/3GPP), whatever the country. */
const EVERYWHERE = ['112', '911', '999', '000', '08', '110', '118', '119'];

/** Emergency and crisis numbers per calling code (national numbers). */
const BY_CALLING_CODE: Record<string, string[]> = {
  '1': ['911', '988', '933'], // NANP: 911, the 988 crisis line, 933 (911 address check)
  '7': ['101', '102', '103', '104'], // RU, KZ
  '27': ['10111', '10177'], // ZA
  '31': ['112'], // NL
  '32': ['100', '101', '1733'], // BE
  '33': ['15', '17', '18', '114', '115', '119', '191', '196', '197'], // FR (SAMU, police, pompiers, ...)
  '34': ['061', '062', '080', '085', '091', '092'], // ES
  '39': ['113', '115', '118', '1522'], // IT
  '41': ['117', '118', '143', '144', '147', '1414'], // CH
  '43': ['122', '128', '133', '140', '141', '144'], // AT
  '44': ['999', '111', '101', '105'], // GB (999; NHS 111, police 101, power cut 105)
  '49': ['110', '116117'], // DE
  '52': ['065', '066', '089'], // MX
  '55': ['190', '192', '193', '199'], // BR
  '61': ['000', '106'], // AU
  '64': ['111'], // NZ
  '81': ['110', '118', '119'], // JP
  '82': ['112', '119', '182'], // KR
  '86': ['110', '119', '120', '122'], // CN
  '91': ['100', '101', '102', '108'], // IN
};

/** True when `national` (digits after the calling code) is an emergency number under `callingCode`. */
export function isEmergencyNumber(callingCode: string, national: string): boolean {
  if (EVERYWHERE.includes(national)) return true;
  if (BY_CALLING_CODE[callingCode]?.includes(national)) return true;
  // EU harmonised services of social value (116 000 missing children, 116 111 child helplines, ...).
  return /^116\d{3}$/.test(national);
}

/** True when a bare short code (dialed without a calling code) is an emergency number somewhere. */
export function isEmergencyShortCode(digits: string): boolean {
  if (isEmergencyNumber('', digits)) return true;
  return Object.values(BY_CALLING_CODE).some((codes) => codes.includes(digits));
}
