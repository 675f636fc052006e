// The tiny ERNIE-4.5 checkpoint against HF transformers' logits and greedy tokens, on every
// kernel set this CPU has (AVX512-BF16 and the AVX2 fallback), and paging/chunking invisibility.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { native, type NativeModel } from '../../src/sidecar/native.js';
import { loadModel } from '../../src/sidecar/model/load.js';
import { GOLDEN, checkGreedy, comparableSteps, maxAbsDiff, readF32, readGolden, scatteredBlocks } from './helpers.js';

const dir = path.join(GOLDEN, 'tiny');
const golden = readGolden('tiny');
const V = 2048;
const isas = (['avx512', 'avx2'] as const).filter((i) => (i === 'avx512' ? native().cpuInfo().avx512bf16 : native().cpuInfo().avx2));

describe.each(isas)('tiny golden on %s', (isa) => {
  let model: NativeModel;
  beforeAll(async () => {
    model = (await loadModel(dir, { isa, kvBlocks: 64, blockSize: 16, threads: 2 })).model;
  });
  afterAll(() => model.close());

  it.each(golden.prompts.map((p, i) => [i, p] as const))('prompt %i: logits at every position within 2e-2', async (i, p) => {
    const want = readF32('tiny', p.prefill_logits_file!);
    const got = await model.forward([
      { tokens: Int32Array.from(p.prompt), startPos: 0, blockTable: scatteredBlocks(16, 64, i + 1), logits: 2 },
    ]);
    const diff = maxAbsDiff(got, want);
    console.log(`[${isa}] tiny prompt ${i} (${p.prompt.length} tokens): max |logit diff| over all positions = ${diff.toExponential(2)}`);
    expect(diff).toBeLessThan(2e-2);
    expect(got.length).toBe(p.prompt.length * V);
  });

  it('with a bfloat16 KV cache: logits at every position within 5e-2 on every prompt', async () => {
    const bf = (await loadModel(dir, { isa, kvBlocks: 64, blockSize: 16, threads: 2, kvCacheDtype: 'bfloat16' })).model;
    try {
      for (const [i, p] of golden.prompts.entries()) {
        const got = await bf.forward([{ tokens: Int32Array.from(p.prompt), startPos: 0, blockTable: scatteredBlocks(16, 64, i + 1), logits: 2 }]);
        const diff = maxAbsDiff(got, readF32('tiny', p.prefill_logits_file!));
        console.log(`[${isa}] tiny prompt ${i}, bf16 KV: max |logit diff| over all positions = ${diff.toExponential(2)}`);
        expect(diff).toBeLessThan(5e-2);
      }
    } finally {
      bf.close();
    }
  });

  // bf16 activations with a bf16 cache: on avx512 the attention takes bf16 dot products (q and the
  // softmax weights rounded to bf16 too). Measured: 6.5e-2 at worst (1.8e-2 / 3.3e-2 / 5.2e-2 /
  // 6.5e-2 on the four prompts), against 6.8e-2 for fp32 attention math on the same cache and 5.0e-2
  // for bf16 activations with an fp32 cache; avx2 computes in fp32 either way.
  it('with bf16 activations and a bfloat16 KV cache: logits at every position within 1e-1 on every prompt', async () => {
    const bf = (await loadModel(dir, { isa, kvBlocks: 64, blockSize: 16, threads: 2, precise: false, kvCacheDtype: 'bfloat16' })).model;
    try {
      for (const [i, p] of golden.prompts.entries()) {
        const got = await bf.forward([{ tokens: Int32Array.from(p.prompt), startPos: 0, blockTable: scatteredBlocks(16, 64, i + 1), logits: 2 }]);
        const diff = maxAbsDiff(got, readF32('tiny', p.prefill_logits_file!));
        console.log(`[${isa}] tiny prompt ${i}, bf16 activations + KV: max |logit diff| over all positions = ${diff.toExponential(2)}`);
        expect(diff).toBeLessThan(1e-1);
      }
    } finally {
      bf.close();
    }
  });

  it.each(golden.prompts.map((p, i) => [i, p] as const))('prompt %i: greedy continuation per the margin rule', async (i, p) => {
    const out = await model.generateGreedy({ tokens: Int32Array.from(p.prompt), blockTable: scatteredBlocks(16, 64, i) }, p.greedy.length);
    const { matched, divergedAt } = checkGreedy(Array.from(out.tokens), p.greedy);
    console.log(`[${isa}] tiny prompt ${i}: ${matched}/${p.greedy.length} greedy tokens equal to HF` + (divergedAt >= 0 ? ` (then a legitimate flip at a step of margin ${p.greedy[divergedAt]!.margin.toFixed(4)})` : ''));
    expect(matched).toBeGreaterThanOrEqual(comparableSteps(p.greedy));
  });
});

