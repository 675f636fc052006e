// EngineHost: the EngineClient implemented in-process on top of a NativeEngine and a checkpoint's
// tokenizer bundle. The sidecar serves it over its sockets (serveEngine); tests use it directly.
//
// Request table: string ids (the gateway's) ↔ numeric engine ids (u32, never reused while live).
// Thread rule: the engine calls onStep once per step on the Node thread (the native binding queues it
// there); handleStep hands each request's delta to its stream's emit (open(): serveEngine batches a
// step's events into one frame per connection) and never awaits, so a slow consumer of one stream
// cannot stall the step loop or the other streams.
// Flow control (src/protocol/flow.ts): a request whose client has a full window is paused in the engine
// (KV kept, not scheduled) and resumed when credit comes back; stream() applies it to its own consumer.
// Lifetime: a request ends when all its choices finished, or by abort (abort(id), the stream's
// AbortSignal, or the consumer returning early — the generator's finally). Every end that leaves the
// engine generating calls engine.abort, so its KV blocks return to the pool in the next step.

import {
  EngineError,
  type EngineClient,
  type EngineErrorCode,
  type EngineEvent,
  type EngineStats,
  type Health,
  type ModelInfo,
  type StreamOptions,
  type SubmitRequest,
  type TokenizeRequest,
  type TokenizeResult,
} from '../../protocol/engine-client.js';
import { EventQueue } from '../../protocol/event-queue.js';
import { eventUnits, nextCoalesced } from '../../protocol/flow.js';
import type { WireError } from '../../protocol/messages.js';
import { toWireError, type Emit, type PushBackend, type PushedStream } from '../../protocol/push-stream.js';
import type { Tracer } from '../../protocol/trace.js';
import type { NativeEngine, StepOutput } from '../engine/native-engine.js';
import type { GrammarPool, GrammarSession } from '../grammar/pool.js';
import type { TokenizerBundle } from '../tokenizer/index.js';
import { toEngineRequest } from './engine-request.js';
import { LiveRequest } from './live-request.js';
import { checkPromptFits, checkTextSize, maxTokenBytes, promptSize, textSize } from './input-size.js';
import { completionBudget, promptIds, promptParam } from './prompt.js';
import { offThread, type TokenizePool } from './tokenize-pool.js';

/**
 * How often drain() looks at the request table. Requests end at engine steps, so this is how late after
 * the last one ends a drain notices: short next to a shutdown, long next to the few wake-ups it costs.
 */
const DRAIN_POLL_MS = 20;

type WireErrorEvent = { type: 'error' } & WireError;

export interface EngineHostOptions {
  bundle: TokenizerBundle;
  model: ModelInfo;
  /** Past this many sequences waiting in the engine, new requests get QUEUE_FULL (HTTP 429). Exact:
   * read from the engine's live count at the moment of submitting, after tokenization. */
  maxNumQueuedReqs: number;
  /** Where large inputs are tokenized (./tokenize-pool.ts); without one everything is tokenized inline. */
  tokenizePool?: TokenizePool;
  /** Monotonic clock in ms (tests); default performance.now. */
  now?: () => number;
  /** Stage marks (sc.tokenized, sc.submitted, eng.step, sc.step, sc.detok); default none. */
  tracer?: Tracer;
  /** vllm:cache_config_info's labels, as the sidecar sized the KV cache. */
  cacheConfig?: Record<string, string>;
  /** The grammar engine (../grammar/pool.ts); without one a request with a constraint is refused. */
  grammar?: GrammarPool;
}

export class EngineHost implements EngineClient, PushBackend {
  private engine!: NativeEngine;
  private readonly byId = new Map<string, LiveRequest>();
  private readonly byNum = new Map<number, LiveRequest>();
  private nextNum = 1;
  private pausedCount = 0; // requests in the table with live.paused
  private draining = false;
  private closed = false;
  private readonly now: () => number;
  private readonly maxTokenBytes: number;
  private readonly admitting = new Set<string>(); // ids being tokenized or compiled (duplicate check)
  private readonly grammars = new Map<number, GrammarSession>(); // engine id → its masks (constrained requests)
  private readonly byGrammar = new Map<number, LiveRequest>(); // grammar session key → request

