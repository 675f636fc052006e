// Summaries of `bench serve`'s latencies: mean, standard deviation and percentiles interpolated
// between order statistics (numpy's default, which vLLM's figures use).

export interface Dist {
  mean: number;
  std: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** null for no samples (e.g. ITL of a non-streamed run). */
export function dist(xs: readonly number[]): Dist | null {
  if (xs.length === 0) return null;
  const s = Float64Array.from(xs).sort();
  const arr = Array.from(s);
  let sum = 0;
  for (const x of arr) sum += x;
  const mean = sum / arr.length;
  let sq = 0;
  for (const x of arr) sq += (x - mean) ** 2;
  return { mean, std: Math.sqrt(sq / arr.length), p50: percentile(arr, 0.5), p90: percentile(arr, 0.9), p99: percentile(arr, 0.99), max: arr[arr.length - 1]! };
}
