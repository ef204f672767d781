// E.164 parsing for the rules that need it: syntax, the number's real region and its type. Countries, number
// ranges and types come from libphonenumber-js with its `max` metadata (the full per-country range tables of
// Google's libphonenumber: PREMIUM_RATE, SHARED_COST, TOLL_FREE, ...), so no range table is kept here by hand.
import { parsePhoneNumberFromString, type NumberType } from 'libphonenumber-js/max';

export interface ParsedNumber {
  e164: string;
  /** Country calling code without '+', e.g. "1", "44". */
  callingCode: string;
  /** The digits after the calling code. */
  nationalNumber: string;
  /** ISO 3166-1 alpha-2 region the number belongs to (+7 7xx is KZ, +1 876 is JM); "ZZ" when libphonenumber
   *  places it in no region (an invalid number, or a non-geographic code such as +881 satellite). */
  isoCountry: string;
  /** libphonenumber's verdict: the number lies in an assigned range of its region. */
  valid: boolean;
  /** libphonenumber's type of a valid number (undefined for an invalid one). */
  type: NumberType | undefined;
  /** NANP only: the three-digit area code (NPA). */
  areaCode: string | null;
  /** NANP only: the exchange (NXX). */
  exchange: string | null;
}

const E164 = /^\+[1-9]\d{6,14}$/;

// A parse with the max metadata costs ~0.1 ms (the type is found by trying every type's pattern); numbers are
// dialed again and again, so answers are remembered (bounded; cleared when full).
const memo = new Map<string, Readonly<ParsedNumber> | null>();
const MEMO_SIZE = 20_000;

/** Returns null when the string is not a syntactically valid E.164 number (NANP numbers: +1 NPA NXX XXXX with
 *  NPA and NXX starting with 2-9). A syntactically fine number that libphonenumber does not know is returned
 *  with `valid: false`. */
export function parseE164(input: string): Readonly<ParsedNumber> | null {
  if (typeof input !== 'string' || !E164.test(input)) return null;
  let parsed = memo.get(input);
  if (parsed === undefined) {
    parsed = parse(input);
    if (memo.size >= MEMO_SIZE) memo.clear();
    memo.set(input, parsed);
  }
  return parsed;
}

function parse(input: string): ParsedNumber | null {
  const nanp = input.startsWith('+1');
  if (nanp && !/^\+1[2-9]\d{2}[2-9]\d{6}$/.test(input)) return null;
  const lib = parsePhoneNumberFromString(input);
  if (!lib) {
    // Unknown calling code (e.g. +999): keep the syntax verdict, nothing more is known.
    return { e164: input, callingCode: '', nationalNumber: input.slice(1), isoCountry: 'ZZ', valid: false, type: undefined, areaCode: null, exchange: null };
  }
  const valid = lib.isValid();
  return {
    e164: input,
    callingCode: lib.countryCallingCode,
    nationalNumber: lib.nationalNumber,
    isoCountry: (valid && lib.country) || 'ZZ',
    valid,
    type: valid ? lib.getType() : undefined,
    areaCode: nanp ? input.slice(2, 5) : null,
    exchange: nanp ? input.slice(5, 8) : null,
  };
}

/** Syntax only (no range look-up): what parseE164 accepts, cheaply. */
export const isE164 = (s: string) =>
  typeof s === 'string' && E164.test(s) && (!s.startsWith('+1') || /^\+1[2-9]\d{2}[2-9]\d{6}$/.test(s));
