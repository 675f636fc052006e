// `npm run bench:engine`: the engine on the ERNIE-4.5-0.3B shape (formula weights), results in
// bench/results/engine.json.
//   1. single stream: decode and prefill against the memory-bound ceiling measured in the same run;
//   2. the article's 5 prompts (256 new tokens): naive one-at-a-time baseline vs the engine;
//   3. a random workload (prompts 32-512, 64-256 new tokens) at concurrency 1..128 vs the baseline;
//   4. llama.cpp side by side (./engine/llama-side.ts; skipped, with a line saying how to install it,
//      when the bench package is not installed), also into bench/results/llama.json.
// `--quick` runs fewer requests per level (and caps new tokens at 64 in the side-by-side);
// `--llama-only` runs only the side-by-side (ours and llama.cpp) and writes only llama.json;
// `--dtype bfloat16` runs ours with bf16 activations and KV cache (results in engine-bf16.json / llama-bf16.json).
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import { loadModel } from '../src/sidecar/model/load.js';
import { native } from '../src/sidecar/native.js';
import { engineRun, naive, openBenchEngine, type BenchEngine, type RunResult } from './engine/batching.js';
import { compare, oursLevels, runLlamaSide, type OursSide } from './engine/llama-side.js';
import { singleStream, type SingleStreamResult } from './engine/single-stream.js';
import { articleWorkload, randomWorkload } from './engine/workload.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const llamaOnly = process.argv.includes('--llama-only');
// --dtype bfloat16: our engine at llama.cpp's precision: plain bf16 activations (its and vLLM's)
// instead of the default fp32-grade two-plane GEMM inputs, and a 16-bit KV cache (bf16; llama.cpp's
// default is f16) instead of fp32; results go to *-bf16.json.
const dtypeArg = process.argv[process.argv.indexOf('--dtype') + 1];
const precise = !(process.argv.includes('--dtype') && dtypeArg === 'bfloat16');
const kvCacheDtype = precise ? 'float32' : 'bfloat16';
const suffix = precise ? '' : '-bf16';
const f1 = (x: number) => x.toFixed(1);
const f0 = (x: number) => x.toFixed(0);

function row(r: RunResult, base?: RunResult): string {
  const ratio = base ? ` x${(r.outputTokS / base.outputTokS).toFixed(1)}` : '';
  const kv = r.peakKvBytes !== undefined ? ` kv ${f0(r.peakKvBytes / 2 ** 20)} MiB` : '';
  const pre = r.preemptions ? ` preempt ${r.preemptions}` : '';
  return `  ${r.label.padEnd(22)} ${f1(r.outputTokS).padStart(7)} tok/s${ratio.padEnd(7)} TTFT p50/p99 ${f0(r.ttftMs.p50)}/${f0(r.ttftMs.p99)} ms  ITL p50/p99 ${f1(r.itlMs.p50)}/${f1(r.itlMs.p99)} ms${kv}${pre}`;
}


// NOTE: prefix caching off. The levels of one engine reuse the same requests (level c runs the
// workload's first requests, as do the levels before it, and the side-by-side gives llama.cpp the
// same), so with it on a level found the earlier levels' prompts cached: 1,600 of the 32-stream
// wave's prompt tokens, half the 64-stream wave's; llama.cpp, on a fresh context per level,
// recomputed them. Within a level no two prompts share a block, so off changes nothing else.
function openEngine(dir: string): Promise<BenchEngine> {
  return openBenchEngine(dir, { kvCacheMemory: 4 * 2 ** 30, precise, kvCacheDtype }, { maxNumSeqs: 256, maxNumBatchedTokens: 512, maxModelLen: 4096, enablePrefixCaching: false });
}

