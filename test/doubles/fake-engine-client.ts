// An in-memory EngineClient for gateway tests: deterministic text (see ./fake-generation.ts), the same
// error values a real engine reports (the context-length check is the sidecar's own: completionBudget,
// src/sidecar/server/prompt.ts), and knobs to steer timing and failures without real sleeps.
//
// Knobs: setReady/setDraining, holdSteps() (generation pauses before its next step until released),
// failNext(err) (next stream() fails before `accepted`), failAfter(tokens, code) (next request errors
// mid-stream), kill()/revive() (ENGINE_DEAD for open streams and new calls), maxRunning/maxQueued
// (QUEUE_FULL past running+queued), tokensPerStep, stepDelayMs with an injectable sleep, fixedStart.
// Bookkeeping: `submitted`, `aborts` (id + how the abort arrived), `active`, whenActive(n).

import {
  EngineError,
  type EngineClient,
  type EngineErrorCode,
  type EngineEvent,
  type EngineStats,
  type Health,
  type ModelInfo,
  type PromptLogprob,
  type SubmitRequest,
  type TokenizeRequest,
  type TokenizeResult,
} from '../../src/protocol/engine-client.js';
import { completionBudget } from '../../src/sidecar/server/prompt.js';
import { MemoryResponseStore } from '../../src/sidecar/server/response-store.js';
import { DEFAULT_CORPUS, FakeChoice, hashIds } from './fake-generation.js';
import { FakeTokenizer } from './fake-tokenizer.js';

export interface FakeEngineClientOptions {
  model?: Partial<ModelInfo>;
  corpus?: string;
  ready?: boolean;
  maxRunning?: number;
  maxQueued?: number;
  tokensPerStep?: number;
  stepDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
  /** Clock in ms for the timings reported in `done`. */
  now?: () => number;
  /**
   * Start every choice at this corpus offset instead of one derived from the seed or prompt hash, so a
   * reply is exactly the corpus (one lap, then EOS): scripted replies for UI tests.
   */
  fixedStart?: number;
  /** Keep a response store (the sidecar's, in memory); default true. false: a client without one. */
  responseStore?: boolean;
}

export type AbortVia = 'abort()' | 'signal' | 'consumer-return';
interface Active {
  aborted: boolean;
  wake: () => void;
  woken: Promise<void>;
  dead: EngineError | null;
}

export class FakeEngineClient implements EngineClient {
  readonly submitted: SubmitRequest[] = [];
  readonly aborts: { id: string; via: AbortVia }[] = [];
  readonly info: ModelInfo;
  readonly tokenizer: FakeTokenizer;
  private readonly corpus: number[];
  private readonly activeReqs = new Map<string, Active>();
  private readonly peaks = { running: 0, waiting: 0 }; // EngineStats' maxRunning / maxWaiting
  private readonly opts: Required<Omit<FakeEngineClientOptions, 'model' | 'corpus' | 'ready' | 'fixedStart' | 'responseStore'>>;
  /** The sidecar's store class itself (its limits are the sidecar's defaults). */
  readonly responses: MemoryResponseStore | undefined;
  private readonly fixedStart: number | null;
  private ready: boolean;
  private draining = false;
  private killed = false;
  private gate: Promise<void> | null = null;
  private nextFailure: EngineError | null = null;
  private nextMidStreamFailure: { afterTokens: number; code: EngineErrorCode } | null = null;
  private activeWaiters: { n: number; resolve: () => void }[] = [];
  private totals = { prompt: 0, generation: 0, prefixQueries: 0, prefixHits: 0 };

  constructor(options: FakeEngineClientOptions = {}) {
    this.info = {
      id: 'baidu/ERNIE-4.5-0.3B-PT',
      root: '/models/ERNIE-4.5-0.3B-PT',
      maxModelLen: 2048,
      maxNumSeqs: 256,
      vocabSize: 103424,
      createdAt: 1_750_000_000,
      generationDefaults: { temperature: 0.8, topP: 0.8 },
      placeholder: false,
      ...options.model,
    };
    this.tokenizer = new FakeTokenizer(this.info.vocabSize);
    this.corpus = this.tokenizer.encode(options.corpus ?? DEFAULT_CORPUS, false);
    this.ready = options.ready ?? true;
    this.fixedStart = options.fixedStart ?? null;
    this.responses = options.responseStore === false ? undefined : new MemoryResponseStore();
    this.opts = {
      maxRunning: options.maxRunning ?? 8,
      maxQueued: options.maxQueued ?? 64,
      tokensPerStep: options.tokensPerStep ?? 1,
      stepDelayMs: options.stepDelayMs ?? 0,
      sleep: options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
      now: options.now ?? (() => performance.now()),
    };
  }

