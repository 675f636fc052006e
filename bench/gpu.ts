// `node --import tsx bench/gpu.ts [outDir]`: the engine's CUDA backend on the ERNIE-4.5-0.3B shape
// (formula weights) on a GPU, the article's workloads, results in bench/results/gpu.json (and
// outDir). Also writes the prompts and checkpoint path for bench/hf_generate.py, which runs HF
// transformers `generate` on the same prompts (bench/gpu.sh runs both and merges the results).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import type { EngineOptions } from '../src/sidecar/engine/native-engine.js';
import { loadModel, type LoadOptions } from '../src/sidecar/model/load.js';
import { engineRun, openBenchEngine, type RunResult } from './engine/batching.js';
import { tokens } from './engine/single-stream.js';
import { articleWorkload, type BenchRequest, randomWorkload, sampledWorkload } from './engine/workload.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2] ?? path.join(here, 'results');
const HBM_BYTES_PER_S = 4.8e12; // H200 datasheet
const f1 = (x: number) => x.toFixed(1);
const f0 = (x: number) => x.toFixed(0);

function row(r: RunResult, ceiling?: number): string {
  const c = ceiling ? `  (weight-bandwidth ceiling ${f0(ceiling)} tok/s)` : '';
  const full = r.fullTokS ? ` (${f0(r.fullTokS)} with all slots full)` : '';
  return `  ${r.label.padEnd(26)} ${f0(r.outputTokS).padStart(8)} tok/s${full}  TTFT p50/p99 ${f1(r.ttftMs.p50)}/${f1(r.ttftMs.p99)} ms  ITL p50/p99 ${r.itlMs.p50.toFixed(2)}/${r.itlMs.p99.toFixed(2)} ms${c}`;
}

// Prefix caching off, as in bench/engine.ts: the levels of one engine reuse the same requests
// (level c runs the workload's first 3c, the levels before it ran the first ones too, the sampled
// run all 768, and the article's 5 prompts run twice), so with it on a level found the earlier
// levels' prompts cached. Measured on the H200 (bf16, 256 streams): 98.4k tok/s with it on, where
// half of the 768 prompts had run at 128 streams, against 88-90k for fresh prompts
// (bench/gpu-profile.ts). Within a level no two prompts share a block, so off changes nothing else.
const engineOpts = { maxNumBatchedTokens: 4096, maxModelLen: 4096, enablePrefixCaching: false };