/** 2-3. naive baseline (one contiguous 1024-token KV buffer) vs the engine: the article and the random workload. */
async function engineSections(dir: string, single: SingleStreamResult) {
  const { model: flat } = await loadModel(dir, { kvBlocks: 1, blockSize: 1024, precise, kvCacheDtype });
  const { engine, setSink, kvBlockBytes, nextIds } = await openEngine(dir);

  const article = await articleWorkload(256);
  console.log(`\nthe article's 5 prompts, 256 new tokens each (prompts ${article.map((r) => r.prompt.length).join('/')} tokens)`);
  const artNaive = await naive(flat, article, 'naive, one at a time');
  console.log(row(artNaive));
  const artEngine = await engineRun(engine, setSink, article, 5, 'engine, all 5 at once', kvBlockBytes, nextIds(5));
  console.log(row(artEngine, artNaive));

  const levels = [1, 8, 32, 64, 128];
  const work = randomWorkload(256);
  const avgIn = work.reduce((a, r) => a + r.prompt.length, 0) / work.length;
  const avgOut = work.reduce((a, r) => a + r.maxTokens, 0) / work.length;
  // Physical limit: if every token (prompt and output) ran at the measured prefill rate.
  const computeLimit = (single.prefillTokS * avgOut) / (avgIn + avgOut);
  console.log(`\nrandom workload: prompts 32-512 (avg ${f0(avgIn)}), 64-256 new tokens (avg ${f0(avgOut)})`);
  console.log(`  compute limit at the measured prefill rate: ${f0(computeLimit)} output tok/s`);
  // The machine's own ceiling: its peak multiply-add rate (all threads) over the FLOPs of the
  // workload's tokens: 2 per weight (the lm_head only for output tokens), twice with the precise
  // planes; attention left out (a lower bound on the FLOPs, so an upper bound on tok/s).
  const cfg = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8')) as { vocab_size: number; hidden_size: number };
  const lmHead = cfg.vocab_size * cfg.hidden_size;
  const layers = single.weightBytesPerToken / 2 - lmHead;
  const planes = precise ? 2 : 1;
  const flopPerOutput = (2 * planes * (layers * (avgIn + avgOut) + lmHead * avgOut)) / avgOut;
  const peakFlops = flat.computePeak();
  const peakLimit = peakFlops / flopPerOutput;
  console.log(`  machine ceiling: ${f0(peakFlops / 1e9)} GFLOP/s peak multiply-add on all threads / ${(flopPerOutput / 1e9).toFixed(2)} GFLOP per output token (its share of the prompts included) = ${f0(peakLimit)} output tok/s`);
  const baseN = quick ? 4 : 8;
  const rndNaive = await naive(flat, work.slice(0, baseN), `naive (${baseN} requests)`);
  console.log(row(rndNaive));
  const runs: RunResult[] = [];
  for (const c of levels) {
    const n = Math.min(work.length, Math.max(quick ? 4 : 8, (quick ? 1 : 2) * c));
    const r = await engineRun(engine, setSink, work.slice(0, n), c, `engine c=${c} (${n} req)`, kvBlockBytes, nextIds(n));
    runs.push(r);
    console.log(row(r, rndNaive));
  }
  await engine.close();
  flat.close();
  return {
    article: { naive: artNaive, engine: artEngine, speedup: artEngine.outputTokS / artNaive.outputTokS },
    random: { avgPromptTokens: avgIn, avgOutputTokens: avgOut, computeLimitTokS: computeLimit, peakGflops: peakFlops / 1e9, peakLimitTokS: peakLimit, naive: rndNaive, engine: runs },
  };
}

