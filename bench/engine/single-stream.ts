// Single-sequence decode and prefill on the 0.3B shape, beside the machine's memory-bound ceiling
// measured in the same run (weight bytes read per token / measured read bandwidth).
import type { CpuProfile, NativeModel } from '../../src/sidecar/native.js';

export interface SingleStreamResult {
  readBandwidthGBs: number;
  weightBytesPerToken: number;
  ceilingTokS: number;
  decodeTokS: number;
  decodeMsPerToken: number;
  decodeFractionOfCeiling: number;
  prefillTokS: number;
  prefillTokens: number;
  runs: { decodeTokS: number[]; prefillTokS: number[] };
  /** Native time per decode step by phase and GEMM group (ms), over one-token forward steps (CPU only). */
  decodeProfileMs?: Partial<CpuProfile>;
  /** The same for one prefill of prefillTokens (the last run's; CPU only). */
  prefillProfileMs?: Partial<CpuProfile>;
}

/** Per-step profile difference (ms per step; the thread count as is). */
export function profileDelta(before: CpuProfile, after: CpuProfile, steps: number): Partial<CpuProfile> {
  const per: Partial<CpuProfile> = {};
  for (const k of Object.keys(after) as (keyof CpuProfile)[])
    if (k !== 'steps' && k !== 'tokens' && k !== 'threads') per[k] = (after[k] - before[k]) / steps;
  per.threads = after.threads;
  return per;
}

/** The model's native time per one-token step, by phase, over `steps` steps after a 16-token prompt. */
async function decodeProfile(model: NativeModel, blocks: Int32Array, steps: number): Promise<Partial<CpuProfile> | undefined> {
  const prompt = tokens(16, 3);
  await model.forward([{ tokens: prompt, startPos: 0, blockTable: blocks, logits: 1 }]);
  const before = model.info().profile;
  if (!before) return undefined;
  for (let t = 0; t < steps; t++) await model.forward([{ tokens: tokens(1, 100 + t), startPos: 16 + t, blockTable: blocks, logits: 1 }]);
  return profileDelta(before, model.info().profile!, steps);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Deterministic pseudo-random token ids in [3, vocab). */
export function tokens(n: number, seed: number, vocab = 100000): Int32Array {
  let s = seed >>> 0;
  return Int32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return 3 + (s % (vocab - 3));
  });
}

export async function singleStream(model: NativeModel, opts: { decodeTokens: number; prefillTokens: number; runs: number }): Promise<SingleStreamResult> {
  const info = model.info();
  const bw = model.memoryBandwidth(1 << 30);
  const blocks = Int32Array.from({ length: Math.ceil((opts.prefillTokens + opts.decodeTokens + 16) / info.blockSize) }, (_, i) => i);
  // Warm-up: first touch of weights and KV pages.
  await model.generateGreedy({ tokens: tokens(16, 1), blockTable: blocks }, 8);
  const decode: number[] = [];
  const prefill: number[] = [];
  let prefillProfileMs: Partial<CpuProfile> | undefined;
  for (let r = 0; r < opts.runs; r++) {
    const g = await model.generateGreedy({ tokens: tokens(16, 10 + r), blockTable: blocks }, opts.decodeTokens + 1);
    decode.push((opts.decodeTokens / g.decodeMs) * 1000);
    const before = model.info().profile;
    const t0 = performance.now();
    await model.forward([{ tokens: tokens(opts.prefillTokens, 20 + r), startPos: 0, blockTable: blocks, logits: 1 }]);
    prefill.push((opts.prefillTokens / (performance.now() - t0)) * 1000);
    if (before) prefillProfileMs = profileDelta(before, model.info().profile!, 1);
  }
  const ceiling = bw / info.weightBytes;
  const d = median(decode);
  const decodeProfileMs = await decodeProfile(model, blocks, opts.decodeTokens);
  return {
    decodeProfileMs,
    prefillProfileMs,
    readBandwidthGBs: bw / 1e9,
    weightBytesPerToken: info.weightBytes,
    ceilingTokS: ceiling,
    decodeTokS: d,
    decodeMsPerToken: 1000 / d,
    decodeFractionOfCeiling: d / ceiling,
    prefillTokS: median(prefill),
    prefillTokens: opts.prefillTokens,
    runs: { decodeTokS: decode, prefillTokS: prefill },
  };
}
