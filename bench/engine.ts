// `npm run bench:engine`: the engine on the ERNIE-4.5-0.3B shape (formula weights), results in
// bench/results/engine.json.
//   1. single stream: decode and prefill against the memory-bound ceiling measured in the same run;
//   2. the article's 5 prompts (256 new tokens): naive one-at-a-time baseline vs the engine;
//   3. a random workload (prompts 32-512, 64-256 new tokens) at concurrency 1..128 vs the baseline.
// `--quick` runs fewer requests per level.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StepOutput } from '../src/sidecar/engine/native-engine.js';
import { readCheckpoint } from '../src/sidecar/model/checkpoint.js';
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import { loadModel, nativeLoadOptions } from '../src/sidecar/model/load.js';
import { native } from '../src/sidecar/native.js';
import { engineRun, naive, type RunResult } from './engine/batching.js';
import { singleStream } from './engine/single-stream.js';
import { articleWorkload, randomWorkload } from './engine/workload.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const f1 = (x: number) => x.toFixed(1);
const f0 = (x: number) => x.toFixed(0);

function row(r: RunResult, base?: RunResult): string {
  const ratio = base ? ` x${(r.outputTokS / base.outputTokS).toFixed(1)}` : '';
  const kv = r.peakKvBytes !== undefined ? ` kv ${f0(r.peakKvBytes / 2 ** 20)} MiB` : '';
  const pre = r.preemptions ? ` preempt ${r.preemptions}` : '';
  return `  ${r.label.padEnd(22)} ${f1(r.outputTokS).padStart(7)} tok/s${ratio.padEnd(7)} TTFT p50/p99 ${f0(r.ttftMs.p50)}/${f0(r.ttftMs.p99)} ms  ITL p50/p99 ${f1(r.itlMs.p50)}/${f1(r.itlMs.p99)} ms${kv}${pre}`;
}

async function main(): Promise<void> {
  const { dir } = await ensureFormulaCheckpoint(undefined, {
    onProgress: (d, t) => process.stderr.write(`\rgenerating formula weights ${((100 * d) / t).toFixed(0)}%`),
  });
  process.stderr.write('\n');
  const cpu = native().cpuInfo();

  // 1. single stream
  const { model } = await loadModel(dir, { kvBlocks: 256, blockSize: 16 });
  const info = model.info();
  console.log(`engine: ${info.isa}, ${info.threads} threads, weights ${(info.weightBytes / 1e6).toFixed(0)} MB (bf16)`);
  const single = await singleStream(model, { decodeTokens: 128, prefillTokens: 512, runs: 3 });
  model.close();
  console.log('\nsingle stream (0.3B shape, formula weights)');
  console.log(`  read bandwidth        ${f1(single.readBandwidthGBs)} GB/s (engine thread pool, same run)`);
  console.log(`  memory-bound ceiling  ${f1(single.ceilingTokS)} tok/s (${(single.weightBytesPerToken / 1e6).toFixed(0)} MB per token)`);
  console.log(`  decode                ${f1(single.decodeTokS)} tok/s = ${(100 * single.decodeFractionOfCeiling).toFixed(0)}% of ceiling (${single.decodeMsPerToken.toFixed(1)} ms/token)`);
  console.log(`  prefill (512 tokens)  ${f1(single.prefillTokS)} tok/s`);

  // 2-3. naive baseline (one contiguous 1024-token KV buffer) vs the engine
  const { model: flat } = await loadModel(dir, { kvBlocks: 1, blockSize: 1024 });
  const ck = await readCheckpoint(dir);
  const lo = nativeLoadOptions(ck, { kvCacheMemory: 4 * 2 ** 30 });
  let sink: (o: StepOutput[]) => void = () => {};
  const engine = await native().createEngine(lo, { maxNumSeqs: 256, maxNumBatchedTokens: 512, maxModelLen: 4096 }, (o) => sink(o));
  const setSink = (f: (o: StepOutput[]) => void) => (sink = f);
  let idBase = 1;
  const nextIds = (n: number) => ((idBase += n), idBase - n);

  const article = await articleWorkload(256);
  console.log(`\nthe article's 5 prompts, 256 new tokens each (prompts ${article.map((r) => r.prompt.length).join('/')} tokens)`);
  const artNaive = await naive(flat, article, 'naive, one at a time');
  console.log(row(artNaive));
  const artEngine = await engineRun(engine, setSink, article, 5, 'engine, all 5 at once', lo.kvBlockBytes, nextIds(5));
  console.log(row(artEngine, artNaive));

  const levels = [1, 8, 32, 64, 128];
  const work = randomWorkload(256);
  const avgIn = work.reduce((a, r) => a + r.prompt.length, 0) / work.length;
  const avgOut = work.reduce((a, r) => a + r.maxTokens, 0) / work.length;
  // Physical limit: if every token (prompt and output) ran at the measured prefill rate.
  const computeLimit = (single.prefillTokS * avgOut) / (avgIn + avgOut);
  console.log(`\nrandom workload: prompts 32-512 (avg ${f0(avgIn)}), 64-256 new tokens (avg ${f0(avgOut)})`);
  console.log(`  compute limit at the measured prefill rate: ${f0(computeLimit)} output tok/s`);
  const baseN = quick ? 4 : 8;
  const rndNaive = await naive(flat, work.slice(0, baseN), `naive (${baseN} requests)`);
  console.log(row(rndNaive));
  const runs: RunResult[] = [];
  for (const c of levels) {
    const n = Math.min(work.length, Math.max(quick ? 4 : 8, (quick ? 1 : 2) * c));
    const r = await engineRun(engine, setSink, work.slice(0, n), c, `engine c=${c} (${n} req)`, lo.kvBlockBytes, nextIds(n));
    runs.push(r);
    console.log(row(r, rndNaive));
  }
  await engine.close();
  flat.close();

  const out = {
    date: new Date().toISOString(),
    machine: { cpus: os.cpus()[0]?.model, cores: cpu.cores, isa: info.isa, threads: info.threads },
    singleStream: single,
    article: { naive: artNaive, engine: artEngine, speedup: artEngine.outputTokS / artNaive.outputTokS },
    random: { avgPromptTokens: avgIn, avgOutputTokens: avgOut, computeLimitTokS: computeLimit, naive: rndNaive, engine: runs },
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    targets: { decodeFractionOfCeiling: 0.85, prefillTokS: 500, tokS64: 1000, speedupVsNaive: 30, ttftP50At32Ms: 1000 },
    llamaCppFromIssue: { decodeTokS: 20, prefillTokS: 190, batched8TokS: 28, batched32TokS: 31 },
  };
  await mkdir(path.join(here, 'results'), { recursive: true });
  await writeFile(path.join(here, 'results', 'engine.json'), JSON.stringify(out, null, 2) + '\n');
  console.log(`\npeak RSS ${f0(out.peakRssBytes / 2 ** 20)} MiB; wrote bench/results/engine.json`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
