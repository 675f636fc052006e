// --quantization int8 against HF transformers (bf16 weights, fp32 compute) on the tiny and the
// formula-0.3b goldens: max |logit diff| at the last prompt position and the share of greedy
// tokens equal to HF's, printed and asserted, with the int8 paths this CPU has. llama.cpp's Q8_0
// on the formula-0.3b weights reaches max |diff| 0.93-1.30 and misses the greedy tokens of all
// three prompts (issue #27); the default int8 (two activation planes in the layers, one on the LM
// head) and two planes throughout must do better on every prompt, one plane (--dtype bfloat16) is
// held to its own, looser bound. Also, for each: a request's
// logits are the same bits alone, among other requests, and on 1 or 2 threads (batch invariance).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { native, type NativeModel } from '../../src/sidecar/native.js';
import { writeFormulaCheckpoint } from '../../src/sidecar/model/formula.js';
import { kernelNames, loadModel, nativeLoadOptions } from '../../src/sidecar/model/load.js';
import { readCheckpoint } from '../../src/sidecar/model/checkpoint.js';
import { GOLDEN, maxAbsDiff, readF32, readGolden, scatteredBlocks } from './helpers.js';

const LLAMA_Q8_0_FORMULA_MIN_DIFF = 0.93;
const cpu = native().cpuInfo();
// Each path the loader can be forced to ('' = the best: AMX-INT8 where usable, else AVX512-VNNI ...).
const paths = ([['', cpu.bestInt8], ['avx512', 'avx512vnni'], ['avx2', cpu.avxvnni ? 'avxvnni' : 'avx2']] as const).filter(
  ([isa]) => isa === '' || (isa === 'avx512' ? cpu.avx512vnni && cpu.bestInt8 !== 'avx512vnni' : cpu.avx2),
);

async function greedyShare(model: NativeModel, prompt: number[], want: { token: number }[], blocks: Int32Array) {
  const out = await model.generateGreedy({ tokens: Int32Array.from(prompt), blockTable: blocks }, want.length);
  const got = Array.from(out.tokens);
  let prefix = 0;
  while (prefix < want.length && got[prefix] === want[prefix]!.token) prefix++;
  return { prefix, share: prefix / want.length };
}

describe.each(paths)('int8 on the tiny golden (isa %s: %s)', (isa, name) => {
  const golden = readGolden('tiny');
  let model: NativeModel;
  beforeAll(async () => {
    model = (await loadModel(path.join(GOLDEN, 'tiny'), { isa, quantization: 'int8', kvBlocks: 64, blockSize: 16, threads: 2 })).model;
  });
  afterAll(() => model?.close());

  it('names its kernels', () => {
    expect(model.info()).toMatchObject({ quantization: 'int8', gemm: name, lmHeadGemm: name });
  });

  it.each(golden.prompts.map((p, i) => [i, p] as const))('prompt %i: last-position logits within 0.25', async (i, p) => {
    const got = await model.forward([{ tokens: Int32Array.from(p.prompt), startPos: 0, blockTable: scatteredBlocks(16, 64, i + 1), logits: 1 }]);
    const want = readF32('tiny', p.last_logits_file);
    const diff = maxAbsDiff(got, want);
    const g = await greedyShare(model, p.prompt, p.greedy, scatteredBlocks(16, 64, i + 2));
    console.log(`[int8 ${name}] tiny prompt ${i}: max |logit diff| ${diff.toFixed(4)}, greedy tokens equal to HF ${g.prefix}/${p.greedy.length}`);
    // Tiny's random weights are not int8-exact: per-row weight rounding dominates here.
    expect(diff).toBeLessThan(0.25);
  });
});

it('refuses a quantization it does not know, and int8 or an LM head on its own planes on CUDA', async () => {
  const tiny = path.join(GOLDEN, 'tiny');
  await expect(loadModel(tiny, { quantization: 'fp8' as 'int8', kvBlocks: 4, blockSize: 16 })).rejects.toThrow(/quantization must be none or int8/);
  await expect(native().loadModel({ ...nativeLoadOptions(await readCheckpoint(tiny), { quantization: 'int8', kvBlocks: 4, blockSize: 16 }), device: 'cuda' })).rejects.toThrow(/CPU backend only/);
  await expect(native().loadModel({ ...nativeLoadOptions(await readCheckpoint(tiny), { lmHeadPrecise: false, kvBlocks: 4, blockSize: 16 }), device: 'cuda' })).rejects.toThrow(/--lm-head-planes\) are for the CPU backend only/);
});

