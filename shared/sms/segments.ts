// How many SMS segments a body costs. GSM 03.38: a body made only of the GSM-7 default alphabet (and its
// extension table, whose characters take two septets: escape + char) is sent as GSM-7, 160 septets in a single
// message or 153 per part when concatenated (the user data header takes 7). Anything else is UCS-2 (UTF-16):
// 70 code units single, 67 per part; a surrogate pair (emoji, ...) is never split across parts, nor an escaped
// extension character.

export type Encoding = 'GSM-7' | 'UCS-2';

/** The longest body the platform sends: 10 segments (1,530 GSM-7 characters, or 670 UCS-2 code units). */
export const MAX_SEGMENTS = 10;

const GSM7_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM7_EXTENSION = '\f^{}\\[~]|€';

const BASIC = new Set(GSM7_BASIC);
const EXTENSION = new Set(GSM7_EXTENSION);

export const SINGLE = { 'GSM-7': 160, 'UCS-2': 70 } as const;
export const PER_PART = { 'GSM-7': 153, 'UCS-2': 67 } as const;

export interface SegmentCount {
  encoding: Encoding;
  /** Septets (GSM-7) or UTF-16 code units (UCS-2). */
  units: number;
  segments: number;
}

export function isGsm7(body: string): boolean {
  for (const ch of body) if (!BASIC.has(ch) && !EXTENSION.has(ch)) return false;
  return true;
}

/** The units each character of the body takes, in order: GSM-7 septets, or UTF-16 code units (2 for a pair). */
function charUnits(body: string, encoding: Encoding): number[] {
  const out: number[] = [];
  for (const ch of body) out.push(encoding === 'GSM-7' ? (EXTENSION.has(ch) ? 2 : 1) : ch.length);
  return out;
}

export function countSegments(body: string): SegmentCount {
  const encoding: Encoding = isGsm7(body) ? 'GSM-7' : 'UCS-2';
  const units = charUnits(body, encoding);
  const total = units.reduce((a, b) => a + b, 0);
  if (total <= SINGLE[encoding]) return { encoding, units: total, segments: 1 };
  // Concatenated: fill each part up to its capacity without splitting a character's units.
  let segments = 1;
  let used = 0;
  for (const u of units) {
    if (used + u > PER_PART[encoding]) { segments++; used = 0; }
    used += u;
  }
  return { encoding, units: total, segments };
}