  // ---- knobs ----
  setReady(ready: boolean): void {
    this.ready = ready;
  }
  setDraining(draining: boolean): void {
    this.draining = draining;
  }
  /** Pauses every request before its next step; returns the release function. */
  holdSteps(): () => void {
    let release!: () => void;
    this.gate = new Promise((r) => (release = r));
    return () => {
      this.gate = null;
      release();
    };
  }
  failNext(err: EngineError): void {
    this.nextFailure = err;
  }
  failAfter(afterTokens: number, code: EngineErrorCode = 'INTERNAL'): void {
    this.nextMidStreamFailure = { afterTokens, code };
  }
  kill(message = 'fake engine killed'): void {
    this.killed = true;
    for (const a of this.activeReqs.values()) {
      a.dead = new EngineError('ENGINE_DEAD', message);
      a.wake();
    }
  }
  revive(): void {
    this.killed = false;
  }
  get active(): number {
    return this.activeReqs.size;
  }
  /** Resolves once at least `n` requests are being generated (accepted and not yet done). */
  whenActive(n: number): Promise<void> {
    if (this.activeReqs.size >= n) return Promise.resolve();
    return new Promise((resolve) => this.activeWaiters.push({ n, resolve }));
  }
  abortedIds(): string[] {
    return [...new Set(this.aborts.map((a) => a.id))];
  }

  // ---- EngineClient ----
  async *stream(req: SubmitRequest, signal?: AbortSignal): AsyncIterable<EngineEvent> {
    this.checkAlive();
    if (!this.ready || this.draining) throw new EngineError('NOT_READY', 'model is not ready');
    const failure = this.nextFailure;
    this.nextFailure = null;
    if (failure) throw failure;
    if (this.activeReqs.has(req.id)) throw new EngineError('INVALID_REQUEST', `duplicate request id ${req.id}`, 'id');
    if (this.activeReqs.size >= this.opts.maxRunning + this.opts.maxQueued) {
      throw new EngineError('QUEUE_FULL', 'the waiting queue is full; retry later');
    }
    const promptIds = this.promptIds(req);
    const maxTokens = completionBudget(req.prompt, promptIds.length, req.sampling.maxTokens, this.info.maxModelLen);
    const midFail = this.nextMidStreamFailure;
    this.nextMidStreamFailure = null;

    const t0 = this.opts.now();
    let ttft: number | null = null;
    let wake!: () => void;
    const state: Active = { aborted: false, dead: null, wake: () => wake(), woken: new Promise((r) => (wake = r)) };
    const onAbort = () => this.markAborted(req.id, 'signal');
    this.submitted.push(req);
    this.activeReqs.set(req.id, state);
    this.peaks.running = Math.max(this.peaks.running, Math.min(this.activeReqs.size, this.opts.maxRunning));
    this.peaks.waiting = Math.max(this.peaks.waiting, this.activeReqs.size - Math.min(this.activeReqs.size, this.opts.maxRunning));
    this.notifyActive();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    const hash = hashIds(promptIds);
    const choices = Array.from({ length: req.n }, (_, i) => new FakeChoice(i, this.corpus, this.tokenizer, req.sampling, maxTokens, hash, this.fixedStart));
    let finished = false;
    let promptLogprobsSent = false;
    try {
      const accepted: EngineEvent = { type: 'accepted', promptTokens: promptIds.length };
      if (req.echo) Object.assign(accepted, { promptTokenIds: promptIds, promptText: this.tokenizer.decode(promptIds, req.sampling.skipSpecialTokens) });
      this.totals.prompt += promptIds.length;
      this.totals.prefixQueries += promptIds.length;
      this.totals.prefixHits += Math.floor(promptIds.length / 2);
      yield accepted;
      while (choices.some((c) => !c.done)) {
        await this.pause(state);
        if (state.dead) throw state.dead;
        const open = choices.filter((c) => !c.done);
        if (state.aborted) for (const c of open) c.finish('abort', null);
        const deltas = open.map((c) => c.step(state.aborted ? 0 : this.opts.tokensPerStep));
        if (midFail) this.injectFailure(deltas, choices, midFail);
        ttft ??= (this.opts.now() - t0) / 1000;
        this.totals.generation += deltas.reduce((s, d) => s + d.tokenIds.length, 0);
        const k = req.sampling.promptLogprobs;
        if (k != null && !promptLogprobsSent) {
          // With the prefill's step, as the sidecar sends them (fake values: -(1 + i mod 4) / 4).
          promptLogprobsSent = true;
          yield { type: 'delta', choices: deltas, promptLogprobs: this.fakePromptLogprobs(promptIds, k) };
        } else yield { type: 'delta', choices: deltas };
        if (state.aborted) break;
      }
      const completionTokens = choices.reduce((s, c) => s + c.tokenIds.length, 0);
      finished = true;
      yield {
        type: 'done',
        usage: { promptTokens: promptIds.length, completionTokens, cachedTokens: Math.floor(promptIds.length / 2) },
        timing: { queued: 0, ttft, e2e: (this.opts.now() - t0) / 1000 },
      };
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (!finished && !state.aborted && !state.dead) this.aborts.push({ id: req.id, via: 'consumer-return' });
      this.activeReqs.delete(req.id);
    }
  }