it("resolves --lm-head-planes auto in the addon as the loader does (one plane on an int8 head only)", async () => {
  const opts = nativeLoadOptions(await readCheckpoint(path.join(GOLDEN, 'tiny')), { quantization: 'int8', kvBlocks: 4, blockSize: 16 });
  expect(opts.lmHeadPrecise).toBe(false);
  for (const lmHeadInt8 of [true, false]) {
    const m = await native().loadModel({ ...opts, lmHeadInt8, lmHeadPrecise: undefined });
    try {
      expect(m.info()).toMatchObject({ planes: 2, lmHeadPlanes: lmHeadInt8 ? 1 : 2 });
    } finally {
      m.close();
    }
  }
});

it('keeps the LM head bf16 when asked (--lm-head-dtype bfloat16)', async () => {
  const m = (await loadModel(path.join(GOLDEN, 'tiny'), { quantization: 'int8', lmHeadInt8: false, kvBlocks: 4, blockSize: 16 })).model;
  try {
    // A bf16 LM head keeps the layers' two planes (auto puts one only on an int8 head).
    expect(m.info()).toMatchObject({ quantization: 'int8', gemm: cpu.bestInt8, lmHeadGemm: cpu.best, lmHeadPlanes: 2 });
  } finally {
    m.close();
  }
});

// The int8 variants a user can pick (README, "int8 weights"): two activation planes (value and
// residual; --dtype auto) with one on the LM head (--lm-head-planes auto) and --kv-cache-dtype auto (a
// bf16 cache where the bf16 dot attention is the fast one, bf16DotAttentionFast; fp32 on AMX hosts):
// the default; the same with an fp32 cache; the most precise (two planes
// throughout and an fp32 cache) and one plane (--dtype bfloat16). Each one's accuracy bound on
// formula-0.3b is asserted here; all but one plane beat llama.cpp Q8_0 on every prompt, to the bounds
// below. NOTE: a bf16 cache under a two-plane LM head measured max |logit diff| 0.10-0.22 but left HF's
// greedy tokens after 10 on prompt 1 (a near tie; bench/README.md, "int8's default KV cache").
// NOTE: one plane rounds each activation to half a step of its row's max |x| / 127, as coarse as Q8_0's
// per-32 blocks or coarser; its measured error is above Q8_0's and its free-running greedy tokens leave
// HF's early (bench/results/cpu-int8-zen5-wave.json): it is bounded, not held to the Q8_0 target.
// NOTE: the LM head on one plane leaves the layers' K/V and hidden states as precise as two planes'
// and rounds only the final GEMM's input; its error (bench/results/cpu-int8-zen5-lm-head-planes.json)
// sits under the same bound as two planes'. A bf16 KV cache: attention takes bf16 dot products (q and
// P rounded to bf16 as K and V are), as the bf16 path does; bounded at a third of Q8_0's least error,
// every greedy token HF's.
const VARIANTS = [
  { name: '2 planes, LM head 1, KV cache auto (default)', precise: true, lmHeadPrecise: undefined, head: 1, maxDiff: LLAMA_Q8_0_FORMULA_MIN_DIFF / 3, allGreedy: true },
  { name: '2 planes, LM head 1, fp32 KV cache (--kv-cache-dtype float32)', precise: true, lmHeadPrecise: undefined, head: 1, kvCacheDtype: 'float32', maxDiff: LLAMA_Q8_0_FORMULA_MIN_DIFF / 4, allGreedy: true },
  { name: 'most precise: 2 planes throughout, fp32 KV cache (--lm-head-planes 2 --kv-cache-dtype float32)', precise: true, lmHeadPrecise: true, head: 2, kvCacheDtype: 'float32', maxDiff: LLAMA_Q8_0_FORMULA_MIN_DIFF / 4, allGreedy: true },
  { name: '1 plane (--dtype bfloat16)', precise: false, lmHeadPrecise: undefined, head: 1, maxDiff: 2.5, allGreedy: false },
] as const;

