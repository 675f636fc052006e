// `npm run bench:engine:cpu`: the CPU GEMM paths side by side on the ERNIE-4.5-0.3B shape (formula
// weights), same run: the paths of ./engine/cpu-paths.ts. `--paths 1,2,0` runs only those (indices,
// in that order).
// Rows per path and --threads value (comma list, run in that order): single-stream decode and prefill
// of 512 tokens (beside the bandwidth ceiling and the kernels' measured peak); at the largest thread
// count also the article's 5 prompts at once and one wave per --levels value (default 32,64) of the
// random workload (the llama.cpp side-by-side's requests; --quick caps new tokens at 64, the article's
// too), each beside the compute limit at the path's measured prefill rate (`--no-wave` leaves the
// batched rows out, `--no-article` the article; `--wave-paths 1,2` gives them to those paths only).
// At the largest thread count each path's accuracy on the formula-0.3b golden prompts is measured too.
// After our paths at each thread count, where the bench package is installed (bench/llama/node-llama.ts),
// llama.cpp on the same weights in its own process per GGUF (bench/llama/cpu-side.ts; `--llama bf16,q8_0`,
// the default, or `--no-llama`): the same rows, and its accuracy at the largest thread count
// (`--llama-batched-only`: its article and waves only; on a loaded host llama.cpp's spinning threads
// make its single-stream rows crawl).
// `--budget-s N`: rows not started within N seconds are listed as skipped instead of measured.
// Output: --out FILE (default bench/results/cpu-int8.json) with --host naming the host kind. The JSON
// records the host's load (bench/engine/host-load.ts) and is marked `valid: false` when other processes
// took a share of the cores while it ran.
import { spawnSync } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import { kernelNames, loadModel } from '../src/sidecar/model/load.js';
import { native } from '../src/sidecar/native.js';
import { engineAccuracy, formulaGolden, type PromptAccuracy } from './engine/accuracy.js';
import { engineRun, formatPhases, openBenchEngine, type RunResult } from './engine/batching.js';
import { cpuPaths, type CpuPath } from './engine/cpu-paths.js';
import { watchHostLoad, type HostLoad } from './engine/host-load.js';
import { singleStream } from './engine/single-stream.js';
import { articleWorkload, sideBySideWorkload, type BenchRequest } from './engine/workload.js';
import { llamaRatios, rowValues, type OursCpuRow } from './llama/cpu-compare.js';
import type { LlamaCpuRow, LlamaSideOutput } from './llama/cpu-side.js';
import { INSTALL_HINT, nodeLlamaInstalled } from './llama/node-llama.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (k: string) => (process.argv.includes(k) ? process.argv[process.argv.indexOf(k) + 1] : undefined);
const list = (s: string) => s.split(',').filter(Boolean);
const quick = process.argv.includes('--quick');
const threadsList = list(arg('--threads') ?? String(os.availableParallelism())).map(Number);
const levels = list(arg('--levels') ?? '32,64').map(Number);
const noWave = process.argv.includes('--no-wave');
const noArticle = process.argv.includes('--no-article');
const llamaWeights = process.argv.includes('--no-llama') ? [] : list(arg('--llama') ?? 'bf16,q8_0');
const llamaSingles = !process.argv.includes('--llama-batched-only');
const deadline = arg('--budget-s') ? Date.now() + Number(arg('--budget-s')) * 1000 : Infinity;
const out = arg('--out') ?? path.join(here, 'results', 'cpu-int8.json');
const host = arg('--host') ?? os.cpus()[0]?.model ?? 'unknown';
const cpu = native().cpuInfo();

type Path = CpuPath;
const paths = cpuPaths(cpu);
const pick = (s: string | undefined) => (s ? list(s).map((i) => paths[Number(i)]).filter((p): p is Path => p !== undefined) : paths);
const chosen = pick(arg('--paths'));
const batchedPaths = new Set(pick(arg('--wave-paths')).map((p) => p.name));

