// The article's comparison on this machine: a naive baseline (one request at a time, no batching,
// one contiguous KV buffer) against the engine (continuous batching, paged KV) at several
// concurrency levels. Latencies are measured where a client would see them: at the step callback.
import type { EngineOptions, NativeEngine, StepOutput } from '../../src/sidecar/engine/native-engine.js';
import { readCheckpoint } from '../../src/sidecar/model/checkpoint.js';
import { nativeLoadOptions, type LoadOptions } from '../../src/sidecar/model/load.js';
import { createNativeEngine, type CpuProfile, type NativeLoadOptions, type NativeModel } from '../../src/sidecar/native.js';
import { profileDelta } from './single-stream.js';
import type { BenchRequest } from './workload.js';

/** An engine for a benchmark: its step outputs go to whatever sink is set last; ids never repeat. */
export interface BenchEngine {
  engine: NativeEngine;
  setSink: (f: (outs: StepOutput[]) => void) => void;
  load: NativeLoadOptions;
  kvBlockBytes: number;
  nextIds: (n: number) => number; // the first of n fresh request ids
}

export async function openBenchEngine(dir: string, load: LoadOptions, opts: Partial<EngineOptions>): Promise<BenchEngine> {
  // The model is loaded for the engine's maxNumSeqs, as the sidecar does (src/sidecar/main.ts): on
  // CUDA its decode graphs cover that many rows (a 512-sequence engine on a model loaded for 256
  // ran its 512-row steps eagerly: 89k instead of 113k tok/s on the H200).
  const sized = opts.maxNumSeqs ? { ...load, maxNumSeqs: opts.maxNumSeqs } : load;
  const { kvBlockBytes, ...lo } = nativeLoadOptions(await readCheckpoint(dir), sized);
  let sink: (o: StepOutput[]) => void = () => {};
  // maxModelLen absent: the loaded model's (nativeLoadOptions' default), as the sidecar passes both the same.
  const engine = await createNativeEngine(lo, { maxModelLen: lo.maxModelLen!, ...opts }, (o) => sink(o));
  let idBase = 1;
  return { engine, setSink: (f) => (sink = f), load: lo, kvBlockBytes, nextIds: (n) => ((idBase += n), idBase - n) };
}

export interface LatencyStats {
  p50: number;
  p99: number;
}
export interface RunResult {
  label: string;
  requests: number;
  outputTokens: number;
  seconds: number;
  outputTokS: number;
  /**
   * Output tok/s while every one of the `concurrency` slots held a request: from the start until the
   * first request that finished with the queue already empty (the drain after it runs fewer
   * sequences per step). Reported beside outputTokS (the whole run, drain included), never instead.
   */
  fullTokS?: number;
  ttftMs: LatencyStats;
  itlMs: LatencyStats;
  peakKvBytes?: number;
  preemptions?: number;
  peakRssBytes?: number; // the whole process's resident set, sampled at every step of the run
  /** CPU: the runner's time by phase over the whole run (ms; profile.ts's fields), and its steps and tokens. */
  profileMs?: Partial<CpuProfile> & { steps: number; tokens: number };
}

/** One line of a run's runner time by phase, in seconds (RunResult.profileMs or a sum of steps' deltas). */
export function formatPhases(p: Partial<CpuProfile> & { steps: number }): string {
  const s = (ms = 0) => (ms / 1000).toFixed(1);
  return `${p.steps} steps: GEMMs ${s(p.gemmMs)} s, attention ${s(p.attentionMs)}, LM head ${s(p.lmHeadMs)}, other ${s(p.otherMs)}`;
}