  private constructor(private readonly opts: EngineHostOptions) {
    this.now = opts.now ?? (() => performance.now());
    this.maxTokenBytes = maxTokenBytes(opts.bundle.tokenizer);
  }

  /** Creates the host and its engine; `createEngine` receives the host's step callback. */
  static async start(
    opts: EngineHostOptions,
    createEngine: (onStep: (outputs: StepOutput[]) => void) => NativeEngine | Promise<NativeEngine>,
  ): Promise<EngineHost> {
    const host = new EngineHost(opts);
    host.engine = await createEngine((outputs) => host.handleStep(outputs));
    if (opts.grammar) opts.grammar.onFailed = (key, _index, message) => host.grammarFailed(key, message);
    return host;
  }

  /** Requests in the table (submitted, not yet ended). */
  get liveRequests(): number {
    return this.byId.size;
  }

  /**
   * The push interface (serveEngine): events go to `emit` synchronously, a step's all in one callback.
   * A prompt tokenized off-thread is admitted when its ids arrive: a refusal then comes as an `error`
   * event, and an abort meanwhile ends the request as soon as it is admitted (one path for aborts).
   */
  open(req: SubmitRequest, emit: Emit): PushedStream {
    const prepared = this.prepare(req);
    const ids = req.constraint ? this.withGrammar(req, prepared) : prepared;
    if (!(ids instanceof Promise)) return this.start(req, ids, emit);
    let started: PushedStream | null = null;
    let consumed = 0;
    let aborted = false;
    ids
      .then((got) => {
        const [tokens, grammar] = Array.isArray(got) ? [got, undefined] : [got.ids, got.grammar];
        started = this.start(req, tokens, emit, grammar);
        if (aborted) started.abort();
        else if (consumed > 0) started.credit(consumed);
      })
      .catch((err: unknown) => emit({ type: 'error', ...toWireError(err) }));
    return {
      credit: (c) => {
        consumed = Math.max(consumed, c);
        started?.credit(c);
      },
      abort: () => {
        aborted = true;
        started?.abort();
      },
    };
  }

  /**
   * A constrained request: its prompt ids and its grammar compiled (a worker writes the first masks)
   * before it reaches the engine, so a compile never stalls the engine's steps. Throws EngineError.
   */
  private async withGrammar(req: SubmitRequest, prepared: number[] | Promise<number[]>): Promise<{ ids: number[]; grammar: GrammarSession }> {
    const pool = this.opts.grammar!;
    this.admitting.add(req.id);
    try {
      const stops = [...(req.sampling.ignoreEos ? [] : this.opts.bundle.eosIds), ...req.sampling.stopTokenIds];
      const [ids, grammar] = await Promise.all([prepared, pool.open(req.constraint!, req.n, stops)]);
      if (this.closed || this.draining) {
        pool.close(grammar.key);
        throw new EngineError('NOT_READY', 'the engine is shutting down; retry on another replica');
      }
      return { ids, grammar };
    } finally {
      this.admitting.delete(req.id);
    }
  }

  private start(req: SubmitRequest, ids: number[], emit: Emit, grammar?: GrammarSession): PushedStream {
    let live: LiveRequest;
    try {
      live = this.admit(req, ids, emit, grammar);
    } catch (e) {
      if (grammar) this.opts.grammar?.close(grammar.key);
      throw e;
    }
    const accepted: EngineEvent = { type: 'accepted', promptTokens: live.init.promptTokens };
    if (req.echo) this.addEcho(accepted, req, ids);
    emit(accepted);
    return {
      credit: (consumed) => this.credit(live, consumed),
      abort: () => this.endLive(live, 'abort'),
    };
  }

