// Benchmark workloads: the seed article's 5 Chinese prompts, and a seeded random workload.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ARTICLE_PROMPTS } from '../../src/cli/bench-serve/dataset.js';
import { loadTokenizerBundle } from '../../src/sidecar/tokenizer/index.js';
import { tokens } from './single-stream.js';

// One list for the engine benchmarks and `bench serve --dataset-name article`.
export { ARTICLE_PROMPTS };

export interface BenchRequest {
  prompt: Int32Array;
  maxTokens: number;
  /** Sampling instead of greedy (default temperature 0). */
  temperature?: number;
  topP?: number;
  seed?: number;
}

/** The article's prompts through ERNIE's chat template (test tokenizer), 256 new tokens each. */
export async function articleWorkload(newTokens = 256): Promise<BenchRequest[]> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const bundle = await loadTokenizerBundle(path.resolve(here, '../../test/fixtures/golden/tokenizer/hf'));
  return ARTICLE_PROMPTS.map((content) => ({
    prompt: Int32Array.from(bundle.encodeChat([{ role: 'user', content }], { addGenerationPrompt: true })),
    maxTokens: newTokens,
  }));
}

/** n requests: prompts of 32-512 random tokens, 64-256 new tokens (seeded). */
export function randomWorkload(n: number, seed = 1): BenchRequest[] {
  let s = seed >>> 0;
  const rnd = (lo: number, hi: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return lo + (s % (hi - lo + 1));
  };
  return Array.from({ length: n }, (_, i) => ({ prompt: tokens(rnd(32, 512), seed * 1000 + i), maxTokens: rnd(64, 256) }));
}

/** The same requests sampled (temperature 0.8, top-p 0.95, request i seeded with i): the benchmarks' sampled runs. */
export function sampledWorkload(reqs: BenchRequest[]): BenchRequest[] {
  return reqs.map((r, i) => ({ ...r, temperature: 0.8, topP: 0.95, seed: i }));
}

/**
 * The llama.cpp side-by-side: one wave of the random workload's first `c` requests at concurrency c
 * (the same requests on both sides). `quick` caps new tokens at 64.
 */
export function sideBySideWorkload(c: number, quick: boolean): BenchRequest[] {
  return randomWorkload(256)
    .slice(0, c)
    .map((r) => (quick ? { ...r, maxTokens: Math.min(r.maxTokens, 64) } : r));
}
