// The llama.cpp rows of `npm run bench:engine:cpu`, run in their own process after the engine's (as
// bench/llama/main.ts): the formula checkpoint as a Q8_0 GGUF (bench/llama/q8_0.ts, converted once and
// kept beside the checkpoint), its accuracy on the formula-0.3b golden prompts, and single-stream decode
// and prefill of 512 tokens at each thread count, measured as the engine's rows are.
//   node --import tsx bench/llama/q8-side.ts --out FILE [--threads 2,16] [--weights q8_0|bf16]
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ensureDefaultModelDir } from '../../src/sidecar/model/default-bundle.js';
import { formulaGolden } from '../engine/accuracy.js';
import { ensureGguf, type GgufWeights } from './convert.js';
import { greedyCheck, llamaLogProbs, llamaSingleStream } from './measure.js';
import { loadLlama, nodeLlamaVersion } from './node-llama.js';

export interface LlamaSideOutput {
  nodeLlamaCpp: string;
  systemInfo: string;
  weights: GgufWeights;
  gguf: string;
  convertSeconds: number;
  accuracy: { prompt: number; maxAbsLogProbDiff: number; skipped: number; greedyPrefix: number; teacherForcedMatch: number; steps: number }[];
  rows: { threads: number; single: Awaited<ReturnType<typeof llamaSingleStream>> }[];
}

const { values: a } = parseArgs({ options: { out: { type: 'string' }, threads: { type: 'string', default: '2' }, weights: { type: 'string', default: 'q8_0' } } });
if (!a.out) throw new Error('--out FILE is required');
const weights = a.weights as GgufWeights;
const threadsList = a.threads.split(',').map(Number);
const log = (s: string) => process.stderr.write(`[llama.cpp ${weights}] ${s}\n`);
// The formula checkpoint with the project's tokenizer beside it (the GGUF carries the vocabulary).
const { dir } = await ensureDefaultModelDir({ weights: true });
const t0 = performance.now();
const gguf = await ensureGguf(dir, weights);
const convertSeconds = (performance.now() - t0) / 1000;
const llama = await loadLlama(Math.max(...threadsList));
const model = await llama.loadModel({ modelPath: gguf });
const tAcc = Math.max(...threadsList);
const golden = formulaGolden();
const lp = await llamaLogProbs(model, tAcc, golden);
const greedy = await greedyCheck(model, tAcc);
const accuracy = lp.map((x, i) => ({
  prompt: i, ...x, greedyPrefix: greedy.prompts[i]!.freeRunMatch, teacherForcedMatch: greedy.prompts[i]!.teacherForcedMatch, steps: greedy.prompts[i]!.steps,
}));
for (const x of accuracy) log(`prompt ${x.prompt}: max |Δ log-prob| ${x.maxAbsLogProbDiff.toFixed(4)}, greedy ${x.greedyPrefix}/${x.steps} (teacher-forced ${x.teacherForcedMatch}/${x.steps})`);
const rows: LlamaSideOutput['rows'] = [];
const systemInfo = llama.systemInfo.trim(); // read before llama.dispose(), after which it throws
const out = (): LlamaSideOutput => ({ nodeLlamaCpp: nodeLlamaVersion(), systemInfo, weights, gguf, convertSeconds, accuracy, rows });
for (const threads of threadsList) {
  const single = await llamaSingleStream(model, threads, { decodeTokens: 64, prefillTokens: 512, runs: 3 });
  log(`t=${threads}: decode ${single.decodeTokS.toFixed(1)} tok/s, prefill 512 ${single.prefillTokS.toFixed(0)} tok/s`);
  rows.push({ threads, single });
  await writeFile(a.out, JSON.stringify(out(), null, 1) + '\n'); // a partial file if cut short
}
await model.dispose();
await llama.dispose();
await writeFile(a.out, JSON.stringify(out(), null, 1) + '\n');