/** 4. llama.cpp side by side: ours on a fresh engine (nothing else loaded), then llama.cpp in its own process. */
async function sideBySide(dir: string, single: SingleStreamResult, threads: number) {
  const { engine, setSink, kvBlockBytes, nextIds } = await openEngine(dir);
  const article = await engineRun(engine, setSink, await articleWorkload(256), 5, 'engine, all 5 at once', kvBlockBytes, nextIds(5));
  const ours: OursSide = { decodeTokS: single.decodeTokS, prefillTokS: single.prefillTokS, article, levels: await oursLevels(engine, setSink, kvBlockBytes, nextIds, quick) };
  await engine.close();
  const llama = await runLlamaSide(threads, quick);
  if (!llama) return null;
  const rows = compare(ours, llama);
  const out = { date: new Date().toISOString(), quick, oursActivations: precise ? 'float32' : 'bfloat16', oursKvCache: kvCacheDtype, ours, llama, comparison: rows };
  await writeFile(path.join(here, 'results', `llama${suffix}.json`), JSON.stringify(out, null, 2) + '\n');
  console.log(`wrote bench/results/llama${suffix}.json`);
  // The summary engine.json carries; the full figures are in llama.json.
  return {
    results: `llama${suffix}.json`, nodeLlamaCpp: llama.nodeLlamaCpp, threads: llama.threads,
    greedy: { freeRunMatch: llama.greedy.freeRunMatch, teacherForcedMatch: llama.greedy.teacherForcedMatch, steps: llama.greedy.steps },
    comparison: rows.map(({ what, ours: o, llama: l, ratio }) => ({ what, ours: o, llama: l, ratio })),
  };
}

async function main(): Promise<void> {
  const { dir } = await ensureFormulaCheckpoint(undefined, {
    onProgress: (d, t) => process.stderr.write(`\rgenerating formula weights ${((100 * d) / t).toFixed(0)}%`),
  });
  process.stderr.write('\n');
  const cpu = native().cpuInfo();
  await mkdir(path.join(here, 'results'), { recursive: true });

  // 1. single stream
  const { model } = await loadModel(dir, { kvBlocks: 256, blockSize: 16, precise, kvCacheDtype });
  const info = model.info();
  console.log(`engine: ${info.isa}, ${info.threads} threads, weights ${(info.weightBytes / 1e6).toFixed(0)} MB (bf16), activations ${precise ? 'fp32-grade (two bf16 planes)' : 'bf16'}, KV cache ${kvCacheDtype}`);
  const single = await singleStream(model, { decodeTokens: 128, prefillTokens: 512, runs: 3 });
  model.close();
  console.log('\nsingle stream (0.3B shape, formula weights)');
  console.log(`  read bandwidth        ${f1(single.readBandwidthGBs)} GB/s (engine thread pool, same run)`);
  console.log(`  memory-bound ceiling  ${f1(single.ceilingTokS)} tok/s (${(single.weightBytesPerToken / 1e6).toFixed(0)} MB per token)`);
  console.log(`  decode                ${f1(single.decodeTokS)} tok/s = ${(100 * single.decodeFractionOfCeiling).toFixed(0)}% of ceiling (${single.decodeMsPerToken.toFixed(1)} ms/token)`);
  console.log(`  prefill (512 tokens)  ${f1(single.prefillTokS)} tok/s`);

  if (llamaOnly) {
    await sideBySide(dir, single, info.threads);
    return;
  }
  const sections = await engineSections(dir, single);
  const llamaCpp = await sideBySide(dir, single, info.threads);
  const out = {
    date: new Date().toISOString(),
    machine: { cpus: os.cpus()[0]?.model, cores: cpu.cores, isa: info.isa, threads: info.threads },
    activations: precise ? 'float32' : 'bfloat16',
    kvCache: kvCacheDtype,
    singleStream: single,
    ...sections,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    targets: { decodeFractionOfCeiling: 0.85, prefillTokS: 500, tokS64: 1000, speedupVsNaive: 30, ttftP50At32Ms: 1000 },
    llamaCppFromIssue: { decodeTokS: 20, prefillTokS: 190, batched8TokS: 28, batched32TokS: 31 },
    ...(llamaCpp ? { llamaCpp } : {}),
  };
  await writeFile(path.join(here, 'results', `engine${suffix}.json`), JSON.stringify(out, null, 2) + '\n');
  console.log(`\npeak RSS ${f0(out.peakRssBytes / 2 ** 20)} MiB; wrote bench/results/engine${suffix}.json`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
