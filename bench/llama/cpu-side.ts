// The llama.cpp rows of `npm run bench:engine:cpu`, run in their own process after the engine's models
// are closed (as bench/llama/main.ts): the formula checkpoint as a GGUF (`--weights bf16`: the matrices
// byte for byte; `q8_0`: bench/llama/q8_0.ts; converted once and kept beside the checkpoint), and at each
// --threads value the rows the engine's side measures: single-stream decode and prefill of 512 tokens;
// at --batched-threads also the article's 5 prompts at once and one wave per --levels value (the same
// requests as ours: bench/engine/workload.ts; `--quick` caps new tokens at 64); with --accuracy its
// accuracy on the formula-0.3b golden prompts (log-probabilities: llama.cpp hands out no logits).
// --deadline-ms (epoch ms): rows not started by then are listed in `skipped` instead of measured;
// --no-single: the batched rows only; --no-article: the waves without the article.
//   node --import tsx bench/llama/cpu-side.ts --out FILE [--weights q8_0|bf16] [--threads 2,16]
//        [--batched-threads 16] [--levels 32,64] [--quick] [--accuracy] [--no-single] [--no-article]
//        [--deadline-ms T]
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ensureDefaultModelDir } from '../../src/sidecar/model/default-bundle.js';
import { formulaGolden } from '../engine/accuracy.js';
import { articleWorkload, sideBySideWorkload } from '../engine/workload.js';
import { ensureGguf, type GgufWeights } from './convert.js';
import { greedyCheck, llamaLogProbs, llamaRun, llamaSingleStream, type LlamaRunResult } from './measure.js';
import { loadLlama, nodeLlamaVersion } from './node-llama.js';

export interface LlamaCpuRow {
  threads: number;
  single?: Awaited<ReturnType<typeof llamaSingleStream>>;
  article?: LlamaRunResult;
  waves?: { concurrency: number; result: LlamaRunResult }[];
}

export interface LlamaSideOutput {
  nodeLlamaCpp: string;
  systemInfo: string;
  weights: GgufWeights;
  gguf: string;
  convertSeconds: number;
  /** Context options of the batched rows (bench/llama/main.ts's defaults: batch 512, flash attention on). */
  contextOptions: { batchSize: number; flashAttention: boolean };
  accuracy?: { prompt: number; maxAbsLogProbDiff: number; skipped: number; greedyPrefix: number; teacherForcedMatch: number; steps: number }[];
  rows: LlamaCpuRow[];
  /** Rows left out because --deadline-ms had passed. */
  skipped: string[];
}

const { values: a } = parseArgs({
  options: {
    out: { type: 'string' },
    threads: { type: 'string', default: '2' },
    weights: { type: 'string', default: 'q8_0' },
    'batched-threads': { type: 'string' },
    levels: { type: 'string', default: '32,64' },
    quick: { type: 'boolean', default: false },
    accuracy: { type: 'boolean', default: false },
    'no-single': { type: 'boolean', default: false },
    'no-article': { type: 'boolean', default: false },
    'deadline-ms': { type: 'string' },
  },
});
if (!a.out) throw new Error('--out FILE is required');
const weights = a.weights as GgufWeights;
const threadsList = a.threads.split(',').map(Number);
const batchedThreads = a['batched-threads'] === undefined ? undefined : Number(a['batched-threads']);
const levels = a.levels.split(',').filter(Boolean).map(Number);
const deadline = a['deadline-ms'] === undefined ? Infinity : Number(a['deadline-ms']);
const log = (s: string) => process.stderr.write(`[llama.cpp ${weights}] ${s}\n`);
const quick = a.quick === true;
const contextOptions = { batchSize: 512, flashAttention: true };
// The formula checkpoint with the project's tokenizer beside it (the GGUF carries the vocabulary).
const { dir } = await ensureDefaultModelDir({ weights: true });
const t0 = performance.now();
const gguf = await ensureGguf(dir, weights);
const convertSeconds = (performance.now() - t0) / 1000;
const llama = await loadLlama(Math.max(...threadsList));
const model = await llama.loadModel({ modelPath: gguf });
const systemInfo = llama.systemInfo.trim(); // read before llama.dispose(), after which it throws
const rows: LlamaCpuRow[] = [];
const skipped: string[] = [];
let accuracy: LlamaSideOutput['accuracy'];
const out = (): LlamaSideOutput => ({ nodeLlamaCpp: nodeLlamaVersion(), systemInfo, weights, gguf, convertSeconds, contextOptions, accuracy, rows, skipped });
const save = () => writeFile(a.out!, JSON.stringify(out(), null, 1) + '\n'); // after every row: a partial file if cut short
/** Runs `f` unless the deadline has passed (then records `what` as skipped). */
async function timed<T>(what: string, f: () => Promise<T>): Promise<T | undefined> {
  if (Date.now() > deadline) {
    skipped.push(what);
    log(`skipped ${what}: past the deadline`);
    return undefined;
  }
  const r = await f();
  await save();
  return r;
}

if (a.accuracy) {
  const tAcc = Math.max(...threadsList);
  accuracy = await timed(`accuracy t=${tAcc}`, async () => {
    const lp = await llamaLogProbs(model, tAcc, formulaGolden());
    const greedy = await greedyCheck(model, tAcc);
    return lp.map((x, i) => ({
      prompt: i, ...x, greedyPrefix: greedy.prompts[i]!.freeRunMatch, teacherForcedMatch: greedy.prompts[i]!.teacherForcedMatch, steps: greedy.prompts[i]!.steps,
    }));
  });
  for (const x of accuracy ?? []) log(`prompt ${x.prompt}: max |Δ log-prob| ${x.maxAbsLogProbDiff.toFixed(4)}, greedy ${x.greedyPrefix}/${x.steps} (teacher-forced ${x.teacherForcedMatch}/${x.steps})`);
}
for (const threads of threadsList) {
  const row: LlamaCpuRow = { threads };
  rows.push(row);
  if (!a['no-single']) row.single = await timed(`single t=${threads}`, () => llamaSingleStream(model, threads, { decodeTokens: 64, prefillTokens: 512, runs: 3 }));
  if (row.single) log(`t=${threads}: decode ${row.single.decodeTokS.toFixed(1)} tok/s, prefill 512 ${row.single.prefillTokS.toFixed(0)} tok/s`);
  if (threads !== batchedThreads) continue;
  const ctx = { ...contextOptions, threads };
  if (!a['no-article']) row.article = await timed(`article t=${threads}`, async () => llamaRun(model, await articleWorkload(quick ? 64 : 256), 5, 'llama.cpp, all 5 at once', ctx));
  if (row.article) log(`t=${threads}: article's 5 prompts ${row.article.outputTokS.toFixed(1)} tok/s`);
  for (const c of levels) {
    const result = await timed(`wave ${c} t=${threads}`, () => llamaRun(model, sideBySideWorkload(c, quick), c, `llama.cpp, random wave, ${c} streams`, ctx));
    if (!result) continue;
    (row.waves ??= []).push({ concurrency: c, result });
    log(`t=${threads}: ${c}-stream wave ${result.outputTokS.toFixed(1)} tok/s (TTFT p50 ${(result.ttftMs.p50 / 1000).toFixed(1)} s, ${result.tokensPerDecode?.toFixed(1) ?? '?'} tokens per llama_decode)`);
    await save();
  }
}
await model.dispose();
await llama.dispose();
await save();
