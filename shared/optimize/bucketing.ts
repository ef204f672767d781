// Sticky bucketing: a visitor's enrolment and variant are a pure function of (test id, visitor id, hash version), so
// the tag (which applies the variant before first paint) and the collector (which counts it) agree without a round
// trip, and the collector never takes the browser's word for it. The tag carries the same functions (tag-source.ts).
//
// Hash versions (a test keeps the version it was created with, so no enrolled visitor ever changes variant):
//   1  FNV-1a (32 bit). Its high bits barely move when only the last characters change, so sequential visitor ids
//      (user_12345, v-000001, ...) split lopsidedly. Tests created before migration 020 keep it.
//   2  FNV-1a followed by MurmurHash3's 32-bit finalizer (fmix32): every input bit reaches every output bit.
export type HashVersion = 1 | 2;
export const HASH_VERSIONS: readonly HashVersion[] = [1, 2];
/** The version new tests get. */
export const CURRENT_HASH_VERSION: HashVersion = 2;

/** The hash of a string's UTF-16 code units under `version`, as a number in [0, 1). */
export function unitHash(s: string, version: HashVersion): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  if (version >= 2) {
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    h >>>= 0;
  }
  return h / 4294967296;
}

export interface BucketVariant { id: string; weight: number }

/** The variant a visitor sees, or null when the visitor falls outside the test's traffic split (page unchanged, not
 *  counted). Enrolment and variant use independent hashes, so changing the split keeps enrolled visitors' variants. */
export function assignVariant<V extends BucketVariant>(testId: string, visitorId: string, trafficSplit: number, variants: V[],
  hashVersion: HashVersion): V | null {
  if (unitHash(`${testId}.${visitorId}.split`, hashVersion) >= trafficSplit) return null;
  const total = variants.reduce((s, v) => s + v.weight, 0);
  let x = unitHash(`${testId}.${visitorId}`, hashVersion) * total;
  for (const v of variants) {
    if (x < v.weight) return v;
    x -= v.weight;
  }
  return variants[variants.length - 1] ?? null;
}

/** The visitor ids the tag makes (rd_sid): 8 to 64 URL-safe characters. */
export const VISITOR_ID = /^[A-Za-z0-9_-]{8,64}$/;
