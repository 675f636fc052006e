// `npm run bench:structured -- [--device cpu|cuda] [--vocab test|full] [--streams N] [--max-tokens M] [--compile-schemas K] [--grammar-workers W] [--label TEXT] [--before PREV.json] [--runs UCUC] [--dump TOKENS.json] [OUT.json]`
// Structured output against free generation in the same run, through the sidecar's in-process path
// (EngineHost + the grammar pool + the native engine; the embedded default model: ERNIE-4.5-0.3B's
// shape, formula weights; --vocab test: the 3,000-piece test tokenizer, its ids past 3,000 never allowed
// under a grammar; --vocab full (the default): that tokenizer grown to the model's 103,424 rows with
// synthetic pieces, ./structured-vocab.ts, so masks are classified over a real vocabulary's size):
//  - throughput: N concurrent streams of M tokens each, all unconstrained, then all constrained by a
//    JSON schema that cannot complete within M tokens (so both runs produce N x M tokens), twice each
//    alternating (U C U C; --runs names another order, e.g. C alone to profile constrained steps only);
//    output tok/s and the constrained / unconstrained ratio;
//  - per run, engine steps and the grammar workers' mask work (GrammarPool.maskStats): per step, the
//    CPU time of all masks, the busiest worker's share and the time a batch of tokens waited to reach
//    its worker (the engine ringing the grammar bell to the worker starting on it) and the step
//    thread's own wait for masks not yet published (native stats maskWaitMs);
//  - grammar compile time for the 200 seeded random schemas (test/doubles/random-schemas.ts): cold
//    (each compiled for the first time) and cached (opened again), as a request sees it (open() to its
//    first masks written) and the worker's own time.
// Results go to OUT.json (default bench/results/structured-<device>.json); the headline figures of
// the previous result (PREV.json, default OUT.json) are kept in its `before` field (or its own `before`).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { performance as perfHooks } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Constraint, ModelInfo, SamplingParams, SubmitRequest } from '../src/protocol/engine-client.js';
import { GrammarPool } from '../src/sidecar/grammar/pool.js';
import { defaultGrammarWorkers, GRAMMAR_CACHE_SIZE } from '../src/sidecar/grammar/start.js';
import { grammarVocab } from '../src/sidecar/grammar/vocab.js';
import { readCheckpoint } from '../src/sidecar/model/checkpoint.js';
import { ensureDefaultModelDir } from '../src/sidecar/model/default-bundle.js';
import { nativeLoadOptions } from '../src/sidecar/model/load.js';
import { createNativeEngine } from '../src/sidecar/native.js';
import { EngineHost } from '../src/sidecar/server/engine-host.js';
import { loadTokenizerBundle } from '../src/sidecar/tokenizer/index.js';
import { randomSchemas } from '../test/doubles/random-schemas.js';
import { fullVocabDir } from './structured-vocab.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const flag = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : def;
};
const device = flag('device', 'cpu') as 'cpu' | 'cuda';
const streams = Number(flag('streams', device === 'cuda' ? '256' : '64'));
const maxTokens = Number(flag('max-tokens', device === 'cuda' ? '256' : '64'));
const label = flag('label', '');
const compileCount = Number(flag('compile-schemas', '200'));
const vocabKind = flag('vocab', 'full');
if (vocabKind !== 'full' && vocabKind !== 'test') throw new Error('--vocab: full or test');
const order = [...flag('runs', 'UCUC')].map((c) => c === 'C');
const out = args.find((a, i) => !a.startsWith('--') && (i === 0 || !args[i - 1]!.startsWith('--'))) ?? path.join(here, 'results', `structured-${device}.json`);
const before = await previous(flag('before', out));

