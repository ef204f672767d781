// Pure statistics for Optimize results (no I/O). The methods and their accuracy are described in
// docs/reference/optimize-statistics.md.

const LN_SQRT_2PI = 0.5 * Math.log(2 * Math.PI);
const EPS = 1e-16;
const TINY = 1e-300;

/**
 * ln Γ(x) for x > 0: Stirling's asymptotic series (Bernoulli terms up to B12) at x ≥ 15, reached from smaller x
 * by the recurrence Γ(x) = Γ(x + n) / (x (x+1) … (x+n−1)). The first omitted term is below 1e-17 relative at
 * x = 15, so the result is accurate to rounding (~1e-15 relative).
 */
export function logGamma(x: number): number {
  if (!(x > 0)) throw new RangeError(`logGamma needs x > 0, got ${x}`);
  let shift = 0;
  let product = 1;
  while (x < 15) {
    product *= x;
    x += 1;
    shift += 1;
  }
  const inv = 1 / x;
  const inv2 = inv * inv;
  // Σ B2k / (2k (2k−1) x^(2k−1)) for k = 1..6
  const series = inv * (1 / 12 + inv2 * (-1 / 360 + inv2 * (1 / 1260 + inv2 * (-1 / 1680 + inv2 * (1 / 1188
    + inv2 * (-691 / 360360))))));
  const lg = (x - 0.5) * Math.log(x) - x + LN_SQRT_2PI + series;
  return shift ? lg - Math.log(product) : lg;
}

/** ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a + b). */
export function logBeta(a: number, b: number): number {
  return logGamma(a) + logGamma(b) - logGamma(a + b);
}

/**
 * Regularized incomplete gamma functions P(a, x) and Q(a, x) = 1 − P(a, x), each computed directly (no 1 − P
 * cancellation): the power series of γ(a, x) when x < a + 1, the continued fraction of Γ(a, x) (evaluated with the
 * modified Lentz method) otherwise. Both converge to relative precision ~1e-15.
 */
export function regularizedGamma(a: number, x: number): { p: number; q: number } {
  if (!(a > 0)) throw new RangeError(`regularizedGamma needs a > 0, got ${a}`);
  if (Number.isNaN(x)) throw new RangeError('regularizedGamma: x is NaN');
  if (x <= 0) return { p: 0, q: 1 };
  if (x === Infinity) return { p: 1, q: 0 };
  const logPrefix = -x + a * Math.log(x) - logGamma(a);
  if (x < a + 1) {
    let term = 1 / a;
    let sum = term;
    for (let n = 1; n < 10_000; n++) {
      term *= x / (a + n);
      sum += term;
      if (Math.abs(term) < Math.abs(sum) * EPS) break;
    }
    const p = Math.min(1, sum * Math.exp(logPrefix));
    return { p, q: 1 - p };
  }
  // Γ(a, x) = e^-x x^a · 1/(x+1−a− 1·(1−a)/(x+3−a− 2·(2−a)/(x+5−a− …)))
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 10_000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < EPS) break;
  }
  const q = Math.min(1, Math.exp(logPrefix) * h);
  return { p: 1 - q, q };
}

/**
 * Standard normal CDF Φ(z), through erfc: Φ(z) = ½·erfc(−z/√2) and erfc(t) = Q(½, t²) for t ≥ 0. The tail that is
 * small is always computed directly, so Φ is accurate to ~1e-15 absolute everywhere and ~1e-14 relative in the
 * lower tail (Φ(−8) ≈ 6.2e-16 keeps its digits).
 */
export function normalCdf(z: number): number {
  if (Number.isNaN(z)) return NaN;
  const half = 0.5 * regularizedGamma(0.5, 0.5 * z * z).q; // ½·erfc(|z|/√2) = Φ(−|z|)
  return z < 0 ? half : 1 - half;
}

/** Standard normal density φ(z). */
export function normalPdf(z: number): number {
  return Math.exp(-0.5 * z * z - LN_SQRT_2PI);
}