describe.each(VARIANTS)('int8 on the formula-0.3b golden (real 0.3B shape), $name', (variant) => {
  const { name, precise, lmHeadPrecise, head, maxDiff, allGreedy } = variant;
  const kvCacheDtype = 'kvCacheDtype' in variant ? variant.kvCacheDtype : undefined;
  const golden = readGolden('formula-0.3b');
  const config = JSON.parse(readFileSync(path.join(GOLDEN, 'formula-0.3b', 'config.json'), 'utf8')) as Record<string, unknown>;
  let dir: string;
  let model: NativeModel;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ernie-int8-'));
    await writeFormulaCheckpoint(dir, config);
    model = (await loadModel(dir, { quantization: 'int8', precise, lmHeadPrecise, kvCacheDtype, kvBlocks: 80, blockSize: 16 })).model;
  });
  afterAll(async () => {
    model?.close();
    if (dir && existsSync(dir)) await rm(dir, { recursive: true, force: true });
  });

  it('names its kernels and planes', () => {
    expect(model.info()).toMatchObject({ quantization: 'int8', gemm: cpu.bestInt8, planes: precise ? 2 : 1, lmHeadPlanes: head });
    const names = kernelNames({ device: 'cpu', quantization: 'int8', precise, lmHeadPrecise }, cpu);
    expect(names).toContain(`(int8 weights, ${precise ? '2 planes' : '1 plane'})`);
    // The start-up log names the LM head's planes where they differ from the layers'.
    expect(/lm_head \S+ \(1 plane\)/.test(names)).toBe(precise && head === 1);
  });

  it.each(golden.prompts.map((p, i) => [i, p] as const))(`prompt %i: max |logit diff| under ${maxDiff.toFixed(4)}${allGreedy ? ', every greedy token equal (better than llama.cpp Q8_0)' : ''}`, async (i, p) => {
    const got = await model.forward([{ tokens: Int32Array.from(p.prompt), startPos: 0, blockTable: scatteredBlocks(4, 16, i + 5), logits: 1 }]);
    const diff = maxAbsDiff(got, readF32('formula-0.3b', p.last_logits_file));
    const g = await greedyShare(model, p.prompt, p.greedy, scatteredBlocks(5, 16, i));
    console.log(`[int8 ${model.info().gemm}, ${name}] formula-0.3b prompt ${i}: max |logit diff| ${diff.toFixed(4)} (llama.cpp Q8_0: >= ${LLAMA_Q8_0_FORMULA_MIN_DIFF}), greedy tokens equal to HF ${g.prefix}/${p.greedy.length}`);
    expect(diff).toBeLessThan(maxDiff);
    if (allGreedy) expect(g.share).toBe(1);
  });

  it('a request gives the same bits alone, among 7 others, among 63 others (a 64-stream wave), and on one thread', async () => {
    const p = golden.prompts[0]!.prompt;
    const alone = await model.forward([{ tokens: Int32Array.from(p), startPos: 0, blockTable: Int32Array.of(0, 1), logits: 1 }]);
    const same = (got: Float32Array, at: number) =>
      Buffer.compare(Buffer.from(got.buffer, got.byteOffset + at * alone.byteLength, alone.byteLength), Buffer.from(alone.buffer, alone.byteOffset, alone.byteLength));
    const seven = Array.from({ length: 7 }, (_, j) => ({ tokens: Int32Array.from({ length: 3 + j }, (_, t) => 100 + 31 * t + j), startPos: 0, blockTable: Int32Array.of(2 + j), logits: 1 as const }));
    const batch = await model.forward([...seven.slice(0, 3), { tokens: Int32Array.from(p), startPos: 0, blockTable: Int32Array.of(10, 11), logits: 1 }, ...seven.slice(3)]);
    expect(same(batch, 3)).toBe(0);
    const others = Array.from({ length: 63 }, (_, j) => ({ tokens: Int32Array.from({ length: 1 + (j % 8) }, (_, t) => 100 + 31 * t + j), startPos: 0, blockTable: Int32Array.of(2 + j), logits: 1 as const }));
    const wave = await model.forward([...others.slice(0, 30), { tokens: Int32Array.from(p), startPos: 0, blockTable: Int32Array.of(70, 71), logits: 1 }, ...others.slice(30)]);
    expect(same(wave, 30)).toBe(0);
    const one = (await loadModel(dir, { quantization: 'int8', precise, lmHeadPrecise, kvCacheDtype, kvBlocks: 4, blockSize: 16, threads: 1 })).model;
    try {
      const single = await one.forward([{ tokens: Int32Array.from(p), startPos: 0, blockTable: Int32Array.of(0, 1), logits: 1 }]);
      expect(same(single, 0)).toBe(0);
    } finally {
      one.close();
    }
  });
});