/** A batched row (the article, a wave) beside the compute limit at the same side's prefill rate. */
type Batched = RunResult & { computeLimitTokS?: number };
interface Row extends OursCpuRow {
  kernels: string;
  peakOpsPerS: number;
  accuracy?: PromptAccuracy[];
  article?: Batched;
  waves?: { concurrency: number; result: Batched }[];
}

/**
 * Output tok/s if every token of `reqs` (prompt and output) ran at the measured prefill rate: the
 * batched rows' compute ceiling on this host for that side's kernels (attention's growth left out).
 */
function computeLimit(reqs: BenchRequest[], prefillTokS: number | undefined): number | undefined {
  if (!prefillTokS) return undefined;
  const inTok = reqs.reduce((a, r) => a + r.prompt.length, 0), outTok = reqs.reduce((a, r) => a + r.maxTokens, 0);
  return (prefillTokS * outTok) / (inTok + outTok);
}

const dir = (await ensureFormulaCheckpoint()).dir;
const golden = formulaGolden(); // the formula checkpoint is the golden's weights (same config, salt 0)
const article = await articleWorkload(quick ? 64 : 256);
const rows: Row[] = [];
const maxThreads = Math.max(...threadsList);
const load = watchHostLoad();
const llamaCpp: Record<string, LlamaSideOutput | { skipped: string }> = {};
const skipped: string[] = [];
let ratios: Record<string, number> = {};
const result = (hostLoad?: HostLoad) => ({
  host, cpu, quick, articleNewTokens: article[0]!.maxTokens, loadAverage: os.loadavg(), hostLoad, valid: hostLoad?.valid, date: new Date().toISOString(),
  rows, llamaCpp, skipped, ratios,
});
const save = () => writeFile(out, JSON.stringify(result(), null, 1) + '\n'); // a partial file if cut short
const late = (what: string) => Date.now() > deadline && (skipped.push(what), console.log(`skipped ${what}: past --budget-s`), true);
const tokS = (r: RunResult) => `${r.outputTokS.toFixed(1)} tok/s (TTFT p50 ${(r.ttftMs.p50 / 1000).toFixed(1)} s)`;
/** A run's wall time by phase (s), from the runner's profile. */
const phases = (r: Batched) => (r.profileMs ? `\n    ${formatPhases(r.profileMs)} of ${r.seconds.toFixed(1)}` : '');
const limit = (r: Batched) => (r.computeLimitTokS ? `, limit ${r.computeLimitTokS.toFixed(0)}` : '');

/** Our path at `threads`: single stream (+ accuracy and the batched rows at the largest thread count). */
async function oursRow(p: Path, threads: number): Promise<void> {
  const opts = { isa: p.isa, quantization: p.quantization, precise: p.precise, lmHeadPrecise: p.lmHeadPrecise, kvCacheDtype: p.kvCacheDtype, threads };
  const { model } = await loadModel(dir, { ...opts, kvBlocks: 64, blockSize: 16 });
  const single = await singleStream(model, { decodeTokens: 64, prefillTokens: 512, runs: 3 });
  const peakOpsPerS = model.computePeak();
  const accuracy = threads === maxThreads ? await engineAccuracy(model, golden) : undefined;
  model.close();
  const row: Row = { path: p.name, kernels: kernelNames({ device: 'cpu', ...opts }, cpu), threads, single, peakOpsPerS, accuracy };
  rows.push(row);
  await save();
  console.log(
    `${p.name.padEnd(24)} t=${threads} ${row.kernels}\n  decode ${single.decodeTokS.toFixed(1)} tok/s (ceiling ${single.ceilingTokS.toFixed(0)}), prefill 512 ${single.prefillTokS.toFixed(0)} tok/s, peak ${(peakOpsPerS / 1e12).toFixed(2)} Tops/s` +
      (accuracy ? `\n  formula-0.3b: max |Δ logit| ${accuracy.map((x) => x.maxAbsLogitDiff!.toFixed(3)).join(' / ')}, |Δ log-prob| ${accuracy.map((x) => x.maxAbsLogProbDiff.toFixed(3)).join(' / ')}, greedy ${accuracy.map((x) => `${x.greedyPrefix}/${x.steps}`).join(' ')}` : ''),
  );
  if (threads !== maxThreads || noWave || !batchedPaths.has(p.name)) return;
  const { engine, setSink, kvBlockBytes, nextIds } = await openBenchEngine(dir, { ...opts, kvCacheMemory: 2 * 2 ** 30 }, { maxNumSeqs: 256, maxNumBatchedTokens: 512, maxModelLen: 4096, enablePrefixCaching: false });
  const batched = async (reqs: BenchRequest[], label: string): Promise<Batched> =>
    ({ ...(await engineRun(engine, setSink, reqs, reqs.length, label, kvBlockBytes, nextIds(reqs.length))), computeLimitTokS: computeLimit(reqs, single.prefillTokS) });
  if (!noArticle && !late(`${p.name} t=${threads} article`)) {
    row.article = await batched(article, "article's 5 prompts at once");
    console.log(`  article's 5 prompts ${tokS(row.article)}${limit(row.article)}`);
    await save();
  }
  for (const c of levels) {
    if (late(`${p.name} t=${threads} wave ${c}`)) continue;
    const result = await batched(sideBySideWorkload(c, quick), `random wave, ${c} streams`);
    (row.waves ??= []).push({ concurrency: c, result });
    console.log(`  ${c}-stream wave ${tokS(result)}${limit(result)}${phases(result)}`);
    await save();
  }
  await engine.close();
}

