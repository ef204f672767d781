// Optimize results: aggregates per-variant daily counts, compares every variant with the control and applies the
// decision rules of docs/reference/optimize-statistics.md. Pure (no I/O); the math lives in ./stats.ts.
import {
  chiSquareGoodnessOfFit, holm, probBetaGreater, sampleSizePerArm, twoProportionZTest,
} from './stats.ts';

export interface VariantInput { id: string; name: string; is_control: boolean; weight: number }
export interface DailyCount {
  variant_id: string;
  day: string; // YYYY-MM-DD UTC
  impressions: number;
  conversions: number;
  revenue_cents: number;
}
export interface VariantResult {
  variant_id: string;
  name: string;
  is_control: boolean;
  impressions: number;
  conversions: number;
  conversion_rate: number;
  lift: number | null;
  p_value: number | null;
  probability_to_beat_control: number | null;
  revenue_cents: number;
  /** Holm-adjusted p-value across the non-control variants (null for the control or without a test). */
  adjusted_p_value?: number | null;
  /** The variant differs from the control at the family-wise level alpha (Holm), in either direction. */
  significant?: boolean;
}
export type DecisionReason = 'winner' | 'collecting' | 'no_difference' | 'inconclusive';
export interface OptimizeResults {
  variants: VariantResult[];
  decision: {
    reason: DecisionReason;
    winner_variant_id: string | null;
    /** One sentence saying which rule decided and why. */
    explanation?: string;
    /** Impressions every variant needs before "no_difference" can be declared (null when not computable). */
    required_sample_per_variant?: number | null;
  };
  srm: { p_value: number | null; mismatch: boolean; warning: string | null; chi_square?: number | null };
  daily: DailyCount[];
}
export interface ResultsOptions {
  /** Impressions every variant needs before any decision other than "collecting" (default 100). */
  minSamplePerVariant?: number;
  /** Family-wise significance level across the non-control variants (default 0.05). */
  alpha?: number;
  /** Relative lift the test must be able to detect before "no_difference" (default 0.10 = 10 %). */
  minDetectableLift?: number;
  /** Power for that lift (default 0.8). */
  power?: number;
  /** Impressions per variant after which a test without significance is "no_difference" anyway (default 1,000,000). */
  maxSamplePerVariant?: number;
  /** Level (Holm-adjusted) at which a winner is called before the planned sample is reached (default 0.0001). */
  earlyStopAlpha?: number;
}

export const DEFAULT_MIN_SAMPLE_PER_VARIANT = 100;
export const DEFAULT_ALPHA = 0.05;
export const DEFAULT_MIN_DETECTABLE_LIFT = 0.1;
export const DEFAULT_POWER = 0.8;
export const DEFAULT_MAX_SAMPLE_PER_VARIANT = 1_000_000;
/** Haybittle–Peto-style early-stopping level: before the planned sample a winner needs a Holm-adjusted p < 0.0001
 *  (|z| > 3.9), strict enough for results looked at continuously (docs/reference/optimize-statistics.md). */
export const DEFAULT_EARLY_STOP_ALPHA = 0.0001;
/** Normal-approximation condition of the z-test: expected conversions and non-conversions per arm (pooled rate). */
export const MIN_EXPECTED_COUNT = 5;
/** Sample-ratio mismatch is flagged when the chi-square goodness-of-fit p-value is below this. */
export const SRM_P_THRESHOLD = 0.001;

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function checkCount(value: number, what: string): void {
  if (!(Number.isSafeInteger(value) && value >= 0)) throw new RangeError(`${what} must be an integer ≥ 0, got ${value}`);
}

function option(value: number | undefined, fallback: number, what: string, ok: (v: number) => boolean): number {
  if (value === undefined) return fallback;
  if (!ok(value)) throw new RangeError(`option ${what} out of range: ${value}`);
  return value;
}

const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
const count = (n: number): string => n.toLocaleString('en-US');
const fmtP = (p: number): string => (p < 1e-4 ? p.toExponential(1) : p.toFixed(4));