/**
 * Φ⁻¹(p): a starting point from Abramowitz & Stegun 26.2.23 (|error| < 4.5e-4), then Newton steps on normalCdf
 * until the step is below 1e-12 (three or four steps).
 */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) {
    if (p === 0) return -Infinity;
    if (p === 1) return Infinity;
    throw new RangeError(`normalQuantile needs 0 ≤ p ≤ 1, got ${p}`);
  }
  const lower = p < 0.5;
  const tail = lower ? p : 1 - p;
  const t = Math.sqrt(-2 * Math.log(tail));
  let x = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308)));
  x = lower ? -x : x;
  for (let i = 0; i < 50; i++) {
    const step = (normalCdf(x) - p) / normalPdf(x);
    if (!Number.isFinite(step)) break;
    x -= step;
    if (Math.abs(step) < 1e-12 * Math.max(1, Math.abs(x))) break;
  }
  return x;
}

export interface ZTest { z: number; se: number; p_value: number }

/**
 * Two-sided two-proportion z-test with the pooled standard error:
 *   z = (p2 − p1) / √(p̂ (1 − p̂) (1/n1 + 1/n2)), p̂ = (x1 + x2) / (n1 + n2), p = 2·(1 − Φ(|z|)) = erfc(|z|/√2).
 * null when an arm has no trials. When p̂ is 0 or 1 both rates are equal and the standard error is 0: z = 0, p = 1.
 */
export function twoProportionZTest(x1: number, n1: number, x2: number, n2: number): ZTest | null {
  if (!(n1 > 0 && n2 > 0)) return null;
  const pooled = (x1 + x2) / (n1 + n2);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  if (!(se > 0)) return { z: 0, se: 0, p_value: 1 };
  const z = (x2 / n2 - x1 / n1) / se;
  return { z, se, p_value: regularizedGamma(0.5, 0.5 * z * z).q };
}

/** Terms below e^-60 of the largest are left out: fewer than a1 of them remain, so the neglected rest is < 1e-17 relative. */
const NEGLIGIBLE_TERM = Math.exp(-60);

/**
 * P(X > Y) for X ~ Beta(a1, b1), Y ~ Beta(a2, b2) with a1 a positive integer: Evan Miller's closed form
 *   Σ_{i=0}^{a1−1} t(i),  t(i) = B(a2+i, b1+b2) / ((b1+i) B(1+i, b1) B(a2, b2)).
 * The ratio t(i+1)/t(i) = (a2+i)(b1+i) / ((a2+b1+b2+i)(i+1)) exceeds 1 exactly while i < (a2·b1 − a2−b1−b2)/(b2+1),
 * so the terms rise to one mode and then fall. The sum starts at the mode (its term from log-gamma, so nothing
 * overflows) and walks outward by the ratio until the terms are negligible: a few hundred to a few thousand
 * multiplications instead of a1 (the terms that matter span a few standard deviations of the posterior).
 */
function probGreaterSumOverA1(a1: number, b1: number, a2: number, b2: number): number {
  const s = a2 + b1 + b2;
  const last = a1 - 1;
  const mode = Math.min(last, Math.max(0, Math.ceil((a2 * b1 - s) / (b2 + 1))));
  const logModeTerm = logBeta(a2 + mode, b1 + b2) - Math.log(b1 + mode) - logBeta(1 + mode, b1) - logBeta(a2, b2);
  let sum = 1; // Σ t(i) / t(mode)
  let rel = 1;
  for (let i = mode; i < last && rel > NEGLIGIBLE_TERM; i++) {
    rel *= ((a2 + i) * (b1 + i)) / ((s + i) * (i + 1));
    sum += rel;
  }
  rel = 1;
  for (let i = mode; i > 0 && rel > NEGLIGIBLE_TERM; i--) {
    rel *= ((s + i - 1) * i) / ((a2 + i - 1) * (b1 + i - 1));
    sum += rel;
  }
  return Math.exp(logModeTerm + Math.log(sum));
}

/**
 * P(X > Y) for independent X ~ Beta(a1, b1), Y ~ Beta(a2, b2) with integer parameters (Beta(1,1) priors updated
 * with counts). Exact closed-form sum (~1e-9 relative: the log-gamma of large counts limits it), over at most
 * min(a1, b1, a2, b2) terms: it runs over whichever parameter is smallest, using P(X > Y) = 1 − P(Y > X) and the
 * mirror X → 1 − X (1 − X ~ Beta(b, a)), and of those only the non-negligible terms around the largest are computed.
 */
