// The contract of the native batching engine (native/src/engine/, built for the engine issue):
// a step loop on its own native thread with a paged KV block pool, prefix caching, continuous
// batching with chunked prefill, preemption by recompute and a sampler. The sidecar submits
// token-id requests and receives every sequence's new tokens once per engine step.
//
// Everything here is token ids and numbers: text, chat templates, stop strings and OpenAI shapes
// stay in TypeScript (stop strings: the sidecar's detokenizer sees them and calls abort()).

import { MAX_LOGPROBS, MAX_N } from '../../protocol/limits.js';
import type { EngineTiming } from '../../protocol/engine-client.js';
import type { CpuProfile } from '../native.js';

/** A request as the engine sees it. Validated by the sidecar; the engine re-checks and refuses. */
export interface EngineRequest {
  id: number; // unique u32 chosen by the sidecar
  prompt: Int32Array; // token ids, used exactly as given
  maxTokens: number; // >= 0 (0: prefill only, for prompt logprobs); the engine also stops at maxModelLen
  n: number; // choices: forked after prefill, sharing the prompt's KV blocks (copy-on-write)
  temperature: number; // 0 = greedy
  topP: number; // (0, 1]
  topK: number; // 0 = off
  minP: number; // 0 = off
  repetitionPenalty: number; // 1 = off (HF/vLLM semantics: divide positive logits, multiply negative)
  frequencyPenalty: number; // 0 = off (OpenAI semantics, over generated tokens)
  presencePenalty: number; // 0 = off
  seed: number | null; // null: the engine draws one; choice i uses an independent stream
  logitBiasIds: Int32Array;
  logitBiasValues: Float32Array;
  stopTokenIds: Int32Array; // generation ends after emitting one of these (eos ids unless ignore_eos)
  minTokens?: number; // default 0; stop ids are banned from sampling (and end nothing) while a choice has fewer outputs
  logprobs: number; // -1: none; k >= 0: the chosen token's logprob plus the top-k alternatives
  /** -1 / absent: none; k >= 0: each prompt token's logprob (from the 2nd), rank and top-k, computed in
   * the prefill (such a prompt skips the prefix cache: every position's logits are needed). */
  promptLogprobs?: number;
  /** Structured output: the grammar masks' shared buffer (src/sidecar/grammar/mask-layout.ts) and its
   * row length, ceil(vocab / 32) words. Held by the engine binding's caller until the last output. */
  grammar?: Int32Array;
  maskWords?: number;
}

/** Prompt logprobs computed in one step (choice 0's output): prompt tokens start.. start+count-1. */
export interface StepPromptLogprobs {
  start: number; // >= 1: the first prompt token has no logprob
  logprobs: Float32Array; // per token
  ranks: Int32Array; // per token: 1 + tokens with a larger logit
  topIds: Int32Array; // per token, k each
  topLogprobs: Float32Array;
}

/** A request's phases on the engine's clock, on its last output: the protocol's EngineTiming as the addon gives it. */
export type RequestTimingNative = EngineTiming;

export const enum Finish {
  None = 0,
  Stop = 1, // a stop token was emitted (it is the last token of this output)
  Length = 2, // maxTokens or maxModelLen reached
  Abort = 3, // abort() or engine shutdown
  Error = 4,
}

/** One choice's progress in one step. */
export interface StepOutput {
  id: number;
  index: number; // choice index, 0..n-1
  tokens: Int32Array; // tokens produced this step (normally one)
  // Per token: logprob of the chosen token, and (when logprobs = k > 0) k alternatives each.
  logprobs?: Float32Array;
  topIds?: Int32Array; // tokens.length * k
  topLogprobs?: Float32Array; // tokens.length * k
  finish: Finish;
  promptTokens: number;
  cachedTokens: number; // prompt tokens served from the prefix cache
  error?: string;
  prompt?: StepPromptLogprobs;
  timing?: RequestTimingNative;
}

