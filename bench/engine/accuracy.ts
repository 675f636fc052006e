// Accuracy against the reference (HF transformers, bf16 weights, fp32 compute) on the formula-0.3b
// golden prompts (test/fixtures/golden/formula-0.3b), for the CPU benchmark's int8 path and llama.cpp's
// Q8_0 on the same weights, in the same run. llama.cpp hands out probabilities, not logits, so both
// sides are compared as log-probabilities (logits less their log-sum-exp: the same up to a constant
// per position); our side also reports the raw logits' max |diff|, as the golden tests assert it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NativeModel } from '../../src/sidecar/native.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const GOLDEN_DIR = path.resolve(here, '../../test/fixtures/golden/formula-0.3b');

export interface GoldenPrompt {
  prompt: number[];
  greedy: { token: number; margin: number }[];
  /** The reference's logits at the last prompt position. */
  lastLogits: Float32Array;
}

export function formulaGolden(): GoldenPrompt[] {
  const g = JSON.parse(readFileSync(path.join(GOLDEN_DIR, 'golden.json'), 'utf8')) as {
    prompts: { prompt: number[]; greedy: { token: number; margin: number }[]; last_logits_file: string }[];
  };
  return g.prompts.map((p) => {
    const b = readFileSync(path.join(GOLDEN_DIR, p.last_logits_file));
    return { prompt: p.prompt, greedy: p.greedy, lastLogits: new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4) };
  });
}

/** log-softmax in double. */
export function logSoftmax(logits: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]!);
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i]! - max);
  const lse = max + Math.log(sum);
  return Float64Array.from({ length: logits.length }, (_, i) => logits[i]! - lse);
}

/** max |a - b| over the tokens where both are finite; `skipped`: tokens where one is not (a probability 0). */
export function maxAbsLogProbDiff(a: ArrayLike<number>, b: ArrayLike<number>): { maxAbs: number; skipped: number } {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let maxAbs = 0;
  let skipped = 0;
  for (let i = 0; i < a.length; i++) {
    if (!Number.isFinite(a[i]!) || !Number.isFinite(b[i]!)) skipped++;
    else maxAbs = Math.max(maxAbs, Math.abs(a[i]! - b[i]!));
  }
  return { maxAbs, skipped };
}

/** Per prompt: max |Δ log-prob| at the last prompt position, and the greedy tokens equal to the reference's before the first miss. */
export interface PromptAccuracy {
  maxAbsLogProbDiff: number;
  /** Raw logits (our engine only). */
  maxAbsLogitDiff?: number;
  greedyPrefix: number;
  steps: number;
}

export function greedyPrefix(got: ArrayLike<number>, want: { token: number }[]): number {
  let k = 0;
  while (k < want.length && got[k] === want[k]!.token) k++;
  return k;
}

/** Our engine's accuracy per golden prompt: last-position logits (raw and as log-probabilities) and free-running greedy tokens. */
export async function engineAccuracy(model: NativeModel, golden: GoldenPrompt[]): Promise<PromptAccuracy[]> {
  const out: PromptAccuracy[] = [];
  const blocks = Int32Array.from({ length: 8 }, (_, i) => i);
  for (const p of golden) {
    const got = await model.forward([{ tokens: Int32Array.from(p.prompt), startPos: 0, blockTable: blocks, logits: 1 }]);
    let raw = 0;
    for (let i = 0; i < got.length; i++) raw = Math.max(raw, Math.abs(got[i]! - p.lastLogits[i]!));
    const g = await model.generateGreedy({ tokens: Int32Array.from(p.prompt), blockTable: blocks }, p.greedy.length);
    out.push({
      maxAbsLogProbDiff: maxAbsLogProbDiff(logSoftmax(got), logSoftmax(p.lastLogits)).maxAbs,
      maxAbsLogitDiff: raw,
      greedyPrefix: greedyPrefix(g.tokens, p.greedy),
      steps: p.greedy.length,
    });
  }
  return out;
}
