// shared/optimize/stats.ts and shared/optimize/results.ts: the statistics of Optimize results against published values
// and independent computations, then every decision rule, SRM detection and the edge cases.
import t from 'tap';
import {
  chiSquareGoodnessOfFit, chiSquareSurvival, holm, logGamma, normalCdf, normalQuantile, probBetaGreater,
  regularizedGamma, sampleSizePerArm, twoProportionZTest,
} from '../../shared/optimize/stats.ts';
import {
  computeResults, DEFAULT_ALPHA, DEFAULT_EARLY_STOP_ALPHA, DEFAULT_MIN_SAMPLE_PER_VARIANT, type DailyCount, type VariantInput,
} from '../../shared/optimize/results.ts';

const close = (t: Tap, actual: number | null | undefined, expected: number, tol: number, msg: string) =>
  t.ok(actual != null && Math.abs(actual - expected) <= tol, `${msg}: ${actual} ≈ ${expected} (± ${tol})`);
type Tap = { ok: (v: unknown, m: string) => unknown };

t.test('normal CDF against published values (accuracy ≥ 1e-7, measured ~1e-15)', async (t) => {
  // Φ values as tabulated to 16 digits (e.g. by R's pnorm / scipy.stats.norm.cdf; A&S table 26.1 to its digits).
  const known: Array<[number, number]> = [
    [0, 0.5], [1, 0.8413447460685429], [1.96, 0.9750021048517795], [-1.5, 0.06680720126885807],
    [2.5, 0.9937903346742238], [-3, 0.0013498980316300933], [0.1, 0.539827837277029], [5, 0.9999997133484281],
  ];
  for (const [z, p] of known) close(t, normalCdf(z), p, 1e-13, `Φ(${z})`);
  // Far tails keep relative accuracy (1 − Φ computed directly, never by subtraction).
  const tails: Array<[number, number]> = [[-6, 9.865876450376946e-10], [-8, 6.22096057427174e-16], [-10, 7.61985302416047e-24]];
  for (const [z, p] of tails) close(t, normalCdf(z) / p, 1, 1e-9, `Φ(${z}) relative`);
  close(t, normalCdf(2.5758293035489004), 0.995, 1e-13, 'Φ(z_0.995)');
  for (const z of [0.3, 1.7, 4.2]) close(t, normalCdf(z) + normalCdf(-z), 1, 1e-15, `Φ(${z}) + Φ(−${z}) = 1`);
  close(t, normalQuantile(0.975), 1.959963984540054, 1e-10, 'Φ⁻¹(0.975)');
  close(t, normalQuantile(0.8), 0.8416212335729143, 1e-10, 'Φ⁻¹(0.8)');
  close(t, normalQuantile(1e-10), -6.361340902404056, 1e-8, 'Φ⁻¹(1e-10)');
  close(t, logGamma(0.5), Math.log(Math.sqrt(Math.PI)), 1e-14, 'ln Γ(½) = ln √π');
  close(t, logGamma(10), Math.log(362880), 1e-13, 'ln Γ(10) = ln 9!');
  close(t, logGamma(1e6), 12815504.569147611, 1e-6, 'ln Γ(10⁶)');
  const e = regularizedGamma(1, 2.5); // P(1, x) = 1 − e^−x
  close(t, e.q, Math.exp(-2.5), 1e-15, 'Q(1, x) = e^−x');
});

