// Shared helpers for the engine tests: golden files, comparisons, block tables.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const GOLDEN = fileURLToPath(new URL('../fixtures/golden', import.meta.url));

export interface GreedyStep {
  token: number;
  margin: number;
}
export interface GoldenPrompt {
  prompt: number[];
  last_logits_file: string;
  prefill_logits_file?: string;
  greedy: GreedyStep[];
  greedy_tokens: number[];
  min_margin: number;
}
export interface Golden {
  config: Record<string, unknown>;
  bf16_sha256: Record<string, string>;
  prompts: GoldenPrompt[];
}

export function readGolden(name: 'tiny' | 'formula-0.3b'): Golden {
  return JSON.parse(readFileSync(path.join(GOLDEN, name, 'golden.json'), 'utf8')) as Golden;
}

export function readF32(name: string, file: string): Float32Array {
  const b = readFileSync(path.join(GOLDEN, name, file));
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** Greedy steps that must match exactly: every step before the first whose margin < 0.05. */
export function comparableSteps(greedy: GreedyStep[]): number {
  const i = greedy.findIndex((s) => s.margin < 0.05);
  return i < 0 ? greedy.length : i;
}

/**
 * The margin rule, applied as strictly as it allows: tokens must equal the reference's step by
 * step; the first difference is only legitimate at a step whose margin is below 0.05, and the
 * paths are not compared after it. Throws on an illegitimate difference.
 */
export function checkGreedy(got: number[], greedy: GreedyStep[]): { matched: number; divergedAt: number } {
  for (let i = 0; i < greedy.length; i++) {
    if (got[i] === greedy[i]!.token) continue;
    if (greedy[i]!.margin >= 0.05)
      throw new Error(`greedy step ${i}: got ${got[i]}, reference ${greedy[i]!.token} with margin ${greedy[i]!.margin}`);
    return { matched: i, divergedAt: i };
  }
  return { matched: greedy.length, divergedAt: -1 };
}

/** A block table of `n` distinct block ids, deliberately not in order (paging must be invisible). */
export function scatteredBlocks(n: number, numBlocks: number, seed = 7): Int32Array {
  const ids = Array.from({ length: numBlocks }, (_, i) => i);
  let s = seed;
  for (let i = ids.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) >>> 0;
    const j = s % (i + 1);
    [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  }
  return Int32Array.from(ids.slice(0, n));
}

/** log-softmax of row `r` of a [rows, V] logits block, in float64. */
export function logSoftmaxRow(logits: Float32Array, r: number, V = 2048): Float64Array {
  const row = logits.subarray(r * V, (r + 1) * V);
  let mx = -Infinity;
  for (const x of row) mx = Math.max(mx, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - mx);
  const lse = mx + Math.log(sum);
  return Float64Array.from(row, (x) => x - lse);
}