  /** In-process streams: open() into a queue; what the consumer takes is its credit. */
  async *stream(req: SubmitRequest, signal?: AbortSignal, opts: StreamOptions = {}): AsyncIterable<EngineEvent> {
    const queue = new EventQueue<EngineEvent | WireErrorEvent>();
    const s = this.open(req, (ev) => queue.push(ev as EngineEvent | WireErrorEvent));
    const onAbort = () => s.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    let consumed = 0;
    try {
      for (;;) {
        const ev = await nextCoalesced(queue, opts.coalesce === true);
        // A refusal found after open() returned (a prompt tokenized off-thread, a grammar compiled):
        // thrown, as open() itself throws one found up front.
        if (ev.type === 'error') throw new EngineError(ev.code, ev.message, ev.param ?? undefined);
        consumed += eventUnits(ev);
        s.credit(consumed);
        yield ev;
        if (ev.type === 'done') return;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      s.abort(); // no-op after `done`; otherwise the consumer left early
    }
  }

  async abort(id: string): Promise<void> {
    const live = this.byId.get(id);
    if (live) this.endLive(live, 'abort');
  }

  async health(): Promise<Health> {
    const ready = !this.draining && !this.closed;
    return { ready, loading: false, draining: this.draining || this.closed, ...(ready ? {} : { message: 'draining' }) };
  }

  async stats(): Promise<EngineStats> {
    const s = this.engine.stats();
    return {
      running: s.running,
      waiting: s.waiting,
      kvBlocksTotal: s.kvBlocksTotal,
      kvBlocksFree: s.kvBlocksFree,
      kvUsage: s.kvUsage,
      preemptions: s.preemptions,
      prefixCacheQueries: s.prefixCacheQueries,
      prefixCacheHits: s.prefixCacheHits,
      promptTokens: s.promptTokens,
      generationTokens: s.generationTokens,
      stepTimeMs: s.stepTimeMs,
      maxRunning: s.maxRunning,
      maxWaiting: s.maxWaiting,
      fairPreemptions: s.fairPreemptions,
      paused: this.pausedCount,
      ...(s.iterationTokens ? { iterationTokens: s.iterationTokens } : {}),
      ...(this.opts.cacheConfig ? { cacheConfig: this.opts.cacheConfig } : {}),
    };
  }

  async model(): Promise<ModelInfo> {
    return this.opts.model;
  }

  async tokenize(req: TokenizeRequest): Promise<TokenizeResult> {
    try {
      const size = textSize({ text: req.prompt, messages: req.messages });
      checkTextSize(size, req.messages ? 'messages' : 'prompt');
      const pool = this.opts.tokenizePool;
      const tokens = pool && offThread(size) ? await pool.tokenize(req, size.chars) : this.opts.bundle.tokenize(req).tokens;
      if (!req.returnTokenStrs) return { tokens, maxModelLen: this.opts.model.maxModelLen };
      // The tokenizer's pieces (transformers' convert_ids_to_tokens), as vLLM's return_token_strs.
      const tokenStrs = Array.from(tokens, (id) => this.opts.bundle.tokenizer.idToToken(id) ?? '');
      return { tokens, maxModelLen: this.opts.model.maxModelLen, tokenStrs };
    } catch (err) {
      if (err instanceof EngineError) throw err;
      throw new EngineError('INVALID_REQUEST', (err as Error).message, req.messages ? 'messages' : 'prompt');
    }
  }

  async detokenize(tokens: number[]): Promise<{ prompt: string }> {
    const vocab = this.opts.model.vocabSize;
    const bad = tokens.find((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
    if (bad !== undefined) throw new EngineError('INVALID_REQUEST', `token id ${bad} is out of vocabulary (size ${vocab})`, 'tokens');
    return this.opts.bundle.detokenize(tokens);
  }

  /** Refuses new requests (NOT_READY) and resolves when the table is empty or after timeoutMs. */
  async drain(timeoutMs: number, poll: (ms: number) => Promise<void>): Promise<boolean> {
    this.draining = true;
    for (const deadline = this.now() + timeoutMs; this.byId.size > 0 && this.now() < deadline; ) await poll(DRAIN_POLL_MS);
    return this.byId.size === 0;
  }

  /** Stops the engine; requests still open end with an error event (ENGINE_DEAD for the gateway). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.engine.close();
    await this.opts.tokenizePool?.close();
    await this.opts.grammar?.stop();
    for (const live of [...this.byId.values()]) this.endLive(live, 'error', 'the engine was shut down');
  }

  /**
   * Sizes first (before any tokenizing), then the prompt's ids: inline (returned), or in the pool when
   * large (a promise). Throws EngineError for a refusal known up front.
   */
  private prepare(req: SubmitRequest): number[] | Promise<number[]> {
    const refuseIfClosing = () => {
      if (this.closed || this.draining) throw new EngineError('NOT_READY', 'the engine is shutting down; retry on another replica');
    };
    refuseIfClosing();
    if (this.byId.has(req.id) || this.admitting.has(req.id)) throw new EngineError('INVALID_REQUEST', `duplicate request id ${req.id}`, 'id');
    // Without a grammar engine a constrained request is refused rather than run unconstrained.
    if (req.constraint && !this.opts.grammar) throw new EngineError('INVALID_REQUEST', 'structured output is not supported by this engine', req.constraint.param);
    const { bundle, model } = this.opts;
    const size = promptSize(req.prompt);
    const param = promptParam(req.prompt);
    checkTextSize(size, param);
    checkPromptFits(size, param, model.maxModelLen, this.maxTokenBytes);
    const pool = this.opts.tokenizePool;
    if (!(pool && offThread(size))) return promptIds(req.prompt, bundle, model.vocabSize);
    this.admitting.add(req.id);
    return pool.encodePrompt(req.prompt, size.chars).then(
      (ids) => {
        this.admitting.delete(req.id);
        refuseIfClosing();
        return ids;
      },
      (err: unknown) => {
        this.admitting.delete(req.id);
        throw err;
      },
    );
  }

  /**
   * In one synchronous stretch: the queue limit against the engine's live count, and submit. So the
   * limit is exact under any burst: nothing else submits between the check and the submit.
   */
  private admit(req: SubmitRequest, ids: number[], emit: Emit, grammar?: GrammarSession): LiveRequest {
    const { bundle, model } = this.opts;
    this.opts.tracer?.mark(req.id, 'sc.tokenized');
    const maxTokens = completionBudget(req.prompt, ids.length, req.sampling.maxTokens, model.maxModelLen);
    // NOTE: the count alone, not stats(): that builds the whole stats object (histogram included) across
    // the native boundary, on every request's way to its first token.
    if (this.engine.waitingCount() >= this.opts.maxNumQueuedReqs) {
      throw new EngineError('QUEUE_FULL', `${this.opts.maxNumQueuedReqs} requests are already waiting; retry later`);
    }
    const num = this.allocateNum();
    const er = toEngineRequest(num, ids, req.n, maxTokens, req.sampling, bundle.eosIds, model.vocabSize);
    if (grammar) {
      er.grammar = grammar.buf;
      er.maskWords = grammar.maskWords;
    }
    const refused = this.engine.submit(er);
    if (refused !== null) throw new EngineError('INVALID_REQUEST', `the engine refused the request: ${refused}`);
    this.opts.tracer?.mark(req.id, 'sc.submitted');
    const live = new LiveRequest(
      {
        id: req.id,
        num,
        n: req.n,
        promptTokens: ids.length,
        stop: req.sampling.stop,
        minTokens: req.sampling.minTokens ?? 0,
        skipSpecialTokens: req.sampling.skipSpecialTokens,
        logprobs: req.sampling.logprobs,
        eosStops: new Set(req.sampling.ignoreEos ? [] : bundle.eosIds),
        submittedAt: this.now(),
        maxTokens,
        ...(req.sampling.promptLogprobs != null ? { promptLogprobs: { ids, k: req.sampling.promptLogprobs } } : {}),
      },
      bundle,
      emit,
    );
    this.byId.set(req.id, live);
    this.byNum.set(num, live);
    if (this.opts.tokenizePool) this.opts.tokenizePool.duty.live = true;
    if (grammar) {
      this.grammars.set(num, grammar);
      this.byGrammar.set(grammar.key, live);
    }
    return live;
  }

  private addEcho(accepted: EngineEvent & { type: 'accepted' }, req: SubmitRequest, ids: number[]): void {
    const p = req.prompt;
    accepted.promptTokenIds = ids;
    accepted.promptText = p.kind === 'text' ? p.text : this.opts.bundle.tokenizer.decode(ids, { skipSpecialTokens: req.sampling.skipSpecialTokens });
  }

  private allocateNum(): number {
    for (;;) {
      const num = this.nextNum;
      this.nextNum = num >= 0xffffffff ? 1 : num + 1;
      if (!this.byNum.has(num)) return num;
    }
  }

  /** The engine's step callback: route outputs to their requests; unknown ids (ended here) are dropped. */
  private handleStep(outputs: StepOutput[]): void {
    const now = this.now();
    const groups = new Map<number, StepOutput[]>();
    for (const o of outputs) {
      const g = groups.get(o.id);
      if (g) g.push(o);
      else groups.set(o.id, [o]);
    }
    // (The constrained choices' tokens reached their grammar workers before this callback: the engine
    // posts them into each request's mask buffer, ../grammar/mask-layout.ts.)
    for (const [num, outs] of groups) {
      const live = this.byNum.get(num);
      if (!live) continue;
      const first = live.firstTokenAt === null;
      live.apply(outs, now);
      if (first && live.firstTokenAt !== null && this.opts.tracer) this.traceFirstToken(live.init.id, now);
      if (live.done) this.remove(live);
      else if (!live.paused && live.windowFull) this.setPaused(live, true);
    }
  }

  /** A request's grammar failed (a rejected token, or its worker died): it alone ends, with INTERNAL (not a dead engine). */
  private grammarFailed(key: number, message: string): void {
    const live = this.byGrammar.get(key);
    if (live) this.endLive(live, 'error', message, 'INTERNAL');
  }

  private credit(live: LiveRequest, consumed: number): void {
    live.credit(consumed);
    if (live.paused && !live.windowFull && !live.done) this.setPaused(live, false);
  }

  private setPaused(live: LiveRequest, paused: boolean): void {
    live.paused = paused;
    this.pausedCount += paused ? 1 : -1;
    if (!this.closed) this.engine.pause(live.init.num, paused);
  }

  /** The first token's marks; the step's start is the callback's time less the step's duration. */
  private traceFirstToken(id: string, callbackAt: number): void {
    const t = this.opts.tracer!;
    const tCallback = t.now() - (this.now() - callbackAt);
    t.mark(id, 'eng.step', tCallback - this.engine.stats().stepTimeMs);
    t.mark(id, 'sc.step', tCallback);
    t.mark(id, 'sc.detok');
  }

  private endLive(live: LiveRequest, reason: 'abort' | 'error', message?: string, code?: EngineErrorCode): void {
    if (live.done) return;
    live.end(reason, this.now(), message, code);
    this.remove(live);
  }

  /** Drops a finished request from the table; tells the engine when it may still be generating it. */
  private remove(live: LiveRequest): void {
    if (this.byNum.get(live.init.num) !== live) return;
    this.byNum.delete(live.init.num);
    this.byId.delete(live.init.id);
    if (this.opts.tokenizePool && this.byId.size === 0) this.opts.tokenizePool.duty.live = false;
    const grammar = this.grammars.get(live.init.num);
    if (grammar) {
      this.grammars.delete(live.init.num);
      this.byGrammar.delete(grammar.key);
      this.opts.grammar?.close(grammar.key);
    }
    if (live.paused) {
      live.paused = false;
      this.pausedCount--;
    }
    if (live.needsEngineAbort && !this.closed) this.engine.abort(live.init.num);
  }
}