export function computeResults(variants: VariantInput[], daily: DailyCount[], opts: ResultsOptions = {}): OptimizeResults {
  const minSample = option(opts.minSamplePerVariant, DEFAULT_MIN_SAMPLE_PER_VARIANT, 'minSamplePerVariant', (v) => v >= 0);
  const alpha = option(opts.alpha, DEFAULT_ALPHA, 'alpha', (v) => v > 0 && v < 1);
  const mde = option(opts.minDetectableLift, DEFAULT_MIN_DETECTABLE_LIFT, 'minDetectableLift', (v) => v > 0 && v < 1);
  const power = option(opts.power, DEFAULT_POWER, 'power', (v) => v > 0 && v < 1);
  const maxSample = option(opts.maxSamplePerVariant, DEFAULT_MAX_SAMPLE_PER_VARIANT, 'maxSamplePerVariant',
    (v) => v >= minSample);
  const earlyAlpha = option(opts.earlyStopAlpha, Math.min(DEFAULT_EARLY_STOP_ALPHA, alpha), 'earlyStopAlpha',
    (v) => v > 0 && v <= alpha);

  // Totals per variant and the daily series, merging repeated (variant, day) rows; rows of unknown variants are
  // ignored (a deleted variant's counts must not leak into another's).
  const index = new Map<string, number>();
  variants.forEach((v, i) => index.set(v.id, i));
  const totals = variants.map(() => ({ impressions: 0, conversions: 0, revenue_cents: 0 }));
  const byKey = new Map<string, DailyCount>();
  for (const row of daily) {
    const i = index.get(row.variant_id);
    if (i === undefined) continue;
    if (!DAY.test(row.day)) throw new RangeError(`day must be YYYY-MM-DD, got ${row.day}`);
    checkCount(row.impressions, 'impressions');
    checkCount(row.conversions, 'conversions');
    if (!Number.isFinite(row.revenue_cents)) throw new RangeError(`revenue_cents must be finite, got ${row.revenue_cents}`);
    const total = totals[i];
    total.impressions += row.impressions;
    total.conversions += row.conversions;
    total.revenue_cents += row.revenue_cents;
    const key = `${row.day}\u0000${row.variant_id}`;
    const seen = byKey.get(key);
    if (seen) {
      seen.impressions += row.impressions;
      seen.conversions += row.conversions;
      seen.revenue_cents += row.revenue_cents;
    } else {
      byKey.set(key, { variant_id: row.variant_id, day: row.day, impressions: row.impressions,
        conversions: row.conversions, revenue_cents: row.revenue_cents });
    }
  }
  const series = [...byKey.values()].sort((x, y) =>
    (x.day < y.day ? -1 : x.day > y.day ? 1 : index.get(x.variant_id)! - index.get(y.variant_id)!));

  // The binomial model counts converting visitors: a variant can't convert more visitors than it showed to.
  const converted = totals.map((t) => Math.min(t.conversions, t.impressions));
  const controls = variants.flatMap((v, i) => (v.is_control ? [i] : []));
  const c = controls.length === 1 ? controls[0] : -1;
  const rate = (i: number) => (totals[i].impressions > 0 ? converted[i] / totals[i].impressions : 0);

  const rows: VariantResult[] = variants.map((v, i) => {
    const row: VariantResult = {
      variant_id: v.id, name: v.name, is_control: v.is_control,
      impressions: totals[i].impressions, conversions: totals[i].conversions,
      conversion_rate: rate(i), lift: null, p_value: null, probability_to_beat_control: null,
      revenue_cents: totals[i].revenue_cents, adjusted_p_value: null, significant: false,
    };
    if (c < 0 || i === c) return row;
    const [nc, xc, nv, xv] = [totals[c].impressions, converted[c], totals[i].impressions, converted[i]];
    if (nc > 0 && rate(c) > 0) row.lift = rate(i) / rate(c) - 1;
    row.p_value = twoProportionZTest(xc, nc, xv, nv)?.p_value ?? null;
    row.probability_to_beat_control = probBetaGreater(1 + xv, 1 + nv - xv, 1 + xc, 1 + nc - xc);
    return row;
  });

  const srm = sampleRatio(variants, totals.map((t) => t.impressions));
  const decide = (reason: DecisionReason, explanation: string, winner: string | null = null,
    required: number | null = null): OptimizeResults =>
    ({ variants: rows, decision: { reason, winner_variant_id: winner, explanation, required_sample_per_variant: required },
      srm, daily: series });

  if (variants.length < 2) return decide('inconclusive', 'A test needs a control and at least one other variant.');
  if (c < 0) return decide('inconclusive', `A test needs exactly one control variant; it has ${controls.length}.`);
  if (!variants.every((v) => Number.isFinite(v.weight) && v.weight >= 0) || !variants.some((v) => v.weight > 0)) {
    return decide('inconclusive', 'The variant weights are not valid (each must be ≥ 0 and one > 0).');
  }
  if (srm.mismatch) return decide('inconclusive', 'Sample-ratio mismatch: the traffic split is broken, so no result is trusted.');

  const others = rows.map((_, i) => i).filter((i) => i !== c);
  const m = others.length;
  const required = requiredSample(pooledRate(converted, totals.map((t) => t.impressions)), alpha / m, mde, power,
    minSample, maxSample);
  const thin = rows.filter((r) => r.impressions < minSample);
  if (thin.length) {
    return decide('collecting', `Collecting: ${thin.map((r) => r.name).join(', ')} below the minimum of ${count(minSample)} impressions.`,
      null, required);
  }

  const valid = others.every((i) => {
    const n = [totals[c].impressions, totals[i].impressions];
    const pooled = (converted[c] + converted[i]) / (n[0] + n[1]);
    return n.every((k) => k * pooled >= MIN_EXPECTED_COUNT && k * (1 - pooled) >= MIN_EXPECTED_COUNT);
  });
  const reached = rows.every((r) => r.impressions >= required);
  // Results are looked at continuously, so before the planned sample only an overwhelming difference counts
  // (Haybittle–Peto boundary); at the planned sample the nominal level applies.
  const level = reached ? alpha : earlyAlpha;
  if (valid) {
    const { rejected, adjusted } = holm(others.map((i) => rows[i].p_value), level);
    others.forEach((i, k) => { rows[i].adjusted_p_value = adjusted[k]; rows[i].significant = rejected[k]; });
    const when = reached ? `at the planned sample of ${count(required)} impressions per variant`
      : `before the planned sample, below the early-stopping level ${earlyAlpha}`;
    const better = others.filter((i, k) => rejected[k] && rate(i) > rate(c));
    if (better.length) {
      const best = better.reduce((b, i) => (rate(i) > rate(b)
        || (rate(i) === rate(b) && rows[i].probability_to_beat_control! > rows[b].probability_to_beat_control!) ? i : b));
      const r = rows[best];
      return decide('winner', `${r.name} converts better than the control (${pct(r.conversion_rate)} vs `
        + `${pct(rows[c].conversion_rate)}, Holm-adjusted p = ${fmtP(r.adjusted_p_value!)}, ${when}).`, r.variant_id, required);
    }
    if (others.every((i, k) => rejected[k] && rate(i) < rate(c))) {
      return decide('winner', `The control converts better than every variant (each significantly worse, ${when}).`,
        rows[c].variant_id, required);
    }
  }
  if (reached) {
    return decide('no_difference', `No variant beats the control at level ${alpha} after ${count(required)} impressions per variant, `
      + `enough to detect a ${pct(mde)} relative lift with ${pct(power)} power.`, null, required);
  }
  return decide('collecting', valid
    ? `No decisive difference yet; ${count(required)} impressions per variant are planned (to detect a ${pct(mde)} relative lift`
      + ` with ${pct(power)} power); before that only p < ${earlyAlpha} ends the test.`
    : `Collecting: too few conversions for the z-test (each variant needs ${MIN_EXPECTED_COUNT} expected conversions).`,
  null, required);
}