t.test('two-proportion z-test: the mammogram example of OpenIntro "Introduction to Modern Statistics"', async (t) => {
  // Source: Çetinkaya-Rundel & Hardin, Introduction to Modern Statistics (OpenIntro, 2nd ed.), chapter 17
  // "Inference for comparing two proportions", section "Hypothesis test for the difference between two proportions":
  // breast-cancer deaths 500 of 44,925 (mammogram) vs 505 of 44,910 (control); pooled proportion 0.0112,
  // SE = 0.00070, Z = −0.17 (from the rounded difference −0.00012), lower tail 0.4325, two-sided p-value 0.8650.
  const r = twoProportionZTest(505, 44_910, 500, 44_925)!; // second arm − first arm = mammogram − control
  close(t, r.se, 0.0007, 0.000005, 'pooled SE (book: 0.00070)');
  close(t, r.z, -0.17, 0.01, 'Z (book: −0.17, from the difference rounded to −0.00012)');
  close(t, r.z, -0.00011505 / 0.000701827, 0.001, 'Z from the unrounded difference');
  close(t, normalCdf(-0.17), 0.4325, 0.00005, 'lower tail at the book\'s Z');
  close(t, 2 * normalCdf(-0.17), 0.8650, 0.00005, 'two-sided p at the book\'s Z');
  close(t, r.p_value, 0.8698, 0.0001, 'two-sided p at the unrounded Z');
  t.ok(r.p_value > 0.05, 'the book does not reject H0');

  // z² of the pooled test is Pearson's X² of the 2×2 table (computed here from the table, independently).
  const table = [[505, 44_910 - 505], [500, 44_925 - 500]];
  const rowSums = table.map((r) => r[0] + r[1]);
  const colSums = [table[0][0] + table[1][0], table[0][1] + table[1][1]];
  const n = rowSums[0] + rowSums[1];
  let x2 = 0;
  for (let i = 0; i < 2; i++) for (let j = 0; j < 2; j++) {
    const e = (rowSums[i] * colSums[j]) / n;
    x2 += (table[i][j] - e) ** 2 / e;
  }
  close(t, r.z * r.z, x2, 1e-9, 'z² = Pearson X² of the 2×2 table');
  close(t, r.p_value, chiSquareSurvival(x2, 1), 1e-12, 'p = chi-square(1) upper tail of X²');

  t.equal(twoProportionZTest(0, 0, 5, 10), null, 'an arm without trials: no test');
  t.same(twoProportionZTest(0, 100, 0, 100), { z: 0, se: 0, p_value: 1 }, 'both at 0 %: no difference, p = 1');
  t.same(twoProportionZTest(100, 100, 50, 50), { z: 0, se: 0, p_value: 1 }, 'both at 100 %: p = 1');
  close(t, twoProportionZTest(500, 10_000, 600, 10_000)!.p_value, 2 * normalCdf(-3.101614034661568), 1e-12, 'p = 2Φ(−|z|)');
});

// P(X > Y) for X ~ Beta(a1, b1), Y ~ Beta(a2, b2) by brute-force quadrature, sharing no code with the module: both
// densities are evaluated (unnormalized, in log space) on a fine grid, normalized numerically, Y's CDF accumulated by
// the trapezoid rule, then P = ∫ f_X(x) F_Y(x) dx by the trapezoid rule.
function integrateProbGreater(a1: number, b1: number, a2: number, b2: number, points = 400_001): number {
  const mean = (a: number, b: number) => a / (a + b);
  const sd = (a: number, b: number) => Math.sqrt((a * b) / ((a + b) ** 2 * (a + b + 1)));
  const lo = Math.max(0, Math.min(mean(a1, b1) - 14 * sd(a1, b1), mean(a2, b2) - 14 * sd(a2, b2)));
  const hi = Math.min(1, Math.max(mean(a1, b1) + 14 * sd(a1, b1), mean(a2, b2) + 14 * sd(a2, b2)));
  const h = (hi - lo) / (points - 1);
  const logPdf = (a: number, b: number, x: number) =>
    (a === 1 ? 0 : (a - 1) * Math.log(x)) + (b === 1 ? 0 : (b - 1) * Math.log(1 - x));
  const density = (a: number, b: number) => {
    const logs = new Float64Array(points);
    let max = -Infinity;
    for (let i = 0; i < points; i++) {
      logs[i] = logPdf(a, b, lo + i * h);
      if (logs[i] > max) max = logs[i];
    }
    const f = new Float64Array(points);
    let area = 0;
    for (let i = 0; i < points; i++) {
      f[i] = Math.exp(logs[i] - max);
      area += (i === 0 || i === points - 1 ? 0.5 : 1) * f[i] * h;
    }
    for (let i = 0; i < points; i++) f[i] /= area;
    return f;
  };
  const fx = density(a1, b1);
  const fy = density(a2, b2);
  let cdfY = 0;
  let p = 0;
  for (let i = 0; i < points; i++) {
    if (i > 0) cdfY += 0.5 * (fy[i - 1] + fy[i]) * h;
    p += (i === 0 || i === points - 1 ? 0.5 : 1) * fx[i] * cdfY * h;
  }
  return p;
}

