// `node --import tsx bench/wave-ab.ts`: bench:engine:cpu's 64-stream random wave (64-256 new tokens,
// greedy) for two CPU paths, alternated for --rounds rounds (A B, B A, A B, ...), each wave on a fresh
// engine, with the runner's time by phase split into steps that carry a prefill chunk and decode-only
// steps. The ratio B / A is taken per round from its two adjacent waves: this host's speed drifts by
// 15-30% over minutes, which moves two waves run minutes apart (bench:engine:cpu runs one path's rows
// after the other's) more than the change a ratio is meant to show.
// Flags: --a, --b (names from ./engine/cpu-paths.ts; default bf16 precise against int8's defaults), --rounds N
// (default 3), --threads N (default 2), --concurrency N (default 64), --host "kind", --out FILE.
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { ensureFormulaCheckpoint } from '../src/sidecar/model/default-model.js';
import type { StepOutput } from '../src/sidecar/engine/native-engine.js';
import { native, type CpuProfile } from '../src/sidecar/native.js';
import { engineRun, formatPhases, openBenchEngine, type RunResult } from './engine/batching.js';
import { cpuPaths } from './engine/cpu-paths.js';
import { watchHostLoad } from './engine/host-load.js';
import { profileDelta } from './engine/single-stream.js';
import { sideBySideWorkload } from './engine/workload.js';

const PATHS = Object.fromEntries(cpuPaths(native().cpuInfo()).map(({ name, ...load }) => [name, load]));

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const [nameA, nameB] = [arg('--a') ?? 'bf16 precise, avx512', arg('--b') ?? 'int8, best'];
for (const n of [nameA, nameB]) if (!PATHS[n]) throw new Error(`unknown path ${n}; known: ${Object.keys(PATHS).join(', ')}`);
const rounds = Number(arg('--rounds') ?? 3);
const threads = Number(arg('--threads') ?? 2);
const concurrency = Number(arg('--concurrency') ?? 64);
const out = arg('--out') ?? 'bench/results/cpu-wave-ab.json';

/** The runner's phase times (ms, CpuProfile's fields) summed over steps of one kind. */
type Phases = { steps: number; tokens: number } & Partial<CpuProfile>;
const zero = (): Phases => ({ steps: 0, tokens: 0 });

interface Wave {
  path: string;
  round: number;
  result: RunResult;
  /** Steps with more rows than sequences (a prefill chunk among them) and decode-only steps. */
  phases: { prefillSteps: Phases; decodeSteps: Phases; unsplit: Phases };
}

const dir = (await ensureFormulaCheckpoint()).dir;

async function wave(path: string, round: number): Promise<Wave> {
  const load = { ...PATHS[path]!, threads, kvCacheMemory: 2 * 2 ** 30 };
  const { engine, setSink, kvBlockBytes, nextIds } = await openBenchEngine(dir, load, { maxNumSeqs: 256, maxNumBatchedTokens: 512, maxModelLen: 4096, enablePrefixCaching: false });
  const phases = { prefillSteps: zero(), decodeSteps: zero(), unsplit: zero() };
  let prev: CpuProfile | undefined;
  // At each step callback (the engine publishes its stats before it calls back), the profile's change
  // since the last one: one step's when a single step ran between them, which the step's rows place.
  const observe = (f: (o: StepOutput[]) => void) => (outs: StepOutput[]) => {
    const { profile: p, lastStepSeqs } = engine.stats();
    if (p && prev) {
      const steps = p.steps - prev.steps, tokens = p.tokens - prev.tokens;
      const into = steps !== 1 ? phases.unsplit : tokens > lastStepSeqs ? phases.prefillSteps : phases.decodeSteps;
      into.steps += steps;
      into.tokens += tokens;
      for (const [k, ms] of Object.entries(profileDelta(prev, p, 1)) as [keyof CpuProfile, number][])
        if (k !== 'threads') into[k] = (into[k] ?? 0) + ms;
    }
    prev = p;
    f(outs);
  };
  const result = await engineRun(engine, (f) => setSink(observe(f)), sideBySideWorkload(concurrency, false), concurrency, `random wave, ${concurrency} streams`, kvBlockBytes, nextIds(concurrency));
  await engine.close();
  console.log(`round ${round} ${path}: ${result.outputTokS.toFixed(1)} tok/s in ${result.seconds.toFixed(1)} s\n  prefill ${formatPhases(phases.prefillSteps)}\n  decode  ${formatPhases(phases.decodeSteps)}`);
  return { path, round, result, phases };
}

const hostLoad = watchHostLoad();
const waves: Wave[] = [];
const ratios: number[] = [];
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? [nameA, nameB] : [nameB, nameA];
  const pair: Record<string, Wave> = {};
  for (const p of order) waves.push((pair[p] = await wave(p, r)));
  ratios.push(pair[nameB]!.result.outputTokS / pair[nameA]!.result.outputTokS);
  console.log(`round ${r}: ${nameB} / ${nameA} = ${ratios.at(-1)!.toFixed(2)}x`);
}
const load = hostLoad.stop();
const sorted = [...ratios].sort((x, y) => x - y);
const tokS = (p: string) => waves.filter((w) => w.path === p).reduce((a, w) => a + w.result.outputTokens, 0) / waves.filter((w) => w.path === p).reduce((a, w) => a + w.result.seconds, 0);
const summary = { perRound: ratios, min: sorted[0], median: sorted[Math.floor(sorted.length / 2)], max: sorted.at(-1), pooled: tokS(nameB) / tokS(nameA) };
console.log(`${nameB} / ${nameA}: rounds ${ratios.map((x) => x.toFixed(2)).join(' ')}, median ${summary.median!.toFixed(2)}x, pooled ${summary.pooled.toFixed(2)}x`);
console.log(`other processes ${(load.othersShare * 100).toFixed(1)}% of the cores' time, hypervisor steal ${(load.stealShare * 100).toFixed(1)}%`);
await writeFile(out, JSON.stringify({ host: arg('--host') ?? os.cpus()[0]?.model, threads, concurrency, a: nameA, b: nameB, paths: { [nameA]: PATHS[nameA], [nameB]: PATHS[nameB] }, ratio: summary, hostLoad: load, valid: load.valid, date: new Date().toISOString(), waves }, null, 1) + '\n');
console.log(`wrote ${out}`);
