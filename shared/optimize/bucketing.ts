// Sticky bucketing: a visitor's enrolment and variant are a pure function of (test id, visitor id), so the tag (which
// applies the variant before first paint) and the collector (which counts it) agree without a round trip, and the
// collector never takes the browser's word for it. The tag carries the same two functions (tag-source.ts).

/** FNV-1a (32 bit) of a string's UTF-16 code units, as a number in [0, 1). */
export function unitHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h / 4294967296;
}

export interface BucketVariant { id: string; weight: number }

/** The variant a visitor sees, or null when the visitor falls outside the test's traffic split (page unchanged, not
 *  counted). Enrolment and variant use independent hashes, so changing the split keeps enrolled visitors' variants. */
export function assignVariant<V extends BucketVariant>(testId: string, visitorId: string, trafficSplit: number, variants: V[]): V | null {
  if (unitHash(`${testId}.${visitorId}.split`) >= trafficSplit) return null;
  const total = variants.reduce((s, v) => s + v.weight, 0);
  let x = unitHash(`${testId}.${visitorId}`) * total;
  for (const v of variants) {
    if (x < v.weight) return v;
    x -= v.weight;
  }
  return variants[variants.length - 1] ?? null;
}

/** The visitor ids the tag makes (rd_sid): 8 to 64 URL-safe characters. */
export const VISITOR_ID = /^[A-Za-z0-9_-]{8,64}$/;