t.test('probability to beat control: exact sum against an independent numerical integration', async (t) => {
  // [variant conversions, variant impressions, control conversions, control impressions]
  const cases: Array<[number, number, number, number]> = [
    [15, 100, 10, 100], [10, 100, 15, 100], [345, 10_000, 300, 10_000], [5, 40, 200, 1000], [0, 50, 0, 50],
    [100, 100, 90, 100], [3, 1000, 0, 1000], [1200, 2000, 1150, 2000], [30, 3000, 25, 2000],
  ];
  for (const [xv, nv, xc, nc] of cases) {
    const exact = probBetaGreater(1 + xv, 1 + nv - xv, 1 + xc, 1 + nc - xc);
    const numeric = integrateProbGreater(1 + xv, 1 + nv - xv, 1 + xc, 1 + nc - xc);
    close(t, exact, numeric, 1e-6, `${xv}/${nv} vs ${xc}/${nc}`);
  }
  close(t, probBetaGreater(1, 1, 1, 1), 0.5, 1e-13, 'uniform vs uniform');
  close(t, probBetaGreater(2, 1, 1, 1), 2 / 3, 1e-13, 'P(max of 2 uniforms ≷ uniform) = 2/3');
  for (const [a1, b1, a2, b2] of [[7, 90, 12, 400], [300, 20, 250, 22], [2, 2000, 40, 30]]) {
    close(t, probBetaGreater(a1, b1, a2, b2) + probBetaGreater(a2, b2, a1, b1), 1, 1e-12, `P(X>Y) + P(Y>X) = 1 (${a1},${b1},${a2},${b2})`);
  }
  // 1,000,000 impressions split in three: computed exactly (the sum runs over ~10k terms) and still a probability.
  const big = probBetaGreater(1 + 10_400, 1 + 333_333 - 10_400, 1 + 10_000, 1 + 333_333 - 10_000);
  t.ok(big > 0.99 && big < 1, `large counts: ${big}`);
  close(t, big, integrateProbGreater(1 + 10_400, 1 + 333_333 - 10_400, 1 + 10_000, 1 + 333_333 - 10_000), 1e-6, 'large counts vs integration');
  // 3,000/330,000 vs 3,300/330,000: Evan Miller's sum evaluated term by term in 40-digit arithmetic (mpmath).
  close(t, probBetaGreater(3001, 327_001, 3301, 326_701) / 7.288199700077851e-5, 1, 1e-8, 'against a 40-digit evaluation');
  t.throws(() => probBetaGreater(0.5, 1, 1, 1), RangeError, 'non-integer parameters refused');
});