export interface EngineStatsNative {
  running: number;
  /** Sequences queued, counted live (a submit is counted before it returns): limits read it exactly. */
  waiting: number;
  maxRunning: number; // the largest running set after any step, forks included (never above maxNumSeqs)
  maxWaiting: number; // the most sequences ever waiting
  fairPreemptions: number; // preemptions that seated a request under its fair share (native/src/engine/fair_share.h)
  kvBlocksTotal: number;
  kvBlocksFree: number;
  kvUsage: number;
  preemptions: number;
  prefixCacheQueries: number; // tokens looked up
  prefixCacheHits: number; // tokens found
  promptTokens: number;
  generationTokens: number;
  steps: number;
  stepTimeMs: number; // last step
  /** The CPU runner's phase profile after the last step (cumulative ms since load); absent on CUDA. */
  profile?: CpuProfile;
  /** Structured output: the step thread's time waiting for grammar masks not there yet, ms since start. */
  maskWaitMs?: number;
  /**
   * Steps that waited for masks; summed over them, ms from the grammar bell's last ring (the previous
   * step's tokens handed to the workers) to the step thread waiting for the rows (its forward queued)
   * and to the last row there.
   */
  maskSteps?: number;
  maskWaitFromRingMs?: number;
  maskDoneFromRingMs?: number;
  lastStepTokens: number; // tokens computed in the last step (prefill chunks + decodes)
  lastStepSeqs: number; // sequences in the last step
  /** Tokens computed per step (vllm:iteration_tokens_total): bucket bounds, cumulative counts. */
  iterationTokens?: HistogramSnapshot;
}

export interface HistogramSnapshot {
  bounds: number[];
  counts: number[]; // cumulative: steps with at most bounds[i]
  count: number;
  sum: number;
}

export interface EngineOptions {
  maxNumSeqs: number; // default 256
  maxNumBatchedTokens: number; // token budget per step (the server: 512 on CPU, 2048 on CUDA)
  maxModelLen: number; // planned by planEngine (./plan.ts)
  enablePrefixCaching: boolean; // default true
  seed: number; // engine RNG seed for requests without one (default 0)
  /** Prefill batching (native/src/engine/scheduler.h): while a quarter of maxNumSeqs decode, new
   * prompts wait until this many are queued or the oldest waited prefillMaxWait steps. 1 (default):
   * off. It trades time to first token for throughput (bench/results/gpu.json, prefillBatch16C256
   * against the plain runs): a throughput-first setting, not a default. */
  prefillBatch?: number;
  prefillMaxWait?: number; // steps, default 8
}

/**
 * What the engine refuses up front (submit() returns the reason). The native engine has no values of
 * its own for these: createNativeEngine (../native.ts) passes ENGINE_LIMITS, the API's limits.
 */
export interface EngineLimits {
  maxN: number; // choices per request
  maxLogprobs: number; // alternatives per token
}
export const ENGINE_LIMITS: EngineLimits = { maxN: MAX_N, maxLogprobs: MAX_LOGPROBS };

export interface NativeEngine {
  /** Queues a request; returns null, or the reason it can never run (refused up front). */
  submit(req: EngineRequest): string | null;
  /** Aborts a request (all its choices); its blocks return to the pool in the next step. Idempotent. */
  abort(id: number): void;
  /**
   * Pauses (true) or resumes (false) every choice of a request from the next step on: paused sequences
   * keep their KV blocks and are left out of the steps (their client's buffer is full: src/protocol/flow.ts).
   * Unknown or finished ids are ignored.
   */
  pause(id: number, paused: boolean): void;
  stats(): EngineStatsNative;
  /**
   * stats().waiting alone (requests queued and not yet scheduled), without building the stats object:
   * the sidecar checks it against its queue limit on every request's way to the engine.
   */
  waitingCount(): number;
  /** Stops the step loop: running requests end with Finish.Abort. */
  close(): Promise<void>;
}

/** onStep receives every step's outputs together (all sequences' new tokens in one call). */
export type StepCallback = (outputs: StepOutput[]) => void;