function pooledRate(converted: number[], impressions: number[]): number {
  const n = impressions.reduce((s, x) => s + x, 0);
  return n > 0 ? converted.reduce((s, x) => s + x, 0) / n : 0;
}

/**
 * The planned sample: impressions per variant enough to detect a relative lift of `mde` over the baseline at the
 * strictest Holm level alpha/m with the given power, within [minSample, maxSample]. The baseline is the pooled rate
 * of all variants (the best estimate of the common rate if nothing differs, and steadier than the control's alone).
 * With no conversion at all (or only conversions) the cap applies.
 */
function requiredSample(base: number, alpha: number, mde: number, power: number, minSample: number,
  maxSample: number): number {
  if (!(base > 0) || base >= 1) return maxSample;
  const target = base * (1 + mde) < 1 ? base * (1 + mde) : base * (1 - mde);
  return Math.min(maxSample, Math.max(minSample, sampleSizePerArm(base, target, alpha, power)));
}

function sampleRatio(variants: VariantInput[], impressions: number[]): OptimizeResults['srm'] {
  const weights = variants.map((v) => (Number.isFinite(v.weight) && v.weight > 0 ? v.weight : 0));
  const fit = chiSquareGoodnessOfFit(impressions, weights);
  if (!fit) return { p_value: null, mismatch: false, warning: null, chi_square: null };
  const mismatch = fit.p_value < SRM_P_THRESHOLD;
  let warning: string | null = null;
  if (mismatch) {
    const total = impressions.reduce((s, x) => s + x, 0);
    const weightSum = weights.reduce((s, x) => s + x, 0);
    const shares = variants.map((v, i) => `${v.name} ${pct(impressions[i] / total)} (expected ${pct(weights[i] / weightSum)})`);
    warning = `Sample-ratio mismatch: observed traffic departs from the configured weights (chi-square p = ${fmtP(fit.p_value)}`
      + ` < ${SRM_P_THRESHOLD}): ${shares.join(', ')}. Results can't be trusted until the cause is fixed: look for a redirect`
      + ' variant losing visitors, bots filtered unevenly, caching or a change of weights during the test.';
  }
  return { p_value: fit.p_value, mismatch, warning, chi_square: Number.isFinite(fit.statistic) ? fit.statistic : null };
}