t.test('chi-square p-value against the table and closed forms', async (t) => {
  // Critical values of the chi-square table (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.4), statistic rounded to 3 decimals.
  const table: Array<[number, number, number]> = [
    [3.841, 1, 0.05], [6.635, 1, 0.01], [10.828, 1, 0.001], [5.991, 2, 0.05], [9.210, 2, 0.01], [13.816, 2, 0.001],
    [7.815, 3, 0.05], [11.345, 3, 0.01], [9.488, 4, 0.05], [20.515, 5, 0.001], [18.307, 10, 0.05],
  ];
  for (const [x, df, p] of table) close(t, chiSquareSurvival(x, df) / p, 1, 0.001, `χ²(${df}) = ${x}`);
  for (const x of [0.5, 3, 17, 60]) close(t, chiSquareSurvival(x, 2) / Math.exp(-x / 2), 1, 1e-13, `df 2: p = e^(−${x}/2)`);
  for (const z of [0.7, 2.2, 4]) close(t, chiSquareSurvival(z * z, 1), 2 * normalCdf(-z), 1e-16, `df 1: p = 2Φ(−${z})`);
  t.equal(chiSquareSurvival(0, 3), 1, 'χ² = 0 → p = 1');
  t.equal(chiSquareGoodnessOfFit([0, 0], [1, 1]), null, 'no observations → no test');
  t.equal(chiSquareGoodnessOfFit([10], [1]), null, 'one category → no test');
  const fit = chiSquareGoodnessOfFit([90, 60, 50], [1, 1, 1])!;
  t.equal(fit.df, 2);
  close(t, fit.statistic, ((90 - 200 / 3) ** 2 + (60 - 200 / 3) ** 2 + (50 - 200 / 3) ** 2) / (200 / 3), 1e-9, 'Σ (O−E)²/E');
  close(t, fit.p_value / Math.exp(-fit.statistic / 2), 1, 1e-13, 'df 2 closed form');
  t.equal(chiSquareGoodnessOfFit([10, 5], [1, 0])!.p_value, 0, 'counts on a zero-weight category: impossible fit');
});

