// `node --import tsx bench/gpu-profile.ts single|batch [concurrency]`: one phase of the GPU benchmark,
// small enough to run under `nsys profile` (bench/gpu.sh PROFILE=1 does): `single` decodes one stream
// through the model API, `batch` runs the engine's random workload at one concurrency. Prints the
// wall-clock figures and the engine's step statistics so that host time and GPU time can be set side
// by side with the profiler's kernel table.
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import { loadModel, type LoadOptions } from '../src/sidecar/model/load.js';
import { engineRun, openBenchEngine } from './engine/batching.js';
import { tokens } from './engine/single-stream.js';
import { randomWorkload, sampledWorkload } from './engine/workload.js';

const phase = process.argv[2] ?? 'single';
const concurrency = Number(process.argv[3] ?? 256);
// FAST=1: bf16 activations and a bf16 KV cache (--dtype bfloat16 --kv-cache-dtype bfloat16).
const fast: LoadOptions = process.env.FAST === '1' ? { precise: false, kvCacheDtype: 'bfloat16' } : {};
// PB=N, PMW=N: --prefill-batch / --prefill-max-wait (default 1: off, and 8).
// MBT=N: the step's token budget (--max-num-batched-tokens; 4096 as in bench/gpu.ts).
const mbt = Number(process.env.MBT ?? 4096);
const cuda: LoadOptions = { device: 'cuda', maxModelLen: 4096, maxNumSeqs: 256, maxNumBatchedTokens: mbt, ...fast };

async function single(dir: string): Promise<void> {
  const { model } = await loadModel(dir, { ...cuda, kvBlocks: 4096, enforceEager: process.env.EAGER === '1' });
  const blocks = Int32Array.from({ length: 64 }, (_, i) => i);
  await model.generateGreedy({ tokens: tokens(16, 1), blockTable: blocks }, 64);
  for (let r = 0; r < 3; r++) {
    const g = await model.generateGreedy({ tokens: tokens(16, 10 + r), blockTable: blocks }, 257);
    console.log(`single: ${(g.decodeMs / 256).toFixed(3)} ms/token (${((256 / g.decodeMs) * 1000).toFixed(0)} tok/s)`);
  }
  model.close();
}

async function batch(dir: string): Promise<void> {
  const { engine, setSink, kvBlockBytes } = await openBenchEngine(
    dir,
    { ...cuda, gpuMemoryUtilization: 0.5, captureGraphs: process.env.LAZY_GRAPHS !== '1' },
    { maxNumSeqs: Math.max(256, concurrency), maxNumBatchedTokens: mbt, maxModelLen: 4096, prefillBatch: Number(process.env.PB ?? 1), prefillMaxWait: Number(process.env.PMW ?? 8) },
  );
  await engineRun(engine, setSink, randomWorkload(16, 7), 16, 'warm-up', kvBlockBytes, 1);
  // SAMPLED=1: bench/gpu.ts's sampled run (drawn on the GPU).
  const plain = randomWorkload(3 * concurrency);
  const work = process.env.SAMPLED === '1' ? sampledWorkload(plain) : plain;
  const before = engine.stats();
  const r = await engineRun(engine, setSink, work, concurrency, `c=${concurrency}`, kvBlockBytes, 100);
  const after = engine.stats();
  console.log(`batch c=${concurrency}: ${r.outputTokS.toFixed(0)} tok/s (${r.fullTokS?.toFixed(0)} with all slots full), ${r.seconds.toFixed(2)} s, ITL p50 ${r.itlMs.p50.toFixed(2)} ms, TTFT p50 ${r.ttftMs.p50.toFixed(1)} ms`);
  console.log(`stats before ${JSON.stringify(before)}`);
  console.log(`stats after  ${JSON.stringify(after)}`);
  await engine.close();
}

async function main(): Promise<void> {
  const { dir } = await ensureFormulaCheckpoint();
  if (phase === 'single') await single(dir);
  else await batch(dir);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