/** The headline figures of an earlier result, or its own `before` when it has one. */
async function previous(file: string): Promise<unknown> {
  let prev: Record<string, unknown>;
  try {
    prev = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (prev.before !== undefined) return prev.before;
  const keep = ['date', 'label', 'streams', 'maxTokens', 'grammarWorkers', 'runs', 'unconstrainedTokS', 'constrainedTokS', 'ratio'];
  return Object.fromEntries(keep.filter((k) => k in prev).map((k) => [k, prev[k]]));
}

/** Never complete within maxTokens: 200 strings of at least 2 characters. */
const LONG_SCHEMA = {
  type: 'object',
  properties: { items: { type: 'array', items: { type: 'string', minLength: 2, maxLength: 12 }, minItems: 200, maxItems: 200 } },
  required: ['items'],
  additionalProperties: false,
};

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
const stats = (xs: number[]) => ({ p50: pct(xs, 50), p99: pct(xs, 99), mean: xs.reduce((a, b) => a + b, 0) / xs.length });

const { dir: baseDir } = await ensureDefaultModelDir({ weights: true });
const dir = vocabKind === 'full' ? await fullVocabDir(baseDir, (await readCheckpoint(baseDir)).config.native.vocabSize) : baseDir;
const bundle = await loadTokenizerBundle(dir);
const ck = await readCheckpoint(dir);
const vocabSize = ck.config.native.vocabSize;
const workers = Number(flag('grammar-workers', String(defaultGrammarWorkers(device))));
const pool = await GrammarPool.start({ vocab: grammarVocab(bundle.tokenizer, vocabSize, bundle.eosIds), workers, cacheSize: GRAMMAR_CACHE_SIZE });
console.log(`[structured] ${device}, ${streams} streams x ${maxTokens} tokens, ${workers} grammar worker(s), vocabulary ${vocabSize}`);

// 1. throughput.
const maxModelLen = 1024;
const model: ModelInfo = { id: 'bench', root: dir, maxModelLen, maxNumSeqs: streams, vocabSize, createdAt: 0, generationDefaults: {}, placeholder: true };
const blocks = Math.ceil((streams * (32 + maxTokens)) / 16) + 64;
const load = device === 'cuda' ? { device, kvBlocks: blocks, maxModelLen, maxNumSeqs: streams, maxNumBatchedTokens: 4096 } : { kvBlocks: blocks, maxModelLen };
const host = await EngineHost.start({ bundle, model, maxNumQueuedReqs: streams * 2, grammar: pool }, (onStep) =>
  createNativeEngine(nativeLoadOptions(ck, load), { maxModelLen, maxNumSeqs: streams, maxNumBatchedTokens: device === 'cuda' ? 4096 : 512, enablePrefixCaching: false, seed: 0 }, onStep),
);

// The sidecar's main thread per run: its event-loop utilisation and the time in the engine's step
// callback (EngineHost.handleStep: routing, the grammar hand-off, detokenizing), read around the call.
const hostStep = host as unknown as { handleStep(outputs: unknown[]): void };
const handleStep = hostStep.handleStep.bind(host);
let stepCallbackMs = 0;
hostStep.handleStep = (outputs) => {
  const t = performance.now();
  handleStep(outputs);
  stepCallbackMs += performance.now() - t;
};

// --dump FILE: every constrained request's token ids by seed (the first constrained run), to compare
// two builds' outputs (the same seeds must give the same tokens); the second constrained run's go to
// FILE with `-2` before its extension: the same build, seeds and process, so where those two differ
// the tokens depend on the run's timing (batch shapes), not on the build.
const dumpFile = flag('dump', '');
const dumpFiles = dumpFile === '' ? [] : [dumpFile, dumpFile.replace(/(\.json)?$/, '-2$1')];
const dumped = new Map<number, number[]>();
let dumping = false;

let reqNo = 0;
async function one(constraint: Constraint | undefined, seed: number, tokens: number): Promise<number> {
  const sampling: SamplingParams = {
    maxTokens: tokens, temperature: 1, topP: 1, topK: -1, minP: 0, repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0,
    logitBias: {}, seed, stop: [], stopTokenIds: [], ignoreEos: constraint === undefined, logprobs: null, skipSpecialTokens: true,
  };
  const req: SubmitRequest = { id: `b${++reqNo}`, prompt: { kind: 'text', text: `Request ${seed}: list some words as JSON.` }, n: 1, echo: false, sampling, ...(constraint ? { constraint } : {}) };
  let n = 0;
  const ids: number[] = [];
  for await (const ev of host.stream(req))
    if (ev.type === 'delta')
      for (const c of ev.choices) {
        n += c.tokenIds.length;
        if (dumping) ids.push(...c.tokenIds);
      }
  if (dumping) dumped.set(seed, ids);
  return n;
}
const engineSteps = async () => (await host.stats()).iterationTokens?.count ?? 0;
// The step thread's time waiting for masks that were not there yet (native stats; absent before it was counted).
type MaskTimes = { maskWaitMs?: number; maskSteps?: number; maskWaitFromRingMs?: number; maskDoneFromRingMs?: number };
const engineStats = (host as unknown as { engine: { stats(): MaskTimes } }).engine;
const maskWaitMs = () => engineStats.stats().maskWaitMs ?? NaN;
const maskTimes = () => {
  const s = engineStats.stats();
  return { steps: s.maskSteps ?? NaN, waitFromRing: s.maskWaitFromRingMs ?? NaN, doneFromRing: s.maskDoneFromRingMs ?? NaN };
};
async function run(constrained: boolean) {
  const constraint: Constraint | undefined = constrained ? { kind: 'json_schema', schema: JSON.stringify(LONG_SCHEMA), param: 'schema' } : undefined;
  const [steps0, m0, w0, r0] = [await engineSteps(), pool.maskStats(), maskWaitMs(), maskTimes()];
  const [elu0, cb0] = [perfHooks.eventLoopUtilization(), stepCallbackMs];
  const t0 = performance.now();
  const counts = await Promise.all(Array.from({ length: streams }, (_, i) => one(constraint, i + 1, maxTokens)));
  const seconds = (performance.now() - t0) / 1000;
  const tokens = counts.reduce((a, b) => a + b, 0);
  const elu = perfHooks.eventLoopUtilization(elu0);
  const cbMs = stepCallbackMs - cb0;
  const steps = (await engineSteps()) - steps0;
  const m1 = pool.maskStats();
  const waited = maskWaitMs() - w0;
  const r1 = maskTimes();
  const maskSteps = r1.steps - r0.steps;
  const masks = constrained
    ? {
        rows: m1.rows - m0.rows,
        // per engine step: all workers' mask CPU time; the busiest worker's (the step's floor if the
        // rows were spread as they were); a batch's delivery wait, averaged over the batches.
        cpuMsPerStep: (m1.busyMs - m0.busyMs) / steps,
        busiestWorkerMsPerStep: Math.max(...m1.busyMsByWorker.map((ms, i) => ms - (m0.busyMsByWorker[i] ?? 0))) / steps,
        usPerRow: (1000 * (m1.busyMs - m0.busyMs)) / (m1.rows - m0.rows),
        hopMsPerBatch: (m1.hopMs - m0.hopMs) / Math.max(1, m1.batches - m0.batches),
        // the engine's step thread, waiting for rows not yet published when it came to sample
        engineWaitMsPerStep: waited / steps,
        // from the bell's ring (the previous step's tokens handed over) to the step thread starting to
        // wait for this step's rows (its forward queued) and to the last row there, per step that waited
        waitFromRingMs: (r1.waitFromRing - r0.waitFromRing) / maskSteps,
        lastRowFromRingMs: (r1.doneFromRing - r0.doneFromRing) / maskSteps,
      }
    : undefined;
  const mainThread = { utilization: elu.utilization, stepCallbackMsPerStep: cbMs / steps };
  return { tokens, seconds, outputTokS: tokens / seconds, steps, msPerStep: (1000 * seconds) / steps, mainThread, ...(masks ? { masks } : {}) };
}
// Warm-up at full width, both ways (CUDA graphs are captured on first use, per batch size and output mode).
for (const constrained of device === 'cuda' ? [false, true].filter((c) => order.includes(c)) : []) {
  const c: Constraint | undefined = constrained ? { kind: 'json_schema', schema: JSON.stringify(LONG_SCHEMA), param: 's' } : undefined;
  await Promise.all(Array.from({ length: streams }, (_, i) => one(c, 1000 + i, 16)));
}
const runs: ({ constrained: boolean } & Awaited<ReturnType<typeof run>>)[] = [];
for (const constrained of order) {
  const dumpTo = constrained ? dumpFiles.shift() : undefined;
  dumping = dumpTo !== undefined;
  dumped.clear();
  const r = { constrained, ...(await run(constrained)) };
  if (dumpTo !== undefined) await writeFile(dumpTo, JSON.stringify(Object.fromEntries(dumped)) + '\n');
  dumping = false;
  runs.push(r);
  const m = r.masks ? `; masks per step ${r.masks.cpuMsPerStep.toFixed(2)} ms CPU, busiest worker ${r.masks.busiestWorkerMsPerStep.toFixed(2)} ms, ${r.masks.usPerRow.toFixed(0)} us/row, hop ${r.masks.hopMsPerBatch.toFixed(2)} ms, engine waited ${r.masks.engineWaitMsPerStep.toFixed(2)} ms/step; from the ring: forward queued ${r.masks.waitFromRingMs.toFixed(2)} ms, last row ${r.masks.lastRowFromRingMs.toFixed(2)} ms` : '';
  const mt = `; main thread ${(100 * r.mainThread.utilization).toFixed(0)}% busy, step callback ${r.mainThread.stepCallbackMsPerStep.toFixed(2)} ms/step`;
  console.log(`[structured] ${constrained ? 'constrained  ' : 'unconstrained'} ${r.tokens} tokens in ${r.seconds.toFixed(2)} s: ${r.outputTokS.toFixed(0)} tok/s, ${r.steps} steps of ${r.msPerStep.toFixed(2)} ms${m}${mt}`);
}
const best = (c: boolean) => Math.max(0, ...runs.filter((r) => r.constrained === c).map((r) => r.outputTokS));
const ratio = best(true) / best(false);
console.log(`[structured] constrained / unconstrained output tok/s (best of 2 each): ${(100 * ratio).toFixed(1)}%`);

// Throughput first on disk (the compile runs below may be cut short by a device call's time limit).
await mkdir(path.dirname(out), { recursive: true });
await writeFile(out, JSON.stringify({ bench: 'structured', device, streams, maxTokens, grammarWorkers: workers, runs, unconstrainedTokS: best(false), constrainedTokS: best(true), ratio, before }, null, 2) + '\n');

// 2. compile time, the random schemas: cold, then cached (after the throughput runs, whose own
// schema is then the only one compiled).
const schemas = randomSchemas(1, compileCount).map((s) => JSON.stringify(s));
async function compileAll() {
  const wall: number[] = [];
  const worker: number[] = [];
  for (const schema of schemas) {
    const t0 = performance.now();
    const s = await pool.open({ kind: 'json_schema', schema, param: 'schema' }, 1, bundle.eosIds);
    wall.push(performance.now() - t0);
    worker.push(s.compileMs);
    pool.close(s.key);
  }
  return { wallMs: stats(wall), workerMs: stats(worker) };
}
const cold = await compileAll();
const cached = await compileAll();
console.log(`[structured] compile, ${compileCount} schemas: cold p50/p99 ${cold.wallMs.p50.toFixed(1)}/${cold.wallMs.p99.toFixed(1)} ms; cached ${cached.wallMs.p50.toFixed(2)}/${cached.wallMs.p99.toFixed(2)} ms`);


const result = {
  bench: 'structured',
  date: new Date().toISOString(),
  label: label || `${device} (${os.cpus()[0]?.model ?? 'cpu'}, ${os.availableParallelism()} cores)`,
  device,
  streams,
  maxTokens,
  grammarWorkers: workers,
  vocabSize,
  vocabulary: vocabKind === 'full' ? `test tokenizer grown to ${vocabSize} pieces (synthetic, bench/structured-vocab.ts)` : `test tokenizer, ${bundle.tokenizer.size} pieces`,
  workload: 'EngineHost in-process; temperature 1; unconstrained with ignore_eos, constrained by a JSON schema (200-string array) that cannot complete within maxTokens; runs U C U C',
  runs,
  unconstrainedTokS: best(false),
  constrainedTokS: best(true),
  ratio,
  compile: { schemas: compileCount, generator: `test/doubles/random-schemas.ts randomSchemas(1, ${compileCount})`, cold, cached },
  before,
};
await writeFile(out, JSON.stringify(result, null, 2) + '\n');
console.log(`[structured] wrote ${out}`);
await host.close();