/**
 * llama.cpp with the `weights` GGUF at `threads`, in its own process; its rows join llamaCpp[weights].
 * `part`: 'single' (single stream, and accuracy at the largest thread count), 'batched' (the article and
 * the waves, at the largest thread count) or 'all'.
 */
async function llamaRows(weights: string, threads: number, part: 'single' | 'batched' | 'all'): Promise<void> {
  if (!nodeLlamaInstalled()) {
    llamaCpp[weights] = { skipped: `bench package not installed (${INSTALL_HINT})` };
    return;
  }
  if (late(`llama.cpp ${weights} t=${threads} ${part}`)) return;
  const tmp = `${out}.llama-${weights}-t${threads}-${part}.json`;
  const args = ['--out', tmp, '--weights', weights, '--threads', String(threads), '--levels', levels.join(',')];
  if (part !== 'single') args.push('--batched-threads', String(threads));
  if (noArticle) args.push('--no-article');
  if (part === 'batched') args.push('--no-single');
  if (part !== 'batched' && threads === maxThreads) args.push('--accuracy');
  if (quick) args.push('--quick');
  if (deadline !== Infinity) args.push('--deadline-ms', String(deadline));
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(here, 'llama', 'cpu-side.ts'), ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
  let side: LlamaSideOutput | undefined;
  try {
    side = JSON.parse(await readFile(tmp, 'utf8')) as LlamaSideOutput;
  } catch {
    skipped.push(`llama.cpp ${weights} t=${threads} ${part}: side failed (exit ${r.status}, signal ${r.signal})`);
  }
  if (!side) return;
  if (r.status !== 0) skipped.push(`llama.cpp ${weights} t=${threads} ${part}: side exited ${r.status} (signal ${r.signal}); rows it wrote are kept`);
  skipped.push(...side.skipped.map((s) => `llama.cpp ${weights} ${s}`));
  const prev = llamaCpp[weights];
  if (!prev || !('rows' in prev)) llamaCpp[weights] = { ...side, skipped: [] };
  else {
    prev.accuracy ??= side.accuracy;
    for (const x of side.rows) {
      const same = prev.rows.find((r) => r.threads === x.threads);
      if (same) Object.assign(same, Object.fromEntries(Object.entries(x).filter(([, v]) => v !== undefined)));
      else prev.rows.push(x);
    }
  }
  const merged = llamaCpp[weights] as LlamaSideOutput;
  for (const x of merged.rows) for (const w of x.waves ?? []) Object.assign(w.result, { computeLimitTokS: computeLimit(sideBySideWorkload(w.concurrency, quick), x.single?.prefillTokS) });
  for (const x of merged.rows) if (x.article) Object.assign(x.article, { computeLimitTokS: computeLimit(article, x.single?.prefillTokS) });
  await save();
  await rm(tmp, { force: true }); // kept until its rows are in the JSON
  for (const x of side.rows) {
    const v = rowValues(x as LlamaCpuRow);
    console.log(`llama.cpp ${weights.padEnd(14)} t=${x.threads} ${Object.entries(v).map(([k, n]) => `${k} ${n.toFixed(1)}`).join(', ')} tok/s`);
  }
}

