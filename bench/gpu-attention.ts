// `ERNIE_CUDA_PROFILE=1 node --import tsx bench/gpu-attention.ts prefill512|prefill4096|decodeN|mixed`
// (FAST=1: bf16 activations and KV): fixed attention shapes through the model API on the 0.3B
// formula weights, for the per-operation table the CUDA library prints when the model closes
// (attention_prefill / attention_decode_rows rows). prefill512: one 512-token prompt, 4 times;
// prefill4096: 8 such prompts in one step, 3 times; decodeN (decode256 by default): N sequences of 384 tokens,
// then 8 decode steps of all N rows; mixed: see below. Under `ncu` it gives the attention kernels' launches in isolation.
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import { loadModel } from '../src/sidecar/model/load.js';
import { tokens } from './engine/single-stream.js';

const phase = process.argv[2] ?? 'decode256';
const fast = process.env.FAST === '1' ? { precise: false, kvCacheDtype: 'bfloat16' as const } : {};
const { dir } = await ensureFormulaCheckpoint();
const { model } = await loadModel(dir, { device: 'cuda', maxModelLen: 4096, maxNumSeqs: 256, maxNumBatchedTokens: 8192, kvBlocks: 12000, ...fast });
const table = (seq: number, n: number) => Int32Array.from({ length: n }, (_, i) => seq * 40 + i);
const t0 = performance.now();
if (phase === 'prefill512') {
  for (let r = 0; r < 4; r++) await model.forward([{ tokens: tokens(512, r), startPos: 0, blockTable: table(r, 33), logits: 1 }]);
} else if (phase === 'prefill4096') {
  for (let r = 0; r < 3; r++)
    await model.forward(Array.from({ length: 8 }, (_, i) => ({ tokens: tokens(512, 10 * r + i), startPos: 0, blockTable: table(i, 33), logits: 1 as const })));
} else if (phase === 'mixed') {
  // 256 sequences of 384 tokens, then 4 steps of their 256 decode rows beside two new 256-token
  // prompts (the shape of the 256-stream workload's mixed steps).
  const ctx = 384;
  for (let b = 0; b < 256; b += 16)
    await model.forward(Array.from({ length: 16 }, (_, i) => ({ tokens: tokens(ctx, b + i), startPos: 0, blockTable: table(b + i, 26), logits: 1 as const })));
  for (let step = 0; step < 4; step++) {
    const dec = Array.from({ length: 256 }, (_, i) => ({ tokens: Int32Array.from([5 + step]), startPos: ctx + step, blockTable: table(i, 26), logits: 1 as const }));
    const pre = [0, 1].map((j) => ({ tokens: tokens(256, 1000 + 2 * step + j), startPos: 0, blockTable: table(256 + 2 * step + j, 17), logits: 1 as const }));
    await model.forward([...dec, ...pre]);
  }
} else {
  // decodeN (default decode256): N sequences of 384 tokens, then 8 decode steps of all N rows; mixed: see below.
  const rows = Number(phase.replace('decode', '') || 256);
  const ctx = 384;
  for (let b = 0; b < rows; b += 16)
    await model.forward(Array.from({ length: Math.min(16, rows - b) }, (_, i) => ({ tokens: tokens(ctx, b + i), startPos: 0, blockTable: table(b + i, 26), logits: 1 as const })));
  for (let step = 0; step < 8; step++)
    await model.forward(Array.from({ length: rows }, (_, i) => ({ tokens: Int32Array.from([5 + step]), startPos: ctx + step, blockTable: table(i, 26), logits: 1 as const })));
}
console.log(`${phase}: ${(performance.now() - t0).toFixed(1)} ms`);
model.close();
