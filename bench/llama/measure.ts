// llama.cpp (through node-llama-cpp) on the engine benchmark's workloads: the golden greedy check,
// single-stream decode and prefill, and closed-loop runs of N concurrent sequences. Results have the
// engine benchmark's RunResult shape so the two sides print and compare alike.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { logSoftmax, maxAbsLogProbDiff, type GoldenPrompt } from '../engine/accuracy.js';
import type { LatencyStats, RunResult } from '../engine/batching.js';
import { tokens } from '../engine/single-stream.js';
import type { BenchRequest } from '../engine/workload.js';
import type { LlamaContext, LlamaContextOptions, LlamaModel, Token } from './node-llama.js';

export interface LlamaRunResult extends RunResult {
  peakRssBytes: number;
  /** llama_decode calls; (prompt + output tokens) / decodeCalls > 1 means sequences were batched. */
  decodeCalls: number | null;
  tokensPerDecode: number | null;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
function lat(xs: number[]): LatencyStats {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p: number) => (s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN);
  return { p50: at(50), p99: at(99) };
}

/**
 * Counts llama_decode calls of a context. NOTE: wraps node-llama-cpp's internal `_ctx` binding object
 * (3.21.1: every batch dispatch calls `_ctx.decodeBatch()` once, which runs one llama_decode); when that
 * field is not there the count is null and nothing else changes.
 */
function countDecodes(ctx: LlamaContext): () => number | null {
  const holder = ctx as unknown as { _ctx?: Record<string | symbol, unknown> };
  const raw = holder._ctx;
  if (!raw || typeof raw.decodeBatch !== 'function') return () => null;
  let calls = 0;
  holder._ctx = new Proxy(raw, {
    get(target, key) {
      const v = target[key];
      if (typeof v !== 'function') return v;
      if (key === 'decodeBatch') return (...a: unknown[]) => (calls++, (v as (...x: unknown[]) => unknown).apply(target, a));
      return (v as (...x: unknown[]) => unknown).bind(target);
    },
  });
  return () => calls;
}

/** Peak resident set size over an interval, sampled every 50 ms (plus at start and end). */
function rssSampler(): { stop: () => number } {
  let peak = process.memoryUsage.rss();
  const t = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 50);
  return { stop: () => (clearInterval(t), Math.max(peak, process.memoryUsage.rss())) };
}

export interface GreedyCheck {
  prompts: { promptTokens: number; freeRunMatch: number; firstMismatch: number | null; marginAtMismatch: number | null; teacherForcedMatch: number; teacherForcedMismatchMargins: number[]; steps: number }[];
  freeRunMatch: number;
  teacherForcedMatch: number;
  steps: number;
}

/**
 * llama.cpp's greedy tokens against the reference's (test/fixtures/golden/formula-0.3b): free-running
 * (matches up to the first flip; later tokens follow from a different history), and teacher-forced (the
 * reference's own tokens fed back, llama.cpp's argmax compared at every step).
 */
export async function greedyCheck(model: LlamaModel, threads: number): Promise<GreedyCheck> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const golden = JSON.parse(await readFile(path.resolve(here, '../../test/fixtures/golden/formula-0.3b/golden.json'), 'utf8')) as {
    prompts: { prompt: number[]; greedy: { token: number; margin: number }[] }[];
  };
  const ctx = await model.createContext({ contextSize: 256, sequences: 1, threads });
  const seq = ctx.getSequence();
  const out: GreedyCheck['prompts'] = [];
  for (const p of golden.prompts) {
    const want = p.greedy.map((s) => s.token);
    const got: Token[] = [];
    for await (const t of seq.evaluate(p.prompt, { temperature: 0, yieldEogToken: true })) if (got.push(t) >= want.length) break;
    await seq.clearHistory();
    const input = [...p.prompt, ...want.slice(0, -1)].map((t, i): Token | [Token, { generateNext: { token: true; options: { temperature: 0 } } }] =>
      i >= p.prompt.length - 1 ? [t, { generateNext: { token: true, options: { temperature: 0 } } }] : t,
    );
    const res = await seq.controlledEvaluate(input);
    await seq.clearHistory();
    const forced = want.map((_, k) => res[p.prompt.length - 1 + k]?.next.token ?? -1);
    const first = got.findIndex((t, i) => t !== want[i]);
    out.push({
      promptTokens: p.prompt.length,
      freeRunMatch: first < 0 ? want.length : first,
      firstMismatch: first < 0 ? null : first,
      marginAtMismatch: first < 0 ? null : p.greedy[first]!.margin,
      teacherForcedMatch: forced.filter((t, i) => t === want[i]).length,
      teacherForcedMismatchMargins: p.greedy.filter((s, i) => forced[i] !== s.token).map((s) => s.margin),
      steps: want.length,
    });
  }
  seq.dispose();
  await ctx.dispose();
  const sum = (f: (x: GreedyCheck['prompts'][number]) => number) => out.reduce((a, x) => a + f(x), 0);
  return { prompts: out, freeRunMatch: sum((x) => x.freeRunMatch), teacherForcedMatch: sum((x) => x.teacherForcedMatch), steps: sum((x) => x.steps) };
}

/**
 * llama.cpp's log-probabilities at the last position of each golden prompt (its probabilities over the
 * whole vocabulary at temperature 0: the greedy sampler keeps every candidate) against the reference's
 * log-softmax. Tokens whose probability is 0 in f32 are left out and counted (`skipped`).
 */