t.test('Holm step-down and the sample-size formula', async (t) => {
  const h = holm([0.01, 0.04, 0.03, null], 0.05);
  t.same(h.rejected, [true, false, false, false], '0.01 ≤ 0.05/3; then 0.03 > 0.05/2 stops the procedure');
  t.same(h.adjusted.map((p) => (p === null ? null : Number(p.toFixed(10)))), [0.03, 0.06, 0.06, null], 'adjusted p-values');
  t.same(holm([0.001, 0.02], 0.05).rejected, [true, true], '0.001 ≤ 0.025, then 0.02 ≤ 0.05');
  // n = (z_{α/2}·√(2p̄(1−p̄)) + z_β·√(p1q1 + p2q2))² / (p2 − p1)², with z = 1.959963984540054, 0.8416212335729143
  const [p1, p2] = [0.05, 0.055];
  const pbar = (p1 + p2) / 2;
  const n = ((1.959963984540054 * Math.sqrt(2 * pbar * (1 - pbar)) + 0.8416212335729143
    * Math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2) / (p2 - p1) ** 2;
  t.equal(sampleSizePerArm(p1, p2, 0.05, 0.8), Math.ceil(n), `5 % → 5.5 % needs ${Math.ceil(n)} per arm`);
  t.ok(sampleSizePerArm(p1, p2, 0.025, 0.8) > sampleSizePerArm(p1, p2, 0.05, 0.8), 'a stricter level needs more');
});

// ---- results and decisions ----

const AB: VariantInput[] = [
  { id: 'ctl', name: 'Control', is_control: true, weight: 1 },
  { id: 'b', name: 'B', is_control: false, weight: 1 },
];
const ABC: VariantInput[] = [...AB, { id: 'c', name: 'C', is_control: false, weight: 1 }];
const day = (variant_id: string, impressions: number, conversions: number, d = '2026-11-01', revenue_cents = 0): DailyCount =>
  ({ variant_id, day: d, impressions, conversions, revenue_cents });

t.test('results: per-variant figures and the daily series', async (t) => {
  const r = computeResults(AB, [
    day('b', 3000, 150, '2026-11-02', 900), day('ctl', 2000, 80, '2026-11-02', 100), day('ctl', 3000, 120, '2026-11-01', 200),
    day('b', 2000, 100, '2026-11-01', 300), day('b', 10, 1, '2026-11-01', 5), day('gone', 999, 999, '2026-11-01'),
  ]);
  const [ctl, b] = r.variants;
  t.same([ctl.impressions, ctl.conversions, ctl.revenue_cents], [5000, 200, 300], 'control totals');
  t.same([b.impressions, b.conversions, b.revenue_cents], [5010, 251, 1205], 'B totals (two rows of one day merged)');
  close(t, b.conversion_rate, 251 / 5010, 1e-15, 'conversion rate');
  close(t, b.lift, (251 / 5010) / (200 / 5000) - 1, 1e-12, 'lift relative to control');
  t.equal(ctl.lift, null, 'control: no lift');
  t.equal(ctl.p_value, null, 'control: no p-value');
  t.equal(ctl.probability_to_beat_control, null, 'control: no probability');
  close(t, b.p_value, twoProportionZTest(200, 5000, 251, 5010)!.p_value, 1e-15, 'B p-value');
  close(t, b.probability_to_beat_control, probBetaGreater(252, 4760, 201, 4801), 1e-15, 'B probability');
  t.same(r.daily.map((d) => `${d.day} ${d.variant_id} ${d.impressions}`),
    ['2026-11-01 ctl 3000', '2026-11-01 b 2010', '2026-11-02 ctl 2000', '2026-11-02 b 3000'],
    'sorted by day then variant (order of the variants), same-day rows merged, unknown variants dropped');
  t.throws(() => computeResults(AB, [day('b', 1, 0, '2026-1-1')]), RangeError, 'a malformed day is refused');
  t.throws(() => computeResults(AB, [day('b', -1, 0)]), RangeError, 'negative counts are refused');
  t.throws(() => computeResults(AB, [day('b', 10, 0.5)]), RangeError, 'fractional counts are refused');
});

t.test('decision: collecting below the minimum sample', async (t) => {
  t.equal(DEFAULT_MIN_SAMPLE_PER_VARIANT, 100);
  t.equal(DEFAULT_ALPHA, 0.05);
  const r = computeResults(AB, [day('ctl', 99, 0), day('b', 99, 60)]);
  t.equal(r.decision.reason, 'collecting', 'a huge difference but 99 < 100 impressions');
  t.equal(r.decision.winner_variant_id, null);
  t.match(r.decision.explanation, /minimum of 100/);
  t.equal(computeResults(AB, [day('ctl', 99, 0), day('b', 99, 60)], { minSamplePerVariant: 50 }).decision.reason, 'winner',
    'the minimum is an option');
  const few = computeResults(AB, [day('ctl', 1000, 1), day('b', 1000, 6)]);
  t.equal(few.decision.reason, 'collecting', 'too few conversions for the normal approximation (3.5 expected per arm)');
  t.match(few.decision.explanation, /too few conversions/);
});

t.test('decision: winner early only past the early-stopping level, otherwise at the planned sample', async (t) => {
  t.equal(DEFAULT_EARLY_STOP_ALPHA, 0.0001);
  // 5 % vs 7 % on 5,000 each: p ≈ 2.5e-5 < 0.0001, a winner before the planned sample.
  const early = computeResults(AB, [day('ctl', 5000, 250), day('b', 5000, 350)]);
  t.equal(early.decision.reason, 'winner');
  t.equal(early.decision.winner_variant_id, 'b');
  t.ok(early.variants[1].impressions < early.decision.required_sample_per_variant!, 'before the planned sample');
  t.match(early.decision.explanation, /early-stopping level 0\.0001/);
  t.equal(early.variants[1].significant, true);

  // 5 % vs 6.4 %: p ≈ 0.0025 is below 0.05 but not below 0.0001, and the planned sample is not reached.
  const notYet = computeResults(AB, [day('ctl', 5000, 250), day('b', 5000, 320)]);
  t.ok(notYet.variants[1].p_value! < 0.05 && notYet.variants[1].p_value! > 0.0001, `p = ${notYet.variants[1].p_value}`);
  t.equal(notYet.decision.reason, 'collecting', 'no peeking winner');
  t.equal(notYet.variants[1].significant, false);
  t.equal(computeResults(AB, [day('ctl', 5000, 250), day('b', 5000, 320)], { earlyStopAlpha: 0.005 }).decision.reason,
    'winner', 'the early level is an option');
  t.throws(() => computeResults(AB, [], { earlyStopAlpha: 0.1 }), RangeError, 'the early level cannot exceed alpha');

  // At the planned sample the nominal level applies: p ≈ 0.014 wins.
  const planned = computeResults(AB, [day('ctl', 40_000, 2000), day('b', 40_000, 2154)]);
  t.ok(planned.variants[1].impressions >= planned.decision.required_sample_per_variant!, 'planned sample reached');
  t.ok(planned.variants[1].p_value! > 0.0001 && planned.variants[1].p_value! < 0.05, `p = ${planned.variants[1].p_value}`);
  t.equal(planned.decision.winner_variant_id, 'b');
  t.match(planned.decision.explanation, /at the planned sample/);

  // Two variants significantly better than control: the best one wins.
  const two = computeResults(ABC, [day('ctl', 10_000, 500), day('b', 10_000, 650), day('c', 10_000, 700)]);
  t.equal(two.decision.winner_variant_id, 'c', 'C (7 %) beats B (6.5 %)');
  t.same(two.variants.map((v) => v.significant), [false, true, true]);

  // Every variant significantly worse: the control is the winner.
  const ctl = computeResults(ABC, [day('ctl', 10_000, 700), day('b', 10_000, 500), day('c', 10_000, 520)]);
  t.equal(ctl.decision.reason, 'winner');
  t.equal(ctl.decision.winner_variant_id, 'ctl');
});

t.test('decision: the multiple-variant correction (Holm) withholds a winner that one raw p-value would give', async (t) => {
  // At 60,000 per variant (past the planned sample) B has p ≈ 0.036 raw: < 0.05, but > 0.05/2, the Holm threshold
  // of the smallest of two p-values.
  const rows = [day('ctl', 60_000, 3000), day('b', 60_000, 3160), day('c', 60_000, 3010)];
  const r = computeResults(ABC, rows);
  t.ok(r.variants[0].impressions >= r.decision.required_sample_per_variant!, 'planned sample reached');
  const b = r.variants[1];
  t.ok(b.p_value! < 0.05 && b.p_value! > 0.025, `B raw p = ${b.p_value}`);
  close(t, b.adjusted_p_value, 2 * b.p_value!, 1e-15, 'Holm-adjusted p = 2p for the smallest of two');
  t.equal(b.significant, false);
  t.equal(r.decision.reason, 'no_difference', 'no winner at family-wise 0.05, and the sample is enough');
  // The same B against the control alone (one comparison: no correction) wins.
  const alone = computeResults(AB, rows.slice(0, 2));
  t.equal(alone.decision.winner_variant_id, 'b');
  t.equal(computeResults(ABC, rows, { alpha: 0.1 }).decision.winner_variant_id, 'b', 'at alpha 0.1 the correction passes');
});

t.test('decision: no_difference once the sample can detect the minimum lift', async (t) => {
  const probe = computeResults(AB, [day('ctl', 20_000, 1000), day('b', 20_000, 1010)]);
  const required = probe.decision.required_sample_per_variant!;
  const pooled = 2010 / 40_000;
  t.equal(required, sampleSizePerArm(pooled, pooled * 1.1, 0.05, 0.8),
    'planned sample: detect a 10 % relative lift on the pooled rate at 80 % power and level 0.05');
  t.equal(probe.decision.reason, 'collecting', `20,000 < ${required}`);
  const n = 40_000;
  t.ok(n >= required);
  const done = computeResults(AB, [day('ctl', n, 2000), day('b', n, 2020)]);
  t.equal(done.decision.reason, 'no_difference');
  t.equal(done.decision.winner_variant_id, null);
  // Three arms: the level for the sample is alpha/2, so more sample is needed.
  const three = computeResults(ABC, [day('ctl', n, 2000), day('b', n, 2020), day('c', n, 1990)]);
  t.ok(three.decision.required_sample_per_variant! > required, 'more variants need more sample');
  t.equal(computeResults(AB, [day('ctl', n, 2000), day('b', n, 2020)], { minDetectableLift: 0.05 }).decision.reason,
    'collecting', 'a smaller detectable lift needs more sample');
  // No conversion at all: nothing to detect before the cap.
  const none = computeResults(AB, [day('ctl', 5000, 0), day('b', 5000, 0)], { maxSamplePerVariant: 5000 });
  t.equal(none.decision.reason, 'no_difference', 'zero conversions at the cap');
  t.equal(computeResults(AB, [day('ctl', 4999, 0), day('b', 5000, 0)], { maxSamplePerVariant: 5000 }).decision.reason,
    'collecting', 'one arm below the cap');
});

t.test('A/A tests looked at every day: the rule keeps false winners near alpha (seeded simulation)', async (t) => {
  // 300 tests of two identical variants (3 % conversion, 1,500 visitors per variant per day), results computed
  // after every day until the first decision, as the service does. Looking at a raw p < 0.05 every day would
  // declare a false winner in about a third of them; the rule (early level 0.0001, nominal level at the planned
  // sample, then stop) stays near the nominal 5 %. Deterministic: the PRNG is seeded.
  let seed = 12345;
  const rand = () => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const binomial = (n: number, p: number) => { let k = 0; for (let i = 0; i < n; i++) if (rand() < p) k++; return k; };
  const sims = 300;
  let falseWinners = 0;
  let naiveWinners = 0;
  let noDifference = 0;
  for (let s = 0; s < sims; s++) {
    const rows: DailyCount[] = [];
    const sum = { ctl: [0, 0], b: [0, 0] };
    let decided = false;
    let naive = false;
    for (let d = 0; d < 90 && !(decided && naive); d++) {
      const date = new Date(Date.UTC(2026, 0, 1) + d * 86_400_000).toISOString().slice(0, 10);
      for (const id of ['ctl', 'b'] as const) {
        const x = binomial(1500, 0.03);
        rows.push(day(id, 1500, x, date));
        sum[id][0] += 1500;
        sum[id][1] += x;
      }
      if (!naive && twoProportionZTest(sum.ctl[1], sum.ctl[0], sum.b[1], sum.b[0])!.p_value < 0.05) naive = true;
      if (!decided) {
        const reason = computeResults(AB, rows).decision.reason;
        if (reason === 'winner') falseWinners++;
        if (reason === 'no_difference') noDifference++;
        decided = reason === 'winner' || reason === 'no_difference';
      }
    }
    if (naive) naiveWinners++;
  }
  t.ok(naiveWinners / sims > 0.2, `daily raw p < 0.05 would call ${naiveWinners}/${sims} false winners`);
  t.ok(falseWinners / sims <= 0.08, `the rule calls ${falseWinners}/${sims} false winners (nominal 5 %)`);
  t.equal(falseWinners + noDifference, sims, 'every A/A test ends within 90 days');
});

t.test('SRM: detection, warning, and never a winner while flagged', async (t) => {
  const fine = computeResults(AB, [day('ctl', 5075, 250), day('b', 4925, 320)]); // χ² = 2.25, p = 0.13
  t.equal(fine.srm.mismatch, false);
  close(t, fine.srm.p_value, 2 * normalCdf(-1.5), 1e-12, 'df 1: p = 2Φ(−√χ²)');
  t.equal(fine.srm.warning, null);
  const borderline = computeResults(AB, [day('ctl', 5150, 250), day('b', 4850, 300)]); // χ² = 9, p = 0.0027
  t.equal(borderline.srm.mismatch, false, 'p = 0.0027 is not below 0.001');
  const broken = computeResults(AB, [day('ctl', 5200, 250), day('b', 4800, 400)]); // χ² = 16, p = 6.3e-5
  t.equal(broken.srm.mismatch, true);
  close(t, broken.srm.p_value, 2 * normalCdf(-4), 1e-15, 'χ² = 16 on df 1');
  t.match(broken.srm.warning, /Sample-ratio mismatch/);
  t.match(broken.srm.warning, /Control 52\.0 % \(expected 50\.0 %\)/);
  t.equal(broken.decision.reason, 'inconclusive', 'B is far better, but the split is broken');
  t.equal(broken.decision.winner_variant_id, null);
  t.ok(broken.variants[1].p_value! < 1e-6, 'the variant row still shows the (untrusted) p-value');

  // Weights are honoured: 90/10 with 9000/1000 is fine, 5000/5000 is a mismatch.
  const weighted: VariantInput[] = [{ ...AB[0], weight: 90 }, { ...AB[1], weight: 10 }];
  t.equal(computeResults(weighted, [day('ctl', 9000, 1), day('b', 1000, 1)]).srm.p_value, 1);
  t.equal(computeResults(weighted, [day('ctl', 5000, 1), day('b', 5000, 1)]).srm.mismatch, true);
  // A zero-weight variant that receives traffic.
  const paused: VariantInput[] = [AB[0], { ...AB[1], weight: 0 }];
  const leak = computeResults(paused, [day('ctl', 1000, 10), day('b', 5, 0)]);
  t.equal(leak.srm.mismatch, true);
  t.equal(leak.srm.p_value, 0);
  // Three arms, df = 2: p = e^(−χ²/2).
  const three = computeResults(ABC, [day('ctl', 3000, 1), day('b', 3100, 1), day('c', 2900, 1)]);
  close(t, three.srm.p_value! / Math.exp(-((0 + 10_000 / 3000 + 10_000 / 3000) / 2)), 1, 1e-13, 'df 2 closed form');
});

t.test('edge cases', async (t) => {
  const empty = computeResults(AB, []);
  t.same(empty.variants.map((v) => [v.impressions, v.conversions, v.conversion_rate, v.lift, v.p_value]),
    [[0, 0, 0, null, null], [0, 0, 0, null, null]], 'zero impressions: rates 0, no lift, no p-value');
  close(t, empty.variants[1].probability_to_beat_control, 0.5, 1e-15, 'no data: the prior gives 0.5');
  t.same(empty.srm, { p_value: null, mismatch: false, warning: null, chi_square: null }, 'no SRM test without traffic');
  t.equal(empty.decision.reason, 'collecting');
  t.same(empty.daily, []);

  const zeroControl = computeResults(AB, [day('ctl', 1000, 0), day('b', 1000, 30)]);
  t.equal(zeroControl.variants[1].lift, null, 'control at 0 %: lift is null');
  t.equal(zeroControl.decision.winner_variant_id, 'b', '0/1000 vs 30/1000 is still a significant difference');

  const allConvert = computeResults(AB, [day('ctl', 200, 200), day('b', 200, 200)]);
  t.equal(allConvert.variants[1].p_value, 1, 'all conversions in both: p = 1');
  t.equal(allConvert.variants[1].lift, 0);
  close(t, allConvert.variants[1].probability_to_beat_control, 0.5, 1e-12, 'symmetric posteriors');
  t.equal(allConvert.decision.reason, 'collecting', 'no non-conversion: the z-test condition is not met');

  const over = computeResults(AB, [day('ctl', 100, 10), day('b', 100, 150)]);
  t.equal(over.variants[1].conversions, 150, 'reported as recorded');
  t.equal(over.variants[1].conversion_rate, 1, 'but the binomial model caps converting visitors at impressions');

  const one = computeResults([AB[0]], [day('ctl', 500, 20)]);
  t.equal(one.decision.reason, 'inconclusive', 'one variant');
  t.equal(one.variants[0].impressions, 500);
  t.equal(one.srm.p_value, null);
  t.equal(computeResults([AB[1], ABC[2]], [day('b', 500, 20)]).decision.reason, 'inconclusive', 'no control');
  t.equal(computeResults([AB[0], { ...AB[1], is_control: true }], []).decision.reason, 'inconclusive', 'two controls');
  t.equal(computeResults([{ ...AB[0], weight: 0 }, { ...AB[1], weight: 0 }], []).decision.reason, 'inconclusive', 'no weight');
  t.throws(() => computeResults(AB, [], { alpha: 1.5 }), RangeError, 'bad options are refused');
});