  private fakePromptLogprobs(ids: number[], k: number): PromptLogprob[] {
    const entry = (tokenId: number, logprob: number) => ({ tokenId, token: this.tokenizer.piece(tokenId), bytes: [...new TextEncoder().encode(this.tokenizer.piece(tokenId))], logprob });
    return ids.map((id, i) =>
      i === 0
        ? { ...entry(id, 0), logprob: null, rank: null, top: [] }
        : { ...entry(id, -(1 + (i % 4)) / 4), rank: 1 + (i % 4), top: this.corpus.slice(0, k).map((t, j) => entry(t, -0.1 * (j + 1))) },
    );
  }

  async abort(id: string): Promise<void> {
    this.markAborted(id, 'abort()');
  }

  async health(): Promise<Health> {
    this.checkAlive();
    return { ready: this.ready && !this.draining, loading: !this.ready, draining: this.draining };
  }

  async stats(): Promise<EngineStats> {
    this.checkAlive();
    const running = Math.min(this.activeReqs.size, this.opts.maxRunning);
    return {
      running,
      waiting: this.activeReqs.size - running,
      kvBlocksTotal: 1024,
      kvBlocksFree: 1024 - running * 4,
      kvUsage: (running * 4) / 1024,
      preemptions: 0,
      prefixCacheQueries: this.totals.prefixQueries,
      prefixCacheHits: this.totals.prefixHits,
      promptTokens: this.totals.prompt,
      generationTokens: this.totals.generation,
      stepTimeMs: 1.5,
      maxRunning: this.peaks.running,
      maxWaiting: this.peaks.waiting,
      fairPreemptions: 0,
    };
  }

  async model(): Promise<ModelInfo> {
    this.checkAlive();
    return this.info;
  }

  async tokenize(req: TokenizeRequest): Promise<TokenizeResult> {
    this.checkAlive();
    // The fake template ignores tools: like the sidecar with such a template, it renders the tool fallback.
    const tokens = req.messages
      ? this.tokenizer.encode(this.tokenizer.applyChatTemplate(req.toolFallback ?? req.messages, req.addGenerationPrompt), req.addSpecialTokens)
      : this.tokenizer.encode(req.prompt ?? '', req.addSpecialTokens);
    return { tokens, maxModelLen: this.info.maxModelLen };
  }

  async detokenize(tokens: number[]): Promise<{ prompt: string }> {
    this.checkAlive();
    const bad = tokens.find((t) => !this.tokenizer.isValid(t));
    if (bad !== undefined) throw new EngineError('INVALID_REQUEST', `token id ${bad} is out of vocabulary`, 'tokens');
    return { prompt: this.tokenizer.decode(tokens, false) };
  }

  async close(reason?: string): Promise<void> {
    this.kill(reason);
  }

  // ---- internals ----
  private checkAlive(): void {
    if (this.killed) throw new EngineError('ENGINE_DEAD', 'fake engine is dead');
  }

  private promptIds(req: SubmitRequest): number[] {
    const p = req.prompt;
    if (p.kind === 'tokens') {
      const bad = p.ids.find((t) => !this.tokenizer.isValid(t));
      if (bad !== undefined) throw new EngineError('INVALID_REQUEST', `token id ${bad} is out of vocabulary`, 'prompt');
      return p.ids;
    }
    const text = p.kind === 'text' ? p.text : this.tokenizer.applyChatTemplate(p.toolFallback ?? p.messages, p.addGenerationPrompt);
    return this.tokenizer.encode(text, true);
  }

  private async pause(state: Active): Promise<void> {
    if (this.opts.stepDelayMs > 0) await Promise.race([this.opts.sleep(this.opts.stepDelayMs), state.woken]);
    else await Promise.resolve();
    while (this.gate && !state.aborted && !state.dead) await Promise.race([this.gate, state.woken]);
  }

  private markAborted(id: string, via: AbortVia): void {
    this.aborts.push({ id, via });
    const state = this.activeReqs.get(id);
    if (state && !state.aborted) {
      state.aborted = true;
      state.wake();
    }
  }

  private injectFailure(deltas: ReturnType<FakeChoice['step']>[], choices: FakeChoice[], f: { afterTokens: number; code: EngineErrorCode }): void {
    for (const d of deltas) {
      const choice = choices[d.index]!;
      if (choice.tokenIds.length >= f.afterTokens && choice.finishReason !== 'abort') {
        choice.finish('error', null);
        Object.assign(d, { finishReason: 'error', error: { code: f.code, message: 'injected engine failure' } });
      }
    }
  }

  private notifyActive(): void {
    this.activeWaiters = this.activeWaiters.filter((w) => (this.activeReqs.size >= w.n ? (w.resolve(), false) : true));
  }
}