// precise false: bf16 activations, whose GEMM takes rows 6 at a time (5 in the precise one);
// bfloat16: the KV cache in bf16 (both: the attention's bf16 dot products on avx512).
describe.each([
  [true, 'float32'],
  [false, 'float32'],
  [true, 'bfloat16'],
  [false, 'bfloat16'],
] as const)('paging and chunking are invisible (precise %s, KV %s)', (precise, kvCacheDtype) => {
  const prompt = Int32Array.from(golden.prompts[3]!.prompt.slice(0, 40)); // crosses two block boundaries
  let paged: NativeModel;
  let contiguous: NativeModel;
  beforeAll(async () => {
    paged = (await loadModel(dir, { kvBlocks: 32, blockSize: 16, threads: 2, precise, kvCacheDtype })).model;
    contiguous = (await loadModel(dir, { kvBlocks: 1, blockSize: 64, threads: 2, precise, kvCacheDtype })).model;
  });
  afterAll(() => {
    paged.close();
    contiguous.close();
  });

  it('scattered 16-token blocks give the same logits as one contiguous buffer (bit-exact)', async () => {
    const a = await paged.forward([{ tokens: prompt, startPos: 0, blockTable: Int32Array.from([29, 3, 17]), logits: 2 }]);
    const b = await contiguous.forward([{ tokens: prompt, startPos: 0, blockTable: Int32Array.from([0]), logits: 2 }]);
    expect(maxAbsDiff(a, b)).toBe(0);
  });

  it('prefill at once, in chunks of 16 + 16 + 8, and token by token give the same logits (bit-exact)', async () => {
    const table = Int32Array.from([5, 9, 1]);
    const whole = await paged.forward([{ tokens: prompt, startPos: 0, blockTable: table, logits: 2 }]);
    const chunks: Float32Array[] = [];
    for (const [s, e] of [[0, 16], [16, 32], [32, 40]] as const)
      chunks.push(await paged.forward([{ tokens: prompt.slice(s, e), startPos: s, blockTable: table, logits: 2 }]));
    const byToken: Float32Array[] = [];
    for (let t = 0; t < prompt.length; t++)
      byToken.push(await paged.forward([{ tokens: prompt.slice(t, t + 1), startPos: t, blockTable: table, logits: 1 }]));
    const cat = (xs: Float32Array[]) => Float32Array.from(xs.flatMap((x) => Array.from(x)));
    expect(maxAbsDiff(cat(chunks), whole)).toBe(0);
    expect(maxAbsDiff(cat(byToken), whole)).toBe(0);
  });

  it('a batch of several sequences gives each the logits it gets alone (bit-exact)', async () => {
    const p = golden.prompts.map((g) => Int32Array.from(g.prompt));
    const nb = (t: Int32Array) => Math.ceil(t.length / 16);
    const alone: Float32Array[] = [];
    for (const tokens of p)
      alone.push(await paged.forward([{ tokens, startPos: 0, blockTable: scatteredBlocks(nb(tokens), 32, 3), logits: 1 }]));
    // Together: disjoint slices of one shuffled permutation of the pool.
    const perm = scatteredBlocks(32, 32, 11);
    let next = 0;
    const together = await paged.forward(
      p.map((tokens) => {
        const blockTable = perm.slice(next, next + nb(tokens));
        next += nb(tokens);
        return { tokens, startPos: 0, blockTable, logits: 1 as const };
      }),
    );
    for (let i = 0; i < p.length; i++) expect(maxAbsDiff(together.slice(i * V, (i + 1) * V), alone[i]!)).toBe(0);
  });

  it('rejects bad inputs with errors, not crashes', async () => {
    await expect(paged.forward([{ tokens: Int32Array.from([V]), startPos: 0, blockTable: Int32Array.from([0]), logits: 1 }])).rejects.toThrow(/outside the vocabulary/);
    await expect(paged.forward([{ tokens: prompt, startPos: 0, blockTable: Int32Array.from([0]), logits: 1 }])).rejects.toThrow(/block table has 1 blocks, needs 3/);
    await expect(paged.forward([{ tokens: Int32Array.from([1]), startPos: 0, blockTable: Int32Array.from([99]), logits: 1 }])).rejects.toThrow(/out of range/);
  });
});