function pct(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
const lat = (xs: number[]): LatencyStats => ({ p50: pct(xs, 50), p99: pct(xs, 99) });

/** One request at a time: prefill then greedy decode; TTFT = prefill time, ITL = decode time per token. */
export async function naive(model: NativeModel, reqs: BenchRequest[], label: string): Promise<RunResult> {
  const ttft: number[] = [];
  const itl: number[] = [];
  let out = 0;
  const t0 = performance.now();
  for (const r of reqs) {
    const g = await model.generateGreedy({ tokens: r.prompt, blockTable: Int32Array.from([0]) }, r.maxTokens);
    ttft.push(g.prefillMs);
    itl.push(g.decodeMs / Math.max(1, r.maxTokens - 1));
    out += g.tokens.length;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { label, requests: reqs.length, outputTokens: out, seconds, outputTokS: out / seconds, ttftMs: lat(ttft), itlMs: lat(itl) };
}

/**
 * Keeps `concurrency` requests in flight until all are done (a closed-loop client). Greedy, no stop
 * tokens: every request generates exactly maxTokens.
 */
export async function engineRun(
  engine: NativeEngine,
  setSink: (f: (outs: StepOutput[]) => void) => void,
  reqs: BenchRequest[],
  concurrency: number,
  label: string,
  kvBlockBytes: number,
  idBase: number,
  logprobs = -1, // -1: none; k: the chosen token's logprob plus k alternatives (as the HTTP run asks)
): Promise<RunResult> {
  const ttft: number[] = [];
  const itl: number[] = [];
  const started = new Map<number, number>();
  const last = new Map<number, number>();
  let next = 0;
  let done = 0;
  let out = 0;
  let fullOut = -1; // output tokens when the drain began (-1: not yet)
  let fullMs = 0;
  let peakBlocks = 0;
  let peakRss = process.memoryUsage.rss();
  const { preemptions: pre0, profile: prof0 } = engine.stats();
  const t0 = performance.now();
  const total = engine.stats().kvBlocksTotal;
  // The engine's output callback does not hold the event loop open (an idle engine must not keep
  // a process alive), so a bare script keeps a timer while it waits.
  const keepAlive = setInterval(() => {}, 1 << 30);
  await new Promise<void>((resolve, reject) => {
    const submit = () => {
      const i = next++;
      const r = reqs[i]!;
      const id = idBase + i;
      started.set(id, performance.now());
      const err = engine.submit({
        id, prompt: r.prompt, maxTokens: r.maxTokens, n: 1, temperature: r.temperature ?? 0, topP: r.topP ?? 1, topK: 0, minP: 0,
        repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0, seed: r.seed ?? null,
        logitBiasIds: new Int32Array(0), logitBiasValues: new Float32Array(0), stopTokenIds: new Int32Array(0), logprobs,
      });
      if (err) reject(new Error(err));
    };
    setSink((outs) => {
      const now = performance.now();
      const st = engine.stats();
      peakBlocks = Math.max(peakBlocks, total - st.kvBlocksFree);
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
      for (const o of outs) {
        if (o.tokens.length) {
          out += o.tokens.length;
          const prev = last.get(o.id);
          if (prev === undefined) ttft.push(now - started.get(o.id)!);
          else itl.push(now - prev);
          last.set(o.id, now);
        }
        if (o.finish) {
          done++;
          if (next >= reqs.length && fullOut < 0 && reqs.length > concurrency) {
            fullOut = out;
            fullMs = now - t0;
          }
          if (next < reqs.length) submit();
          else if (done === reqs.length) resolve();
        }
      }
    });
    for (let k = 0; k < Math.min(concurrency, reqs.length); k++) submit();
  }).finally(() => clearInterval(keepAlive));
  const seconds = (performance.now() - t0) / 1000;
  const prof1 = engine.stats().profile;
  const profileMs = prof0 && prof1 ? { ...profileDelta(prof0, prof1, 1), steps: prof1.steps - prof0.steps, tokens: prof1.tokens - prof0.tokens } : undefined;
  return {
    label, requests: reqs.length, outputTokens: out, seconds, outputTokS: out / seconds,
    ...(fullOut > 0 ? { fullTokS: fullOut / (fullMs / 1000) } : {}),
    ttftMs: lat(ttft), itlMs: lat(itl), peakKvBytes: peakBlocks * kvBlockBytes,
    preemptions: engine.stats().preemptions - pre0, peakRssBytes: peakRss, ...(profileMs ? { profileMs } : {}),
  };
}