/** One precision configuration: the model API alone (single stream), then the batching engine. */
async function suite(dir: string, cuda: LoadOptions, tag: string) {
  // 1. single stream through the model API (no scheduler): decode and prefill.
  const { model } = await loadModel(dir, { ...cuda, kvBlocks: 4096 });
  const info = model.info();
  const weightBytes = info.weightBytes;
  const stepCeiling = HBM_BYTES_PER_S / weightBytes; // decode steps/s if only the weights were read
  console.log(`[${tag}] device ${info.cuda!.deviceName}; weights ${(weightBytes / 1e6).toFixed(0)} MB bf16 -> ceiling ${f0(stepCeiling)} steps/s at 4.8 TB/s`);
  const blocks = Int32Array.from({ length: 64 }, (_, i) => i);
  await model.generateGreedy({ tokens: tokens(16, 1), blockTable: blocks }, 64); // warm-up: graphs, cuBLAS
  const decode: number[] = [];
  const prefill: number[] = [];
  for (let r = 0; r < 3; r++) {
    const g = await model.generateGreedy({ tokens: tokens(16, 10 + r), blockTable: blocks }, 257);
    decode.push((256 / g.decodeMs) * 1000);
    const t0 = performance.now();
    await model.forward([{ tokens: tokens(512, 20 + r), startPos: 0, blockTable: blocks, logits: 1 }]);
    prefill.push((512 / (performance.now() - t0)) * 1000);
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[1]!;
  const gpuBytesUsedAfterLoad = model.info().cuda!.gpuBytesUsed; // weights + 4096 KV blocks + step buffers
  const single = { decodeTokS: med(decode), tpotMs: 1000 / med(decode), prefill512TokS: med(prefill), ceilingTokS: stepCeiling, runs: { decode, prefill } };
  console.log(`[${tag}] single stream: decode ${f0(single.decodeTokS)} tok/s (TPOT ${single.tpotMs.toFixed(3)} ms; ceiling ${f0(stepCeiling)}), prefill 512 tokens ${f0(single.prefill512TokS)} tok/s; graph steps ${model.info().cuda!.graphSteps}`);
  model.close();

  // 2-3. the engine (continuous batching, paged KV on the GPU, device argmax for greedy).
  // As the sidecar does: every CUDA graph captured while loading, none inside a measured step.
  const tLoad = performance.now();
  const { engine, setSink, load: lo, kvBlockBytes, nextIds } = await openBenchEngine(
    dir,
    { ...cuda, gpuMemoryUtilization: 0.5, captureGraphs: true },
    { ...engineOpts, maxNumSeqs: 256 },
  );
  const engineLoadS = (performance.now() - tLoad) / 1000;
  const kvBlocks = engine.stats().kvBlocksTotal;
  console.log(`[${tag}] engine: ${kvBlocks} KV blocks (${((kvBlocks * kvBlockBytes) / 2 ** 30).toFixed(1)} GiB, ${lo.kvCacheDtype} K/V); loaded with its CUDA graphs in ${engineLoadS.toFixed(2)} s`);
  await engineRun(engine, setSink, randomWorkload(16, 7), 16, 'warm-up', kvBlockBytes, nextIds(16));

  const article = await articleWorkload(256);
  const art1 = await engineRun(engine, setSink, article, 1, 'article, one at a time', kvBlockBytes, nextIds(5));
  console.log(row(art1, stepCeiling));
  const art5 = await engineRun(engine, setSink, article, 5, 'article, all 5 at once', kvBlockBytes, nextIds(5));
  console.log(row(art5, 5 * stepCeiling));

  const work = randomWorkload(768);
  const runs: (RunResult & { concurrency: number; ceilingTokS: number })[] = [];
  for (const c of [1, 8, 32, 128, 256]) {
    const n = Math.min(work.length, Math.max(8, 3 * c));
    const r = await engineRun(engine, setSink, work.slice(0, n), c, `random c=${c} (${n} req)`, kvBlockBytes, nextIds(n));
    runs.push({ ...r, concurrency: c, ceilingTokS: c * stepCeiling });
    console.log(row(r, c * stepCeiling));
  }
  // The same 256 streams sampled (sampledWorkload): drawn on the GPU, ids only cross PCIe.
  const sampledWork = sampledWorkload(work);
  const sampled = await engineRun(engine, setSink, sampledWork, 256, 'random c=256 sampled (768 req)', kvBlockBytes, nextIds(768));
  console.log(row(sampled, 256 * stepCeiling));
  await engine.close();

  // One more workload on an engine of its own (warmed up, run, closed), as the sidecar would open it.
  const onFreshEngine = async (opts: Partial<EngineOptions> & { maxNumSeqs: number }, reqs: BenchRequest[], c: number, label: string) => {
    const e = await openBenchEngine(dir, { ...cuda, gpuMemoryUtilization: 0.5, captureGraphs: true }, { ...engineOpts, ...opts });
    await engineRun(e.engine, e.setSink, randomWorkload(16, 7), 16, 'warm-up', e.kvBlockBytes, e.nextIds(16));
    const r = { ...(await engineRun(e.engine, e.setSink, reqs, c, label, e.kvBlockBytes, e.nextIds(reqs.length))), concurrency: c, ceilingTokS: c * stepCeiling };
    console.log(row(r, c * stepCeiling));
    await e.engine.close();
    return r;
  };
  // 4. 512 streams (the target reads "256+"): an engine sized for 512 sequences, 1,536 requests of
  // the same random workload.
  const c512 = await onFreshEngine({ maxNumSeqs: 512 }, randomWorkload(1536), 512, 'random c=512 (1536 req)');
  // 5. 256 streams again with --prefill-batch 16 (new prompts wait, at most 8 steps, until 16 are
  // queued while a quarter of the sequences decode, and are prefilled together): fewer, larger
  // mixed steps, a longer TTFT.
  const pb16 = await onFreshEngine({ maxNumSeqs: 256, prefillBatch: 16 }, work, 256, 'c=256 --prefill-batch 16');
  return {
    info,
    weightBytes,
    stepCeiling,
    result: {
      singleStream: single,
      kv: { blocks: kvBlocks, bytes: kvBlocks * kvBlockBytes, dtype: lo.kvCacheDtype, gpuMemoryUtilization: 0.5 },
      engineLoadS,
      article: { oneAtATime: art1, allAtOnce: art5, prompts: article.map((r) => r.prompt.length) },
      random: runs,
      sampledC256: sampled,
      randomC512: c512,
      prefillBatch16C256: pb16,
      gpuBytesUsedAfterLoad,
    },
    work,
    article,
  };
}

async function main(): Promise<void> {
  const { dir } = await ensureFormulaCheckpoint();
  const base: LoadOptions = { device: 'cuda', maxModelLen: 4096, maxNumSeqs: 256, maxNumBatchedTokens: 4096 };
  // The default (fp32-grade activations, fp32 KV) and what vLLM / HF in bf16 compute, side by side.
  const exact = await suite(dir, base, 'float32');
  const bf16 = await suite(dir, { ...base, precise: false, kvCacheDtype: 'bfloat16' }, 'bfloat16');

  const out = {
    date: new Date().toISOString(),
    device: exact.info.cuda!.deviceName,
    weightBytes: exact.weightBytes,
    hbmBytesPerS: HBM_BYTES_PER_S,
    note: 'ceilings: weight bytes per step / 4.8 TB/s (KV reads ignored), x concurrency; greedy, no stop tokens. Top level: default precision (--dtype float32: activations as two bf16 planes, fp32 KV). bf16: --dtype bfloat16 --kv-cache-dtype bfloat16, the precision of vLLM / HF generate in bf16',
    ...exact.result,
    bf16: bf16.result,
    targets: { singleStreamTokS: 1000, tpotMs: 1, tokSAt256: 100000, ttftMsAtC1: 20 },
  };
  await mkdir(outDir, { recursive: true });
  await writeFile(path.join(outDir, 'gpu.json'), JSON.stringify(out, null, 2) + '\n');
  // What bench/hf_generate.py needs: the same checkpoint and prompts.
  await writeFile(
    path.join(outDir, 'hf_input.json'),
    JSON.stringify({ dir, article: exact.article.map((r) => Array.from(r.prompt)), random: exact.work.slice(0, 256).map((r) => Array.from(r.prompt)) }),
  );
  console.log(`wrote ${path.join(outDir, 'gpu.json')}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