// NOTE: the batched llama.cpp rows of the second and later GGUFs run last, after every thread count's
// rows, so that a --budget-s cut leaves them out first: the first GGUF (bf16: the same weights as ours)
// is the comparison the issue's targets name.
const batchedRows = !noWave;
for (const threads of threadsList) {
  for (const p of chosen) if (!late(`${p.name} t=${threads}`)) await oursRow(p, threads);
  if (llamaSingles) for (const [i, w] of llamaWeights.entries()) await llamaRows(w, threads, threads === maxThreads && batchedRows && i === 0 ? 'all' : 'single');
  await save();
}
if (batchedRows) for (const w of llamaSingles ? llamaWeights.slice(1) : llamaWeights) await llamaRows(w, maxThreads, 'batched');
if (!llamaWeights.length) llamaCpp.none = { skipped: '--no-llama' };

// The issue's ratios, same run: int8 vs bf16 precise (AVX-512), AMX-BF16 vs AVX-512, ours vs llama.cpp.
const find = (name: string, t: number) => rows.find((r) => r.path === name && r.threads === t);
const wave = (r: Row | undefined, c: number) => r?.waves?.find((w) => w.concurrency === c)?.result;
for (const t of threadsList) {
  const base = find('bf16 precise, avx512', t), i8 = find('int8, best', t), amx = find('bf16 precise, amx-bf16', t);
  const one = find('int8 1 plane, best', t);
  if (base?.single && one?.single) ratios[`t${t} int8 1 plane/bf16 decode`] = one.single.decodeTokS / base.single.decodeTokS;
  if (base?.single && one?.single) ratios[`t${t} int8 1 plane/bf16 prefill512`] = one.single.prefillTokS / base.single.prefillTokS;
  if (base?.single && i8?.single) ratios[`t${t} int8/bf16 decode`] = i8.single.decodeTokS / base.single.decodeTokS;
  if (base?.single && i8?.single) ratios[`t${t} int8/bf16 prefill512`] = i8.single.prefillTokS / base.single.prefillTokS;
  if (base?.single && amx?.single) ratios[`t${t} amx-bf16/avx512 decode`] = amx.single.decodeTokS / base.single.decodeTokS;
  if (base?.single && amx?.single) ratios[`t${t} amx-bf16/avx512 prefill512`] = amx.single.prefillTokS / base.single.prefillTokS;
  for (const c of levels) {
    const b = wave(base, c), i = wave(i8, c), x = wave(amx, c);
    if (b && i) ratios[`t${t} int8/bf16 wave${c}`] = i.outputTokS / b.outputTokS;
    if (b && x) ratios[`t${t} amx-bf16/avx512 wave${c}`] = x.outputTokS / b.outputTokS;
    const o = wave(one, c);
    if (b && o) ratios[`t${t} int8 1 plane/bf16 wave${c}`] = o.outputTokS / b.outputTokS;
  }
}
const sides = Object.fromEntries(Object.entries(llamaCpp).flatMap(([w, s]) => ('rows' in s ? [[w, s]] : [])));
ratios = { ...ratios, ...llamaRatios(rows, sides) };
const hostLoad = load.stop();
if (!hostLoad.valid) console.log(`NOT VALID: ${hostLoad.reason}`);
console.log(`other processes ${(hostLoad.othersShare * 100).toFixed(1)}% of the cores' time, hypervisor steal ${(hostLoad.stealShare * 100).toFixed(1)}%`);
for (const [k, v] of Object.entries(ratios)) console.log(`${k}: ${v.toFixed(2)}x`);
await writeFile(out, JSON.stringify(result(hostLoad), null, 1) + '\n');
console.log(`wrote ${out}`);
