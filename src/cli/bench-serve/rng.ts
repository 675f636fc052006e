// The project's one seeded PRNG (bench serve, the tests' random workloads and schemas, the fuzz cases).
// For `bench serve`: the prompts, their lengths and the arrival times all come from
// --seed, so two runs with the same flags send the same requests at the same offsets.

/** A uniform [0, 1) generator (mulberry32: 32-bit state, fast, good enough for workloads). */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seed for an independent stream (arrivals of level k, prompts, …) derived from the user's seed. */
export function subSeed(seed: number, stream: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(stream + 1, 0xc2b2ae35)) >>> 0;
}

/** An integer uniform on [lo, hi]. */
export const uniformInt = (next: () => number, lo: number, hi: number): number => lo + Math.floor(next() * (hi - lo + 1));

function normal(next: () => number): number {
  // Box–Muller; 1 - u keeps the log's argument in (0, 1].
  return Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
}

/** Gamma(shape, scale) by Marsaglia–Tsang; shape < 1 through Gamma(shape + 1)·U^(1/shape). */
export function gamma(next: () => number, shape: number, scale: number): number {
  if (shape < 1) return gamma(next, shape + 1, scale) * Math.pow(1 - next(), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(next);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - next();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v * scale;
  }
}

/**
 * When each of n requests is sent, in ms after the run starts: the first at 0, then gaps drawn from
 * Gamma(burstiness, 1 / (rate · burstiness)) (mean 1/rate; burstiness 1 is the exponential gap of a
 * Poisson process, as vLLM). rate Infinity: all at 0.
 */
export function arrivalOffsetsMs(n: number, rate: number, burstiness: number, seed: number): number[] {
  const out = new Array<number>(n).fill(0);
  if (!Number.isFinite(rate)) return out;
  const next = rng(seed);
  for (let i = 1; i < n; i++) out[i] = out[i - 1]! + gamma(next, burstiness, 1 / (rate * burstiness)) * 1000;
  return out;
}