export function probBetaGreater(a1: number, b1: number, a2: number, b2: number): number {
  for (const v of [a1, b1, a2, b2]) {
    if (!(Number.isInteger(v) && v >= 1)) throw new RangeError(`probBetaGreater needs integer parameters ≥ 1, got ${v}`);
  }
  const smallest = Math.min(a1, b1, a2, b2);
  let p: number;
  if (smallest === a1) p = probGreaterSumOverA1(a1, b1, a2, b2);
  else if (smallest === a2) p = 1 - probGreaterSumOverA1(a2, b2, a1, b1);
  // X > Y ⇔ 1−Y > 1−X, with 1−Y ~ Beta(b2, a2) and 1−X ~ Beta(b1, a1)
  else if (smallest === b2) p = probGreaterSumOverA1(b2, a2, b1, a1);
  else p = 1 - probGreaterSumOverA1(b1, a1, b2, a2);
  return Math.min(1, Math.max(0, p));
}

export interface ChiSquareTest { statistic: number; df: number; p_value: number }

/**
 * Pearson chi-square goodness of fit of observed counts against expected shares (any positive scale):
 * Σ (O − E)² / E with E = N·share, df = k − 1, p = Q(df/2, χ²/2). null when N = 0 or k < 2. A category with a zero
 * expected share but observed counts makes the fit impossible: χ² = ∞, p = 0.
 */
export function chiSquareGoodnessOfFit(observed: number[], shares: number[]): ChiSquareTest | null {
  if (observed.length !== shares.length) throw new RangeError('observed and shares differ in length');
  const k = observed.length;
  const total = observed.reduce((s, o) => s + o, 0);
  const shareSum = shares.reduce((s, w) => s + w, 0);
  if (k < 2 || !(total > 0) || !(shareSum > 0)) return null;
  let statistic = 0;
  for (let i = 0; i < k; i++) {
    const expected = (total * shares[i]) / shareSum;
    if (expected > 0) statistic += ((observed[i] - expected) ** 2) / expected;
    else if (observed[i] > 0) statistic = Infinity;
  }
  const df = k - 1;
  return { statistic, df, p_value: regularizedGamma(df / 2, statistic / 2).q };
}

/** Chi-square upper tail Q(df/2, x/2). */
export function chiSquareSurvival(x: number, df: number): number {
  return regularizedGamma(df / 2, x / 2).q;
}

/**
 * Per-arm sample for a two-sided two-proportion z-test to detect p1 → p2 at level alpha with the given power
 * (normal approximation): n = (z_{1−α/2}·√(2 p̄ (1−p̄)) + z_{power}·√(p1(1−p1) + p2(1−p2)))² / (p2 − p1)², p̄ = (p1+p2)/2.
 */
export function sampleSizePerArm(p1: number, p2: number, alpha: number, power: number): number {
  if (p1 === p2) return Infinity;
  const za = normalQuantile(1 - alpha / 2);
  const zb = normalQuantile(power);
  const mean = (p1 + p2) / 2;
  const root = za * Math.sqrt(2 * mean * (1 - mean)) + zb * Math.sqrt(p1 * (1 - p1) + p2 * (1 - p2));
  return Math.ceil((root * root) / ((p2 - p1) ** 2));
}

/**
 * Holm's step-down procedure: which of the hypotheses are rejected at family-wise level alpha, and the Holm-adjusted
 * p-values (max over j ≤ i of min(1, (m − j + 1)·p(j)) in ascending order). null p-values are never rejected.
 */
export function holm(pValues: Array<number | null>, alpha: number): { rejected: boolean[]; adjusted: Array<number | null> } {
  const order = pValues
    .map((p, i) => ({ p, i }))
    .filter((e): e is { p: number; i: number } => e.p !== null)
    .sort((x, y) => x.p - y.p || x.i - y.i);
  const m = order.length;
  const rejected = pValues.map(() => false);
  const adjusted: Array<number | null> = pValues.map(() => null);
  let running = 0;
  let stillRejecting = true;
  order.forEach(({ p, i }, rank) => {
    running = Math.max(running, Math.min(1, (m - rank) * p));
    adjusted[i] = running;
    if (stillRejecting && p <= alpha / (m - rank)) rejected[i] = true;
    else stillRejecting = false;
  });
  return { rejected, adjusted };
}