export async function llamaLogProbs(model: LlamaModel, threads: number, golden: GoldenPrompt[]): Promise<{ maxAbsLogProbDiff: number; skipped: number }[]> {
  const ctx = await model.createContext({ contextSize: 256, sequences: 1, threads });
  const seq = ctx.getSequence();
  const out: { maxAbsLogProbDiff: number; skipped: number }[] = [];
  for (const p of golden) {
    const last = p.prompt.length - 1;
    const res = await seq.controlledEvaluate(
      p.prompt.map((t, i): Token | [Token, { generateNext: { probabilities: true; options: { temperature: 0 } } }] =>
        i === last ? [t, { generateNext: { probabilities: true, options: { temperature: 0 } } }] : t,
      ),
    );
    await seq.clearHistory();
    const probs = res[last]?.next.probabilities;
    if (!probs) throw new Error('llama.cpp returned no probabilities');
    const lp = new Float64Array(p.lastLogits.length).fill(-Infinity);
    for (const [tok, pr] of probs) if (tok < lp.length) lp[tok] = Math.log(pr);
    const d = maxAbsLogProbDiff(lp, logSoftmax(p.lastLogits));
    out.push({ maxAbsLogProbDiff: d.maxAbs, skipped: d.skipped });
  }
  seq.dispose();
  await ctx.dispose();
  return out;
}

export interface LlamaSingleStream {
  decodeTokS: number;
  decodeMsPerToken: number;
  prefillTokS: number;
  prefillTokens: number;
  runs: { decodeTokS: number[]; prefillTokS: number[] };
}

/** The engine benchmark's single-stream figures: decode after a 16-token prompt, prefill of a 512-token prompt. */
export async function llamaSingleStream(model: LlamaModel, threads: number, opts: { decodeTokens: number; prefillTokens: number; runs: number }): Promise<LlamaSingleStream> {
  const ctx = await model.createContext({ contextSize: opts.prefillTokens + opts.decodeTokens + 32, sequences: 1, threads, batchSize: opts.prefillTokens });
  const seq = ctx.getSequence();
  await seq.evaluateWithoutGeneratingNewTokens([...tokens(16, 1)]); // warm-up: first touch of weights and KV
  await seq.clearHistory();
  const decode: number[] = [];
  const prefill: number[] = [];
  for (let r = 0; r < opts.runs; r++) {
    let n = 0;
    let t0 = 0;
    for await (const _ of seq.evaluate([...tokens(16, 10 + r)], { temperature: 0, yieldEogToken: true })) {
      if (n === 0) t0 = performance.now(); // after the prompt and the first sampled token
      if (++n > opts.decodeTokens) break;
    }
    decode.push((opts.decodeTokens / (performance.now() - t0)) * 1000);
    await seq.clearHistory();
    const t1 = performance.now();
    await seq.evaluateWithoutGeneratingNewTokens([...tokens(opts.prefillTokens, 20 + r)]);
    prefill.push((opts.prefillTokens / (performance.now() - t1)) * 1000);
    await seq.clearHistory();
  }
  seq.dispose();
  await ctx.dispose();
  const d = median(decode);
  return { decodeTokS: d, decodeMsPerToken: 1000 / d, prefillTokS: median(prefill), prefillTokens: opts.prefillTokens, runs: { decodeTokS: decode, prefillTokS: prefill } };
}

/**
 * Keeps `concurrency` requests in flight on one context of `concurrency` sequences (node-llama-cpp's
 * multi-sequence API: whatever the sequences queue in one event-loop turn goes into one llama_decode).
 * Greedy, no stop tokens: every request generates exactly maxTokens. TTFT: from the request's start
 * to its first token; ITL: between its tokens.
 */
export async function llamaRun(
  model: LlamaModel,
  reqs: BenchRequest[],
  concurrency: number,
  label: string,
  ctxOptions: Omit<LlamaContextOptions, 'contextSize' | 'sequences'>,
): Promise<LlamaRunResult> {
  const maxLen = Math.max(...reqs.map((r) => r.prompt.length + r.maxTokens)) + 8;
  const n = Math.min(concurrency, reqs.length);
  const ctx = await model.createContext({ ...ctxOptions, contextSize: maxLen, sequences: n });
  const decodes = countDecodes(ctx);
  const ttft: number[] = [];
  const itl: number[] = [];
  let next = 0;
  let out = 0;
  const rss = rssSampler();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async () => {
      const seq = ctx.getSequence();
      for (let i = next++; i < reqs.length; i = next++) {
        const r = reqs[i]!;
        const start = performance.now();
        let last = start;
        let k = 0;
        for await (const _ of seq.evaluate([...r.prompt], { temperature: 0, yieldEogToken: true })) {
          const now = performance.now();
          (k === 0 ? ttft : itl).push(now - last);
          last = now;
          if (++k >= r.maxTokens) break;
        }
        out += k;
        await seq.clearHistory();
      }
      seq.dispose();
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const peakRssBytes = rss.stop();
  const calls = decodes();
  await ctx.dispose();
  const work = reqs.reduce((a, r) => a + r.prompt.length + r.maxTokens - 1, 0); // tokens fed to the model
  return {
    label, requests: reqs.length, outputTokens: out, seconds, outputTokS: out / seconds, ttftMs: lat(ttft), itlMs: lat(itl),
    peakRssBytes, decodeCalls: calls, tokensPerDecode: calls ? work / calls : null,
  };
}
