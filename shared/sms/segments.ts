// How many SMS segments a body costs. GSM 03.38: a body made only of the GSM-7 default alphabet (and its
// extension table, whose characters take two septets: escape + char) is sent as GSM-7, 160 septets in a single
// message or 153 per part when concatenated (the user data header takes 7). Anything else is UCS-2 (UTF-16):
// 70 code units single, 67 per part.
//
// A part never splits what the reader sees as one character: a grapheme cluster (an emoji with its skin tone,
// a flag's two regional indicators, ❤️ with its variation selector, a ZWJ family, a letter with its combining
// accents) or an escaped extension character moves whole to the next part when it does not fit. This is how
// Twilio's open-source calculator (sms-segments-calculator, our test oracle) counts, so the customer is charged
// what the carrier bills. Two deliberate differences: CR LF counts as two characters (as there), and a cluster
// longer than a whole part (only contrived text: a letter under dozens of combining marks) is split between
// its code points, since no part can hold it — the calculator would let it overflow one part, undercounting.

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

/** Grapheme clusters per Unicode's current rules (UAX #29, as built into Node's ICU). */
const graphemeSegmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });

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

/** Units of one character (code point): septets in GSM-7, UTF-16 code units (2 for a surrogate pair) in UCS-2. */
function codePointUnits(ch: string, encoding: Encoding): number {
  return encoding === 'GSM-7' ? (EXTENSION.has(ch) ? 2 : 1) : ch.length;
}

/** The sizes of the pieces a part boundary may not cut, in body order. */
function unsplittableSizes(body: string, encoding: Encoding): number[] {
  const sizes: number[] = [];
  for (const { segment: cluster } of graphemeSegmenter.segment(body)) {
    const codePoints = cluster === '\r\n' ? ['\r', '\n'] : [...cluster];
    const clusterUnits = codePoints.reduce((sum, ch) => sum + codePointUnits(ch, encoding), 0);
    if (cluster !== '\r\n' && clusterUnits <= PER_PART[encoding]) sizes.push(clusterUnits);
    else for (const ch of codePoints) sizes.push(codePointUnits(ch, encoding));
  }
  return sizes;
}

export function countSegments(body: string): SegmentCount {
  const encoding: Encoding = isGsm7(body) ? 'GSM-7' : 'UCS-2';
  const sizes = unsplittableSizes(body, encoding);
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total <= SINGLE[encoding]) return { encoding, units: total, segments: 1 };
  // Concatenated: fill each part up to its capacity; a piece that does not fit starts the next part.
  let segments = 1;
  let used = 0;
  for (const size of sizes) {
    if (used + size > PER_PART[encoding]) { segments++; used = 0; }
    used += size;
  }
  return { encoding, units: total, segments };
}
