// Order statistics for bench:serve: percentiles, and a distribution-free confidence interval of a
// median (the binomial order-statistic interval: no normality assumed, robust to the outliers a
// shared 2-core machine produces).
import type { LatencyStats } from '../engine/batching.js';

export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

export const median = (xs: readonly number[]): number => quantile(xs, 0.5);
export const latency = (xs: readonly number[]): LatencyStats => ({ p50: quantile(xs, 0.5), p99: quantile(xs, 0.99) });

/** log of n choose k. */
function logChoose(n: number, k: number): number {
  let s = 0;
  for (let i = 1; i <= k; i++) s += Math.log((n - k + i) / i);
  return s;
}

/**
 * The ~95% interval [x_(k), x_(n+1-k)] (1-based order statistics) for the median of n samples: the
 * largest k with P(Binomial(n, 1/2) < k) <= 2.5%. Null when n is too small for one (n < 6).
 */
export function medianCI(xs: readonly number[], alpha = 0.05): { lo: number; hi: number } | null {
  const n = xs.length;
  const s = [...xs].sort((a, b) => a - b);
  let cdf = 0; // P(B < k)
  let k = 0;
  while (k < n) {
    const next = cdf + Math.exp(logChoose(n, k) - n * Math.LN2); // P(B < k + 1)
    if (next > alpha / 2) break;
    cdf = next;
    k++;
  }
  if (k === 0) return null;
  return { lo: s[k - 1]!, hi: s[n - k]! };
}

export interface PairedSummary {
  pairs: number;
  medianMs: number;
  ci95Ms: { lo: number; hi: number } | null;
  p25Ms: number;
  p75Ms: number;
  meanMs: number;
}

export function paired(diffs: readonly number[]): PairedSummary {
  return {
    pairs: diffs.length,
    medianMs: median(diffs),
    ci95Ms: medianCI(diffs),
    p25Ms: quantile(diffs, 0.25),
    p75Ms: quantile(diffs, 0.75),
    meanMs: diffs.reduce((a, b) => a + b, 0) / Math.max(1, diffs.length),
  };
}
