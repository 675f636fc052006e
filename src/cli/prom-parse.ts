// Reading Prometheus text exposition (the gateway's /metrics) back: samples, sums over label sets,
// and quantiles of cumulative histograms the way PromQL's histogram_quantile() estimates them
// (linear interpolation inside the bucket; the +Inf bucket answers with the largest finite bound).

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parsePromText(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** Sum of every series named `name` (all label sets, e.g. all models); null when there is none. */
export function sumOf(samples: readonly Sample[], name: string): number | null {
  const hits = samples.filter((s) => s.name === name);
  return hits.length ? hits.reduce((a, s) => a + s.value, 0) : null;
}

/** Cumulative bucket counts of histogram `name` summed over label sets: [[le, count]] ascending by le. */
export function histogramBuckets(samples: readonly Sample[], name: string): [number, number][] {
  const byLe = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket` || s.labels.le === undefined) continue;
    const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
    byLe.set(le, (byLe.get(le) ?? 0) + s.value);
  }
  return [...byLe.entries()].sort((a, b) => a[0] - b[0]);
}

/** Bucket-wise a − b (the observations between two scrapes); `b` may be empty (first scrape). */
export function bucketDelta(a: [number, number][], b: [number, number][]): [number, number][] {
  const prev = new Map(b);
  return a.map(([le, n]) => [le, Math.max(0, n - (prev.get(le) ?? 0))]);
}

/** q ∈ [0, 1]; null when the histogram holds no observations. */
export function histogramQuantile(q: number, buckets: readonly [number, number][]): number | null {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let lowerLe = 0;
  let lowerCount = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Infinity) return lowerLe; // like PromQL: the largest finite bound
      if (count === lowerCount) return le;
      return lowerLe + ((le - lowerLe) * (rank - lowerCount)) / (count - lowerCount);
    }
    lowerLe = le;
    lowerCount = count;
  }
  return lowerLe;
}
