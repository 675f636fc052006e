// A deterministic stand-in for the native batching engine (./native-engine.ts), obeying its contract
// exactly: submit → null | refusal reason, abort(id) idempotent with the request's blocks back in the
// pool after the next step, one onStep(outputs) per step with every sequence's new tokens together,
// n choices forked after prefill, stop token ids, maxTokens / maxModelLen → Length, logprobs arrays of
// the native layout, stats(), close() ending running requests with Finish.Abort.
//
// Used by the sidecar's unit tests and, through ./fake-native-engine-factory.ts and ./fake-bin.js, by
// the end-to-end process tests, so they run without model weights. Output: choice c of a request cycles
// `corpus` from an offset fixed by (seed or prompt hash, c; greedy ignores c), one lap, then `eosId`.
// `script` overrides that per request (tests feeding exact token sequences).
//
// Scheduling: FCFS; paused requests (pause(id, true)) are left out of steps and passed over by
// admission, keeping their blocks, until resumed; a waiting request is admitted when its n sequences fit under maxNumSeqs and its
// blocks fit the pool; prefill takes one step whatever its length (no chunking: not what tests probe).
// Steps run on a timer (`stepMs`, 0 = setImmediate) while there is work, or only on step() (`manual`).

import { Finish, type EngineOptions, type EngineRequest, type EngineStatsNative, type NativeEngine, type StepCallback, type StepOutput } from '../../src/sidecar/engine/native-engine.js';

export interface FakeNativeEngineOptions {
  engine: EngineOptions;
  vocabSize: number;
  /** Token ids generated in a cycle (non-empty). */
  corpus: readonly number[];
  /** Emitted after one lap of the corpus; ends the choice when it is in the request's stopTokenIds. */
  eosId: number;
  /** Corpus positions a choice may start at (default: all); e.g. where no UTF-8 character is split. */
  starts?: readonly number[];
  kvBlocks?: number; // default 1024
  blockSize?: number; // default 16
  tokensPerStep?: number; // default 1
  /** Auto mode: ms between steps (0 = next macrotask). Ignored in manual mode. */
  stepMs?: number;
  /**
   * Auto mode with stepMs > 0: 'interval' (default) waits stepMs after each step; 'fixed' steps on a
   * wall-clock cadence (step k at start + k·stepMs), running the steps a busy event loop delayed back
   * to back (at most FIXED_PACE_CATCH_UP per timer), as a GPU engine on its own thread keeps producing
   * while Node is busy and its queued step callbacks then run in a burst. Serving-path benchmarks use
   * it so the production rate does not depend on the consumer.
   */
  pace?: 'interval' | 'fixed';
  /** Steps happen only when step() is called (unit tests: no timers at all). */
  manual?: boolean;
  /** Exact tokens for choice `c` of a request (then eos); undefined falls back to the corpus. */
  script?: (req: EngineRequest, choice: number) => readonly number[] | undefined;
}

interface Seq {
  tokens: number[];
  script: readonly number[] | undefined;
  start: number;
  done: boolean;
}

interface Req {
  r: EngineRequest;
  seqs: Seq[];
  prefilled: boolean;
  aborted: boolean;
  paused: boolean;
}

export class FakeNativeEngine implements NativeEngine {
  private readonly waiting: Req[] = [];
  private readonly running = new Map<number, Req>();
  private readonly known = new Set<number>(); // ids queued or running (duplicates are refused)
  private readonly toFree: Req[] = []; // aborted: blocks return at the next step
  private readonly totals = { preemptions: 0, prefixQueries: 0, prefixHits: 0, prompt: 0, generation: 0, steps: 0, lastTokens: 0, lastSeqs: 0 };
  private readonly peaks = { running: 0, waiting: 0 }; // the native stats' maxRunning / maxWaiting
  private readonly kvBlocks: number;
  private readonly blockSize: number;
  private timer: ReturnType<typeof setTimeout> | ReturnType<typeof setImmediate> | null = null;
  /** Fixed pace: when the current busy period began and the steps run in it. */
  private paceStart = 0;
  private paceSteps = 0;
  private closed = false;
  /** Every request submitted and accepted, in order (test bookkeeping). */
  readonly submitted: EngineRequest[] = [];
  readonly aborted: number[] = [];

  constructor(
    private readonly opts: FakeNativeEngineOptions,
    private readonly onStep: StepCallback,
  ) {
    if (opts.corpus.length === 0) throw new RangeError('corpus must not be empty');
    this.kvBlocks = opts.kvBlocks ?? 1024;
    this.blockSize = opts.blockSize ?? 16;
  }

  submit(req: EngineRequest): string | null {
    const { maxModelLen, maxNumSeqs } = this.opts.engine;
    if (this.closed) return 'engine is closed';
    if (this.known.has(req.id)) return `duplicate request id ${req.id}`;
    if (req.prompt.length === 0) return 'empty prompt';
    if (req.prompt.length >= maxModelLen) return `prompt of ${req.prompt.length} tokens leaves no room under max_model_len ${maxModelLen}`;
    if (!(req.n >= 1) || req.n > maxNumSeqs) return `n = ${req.n} can never be scheduled (max_num_seqs ${maxNumSeqs})`;
    if (!(req.maxTokens >= 1)) return 'maxTokens must be at least 1';
    for (const id of req.prompt) if (id < 0 || id >= this.opts.vocabSize) return `token id ${id} is out of vocabulary`;
    if (this.blocksFor(req.prompt.length + req.maxTokens, req.n) > this.kvBlocks) return 'request can never fit the KV cache';
    const greedy = req.temperature === 0;
    const base = req.seed !== null ? hash([req.seed]) : hash(Array.from(req.prompt));
    const starts = this.opts.starts?.length ? this.opts.starts : null;
    const seqs = Array.from({ length: req.n }, (_, c): Seq => {
      const pick = (base + (greedy ? 0 : c * 7919)) % (starts ?? this.opts.corpus).length;
      return { tokens: [], script: this.opts.script?.(req, c), start: starts ? starts[pick]! : pick, done: false };
    });
    this.known.add(req.id);
    this.submitted.push(req);
    this.waiting.push({ r: req, seqs, prefilled: false, aborted: false, paused: false });
    this.notePeaks();
    this.schedule();
    return null;
  }

  abort(id: number): void {
    if (!this.known.has(id)) return;
    this.aborted.push(id);
    const w = this.waiting.findIndex((q) => q.r.id === id);
    const req = w >= 0 ? this.waiting.splice(w, 1)[0]! : this.running.get(id)!;
    if (req.aborted) return;
    req.aborted = true;
    this.running.delete(id);
    this.known.delete(id);
    this.toFree.push(req);
    this.schedule();
  }

  pause(id: number, paused: boolean): void {
    const q = this.running.get(id) ?? this.waiting.find((w) => w.r.id === id);
    if (!q) return;
    q.paused = paused;
    if (paused) this.pauses++;
    this.schedule();
  }

  /** How many pause(id, true) calls reached a live request (test bookkeeping). */
  pauses = 0;

  waitingCount(): number {
    return this.waiting.length;
  }

  stats(): EngineStatsNative {
    let used = 0;
    for (const q of [...this.running.values(), ...this.toFree]) used += this.blocksUsed(q);
    return {
      running: this.running.size,
      waiting: this.waiting.length,
      maxRunning: this.peaks.running,
      maxWaiting: this.peaks.waiting,
      fairPreemptions: 0,
      kvBlocksTotal: this.kvBlocks,
      kvBlocksFree: this.kvBlocks - used,
      kvUsage: used / this.kvBlocks,
      preemptions: this.totals.preemptions,
      prefixCacheQueries: this.totals.prefixQueries,
      prefixCacheHits: this.totals.prefixHits,
      promptTokens: this.totals.prompt,
      generationTokens: this.totals.generation,
      steps: this.totals.steps,
      stepTimeMs: 0.1,
      lastStepTokens: this.totals.lastTokens,
      lastStepSeqs: this.totals.lastSeqs,
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cancelTimer();
    const outputs: StepOutput[] = [];
    for (const q of [...this.running.values(), ...this.waiting]) {
      q.seqs.forEach((s, index) => s.done || outputs.push(this.output(q, index, [], Finish.Abort)));
    }
    this.running.clear();
    this.waiting.length = 0;
    this.known.clear();
    if (outputs.length > 0) this.onStep(outputs);
  }

  /** Runs one engine step now (manual mode; also usable in auto mode). Returns the outputs delivered. */
  step(): StepOutput[] {
    if (this.closed) return [];
    this.totals.steps++;
    this.notePeaks();
    this.toFree.length = 0; // aborted requests' blocks return to the pool in this step
    this.admit();
    const outputs: StepOutput[] = [];
    let prefill = 0;
    for (const q of this.running.values()) {
      if (q.paused) continue;
      if (!q.prefilled) {
        q.prefilled = true;
        prefill += q.r.prompt.length;
        this.totals.prompt += q.r.prompt.length;
        this.totals.prefixQueries += q.r.prompt.length;
      }
      q.seqs.forEach((s, index) => {
        if (!s.done) outputs.push(this.advance(q, s, index));
      });
      if (q.seqs.every((s) => s.done)) {
        this.running.delete(q.r.id);
        this.known.delete(q.r.id);
      }
    }
    this.totals.lastSeqs = outputs.length;
    this.totals.lastTokens = outputs.reduce((n, o) => n + o.tokens.length, 0) + prefill;
    if (outputs.length > 0) this.onStep(outputs);
    return outputs;
  }

  private advance(q: Req, s: Seq, index: number): StepOutput {
    const { maxModelLen } = this.opts.engine;
    const ids: number[] = [];
    let finish = Finish.None;
    for (let i = 0; i < (this.opts.tokensPerStep ?? 1) && finish === Finish.None; i++) {
      const id = this.next(s);
      s.tokens.push(id);
      ids.push(id);
      if (q.r.stopTokenIds.includes(id)) finish = Finish.Stop;
      else if (s.tokens.length >= q.r.maxTokens || q.r.prompt.length + s.tokens.length >= maxModelLen) finish = Finish.Length;
    }
    this.totals.generation += ids.length;
    if (finish !== Finish.None) s.done = true;
    return this.output(q, index, ids, finish);
  }

  private next(s: Seq): number {
    const k = s.tokens.length;
    if (s.script) return k < s.script.length ? s.script[k]! : this.opts.eosId;
    const corpus = this.opts.corpus;
    return k < corpus.length ? corpus[(s.start + k) % corpus.length]! : this.opts.eosId;
  }

  /** Logprobs in the native layout: chosen logprob per token; k alternatives per token, descending. */
  private output(q: Req, index: number, ids: number[], finish: Finish): StepOutput {
    const out: StepOutput = { id: q.r.id, index, tokens: Int32Array.from(ids), finish, promptTokens: q.r.prompt.length, cachedTokens: 0 };
    const k = q.r.logprobs;
    if (k >= 0) {
      out.logprobs = Float32Array.from(ids, (id, t) => -0.05 - (hash([id, t, index]) % 100) / 100);
      out.topIds = new Int32Array(ids.length * k);
      out.topLogprobs = new Float32Array(ids.length * k);
      ids.forEach((id, t) => {
        for (let j = 0; j < k; j++) {
          out.topIds![t * k + j] = j === 0 ? id : (id + j) % this.opts.vocabSize;
          out.topLogprobs![t * k + j] = j === 0 ? out.logprobs![t]! : out.logprobs![t]! - j;
        }
      });
    }
    return out;
  }

  private admit(): void {
    const used = () => [...this.running.values()].reduce((n, q) => n + q.seqs.length, 0);
    for (;;) {
      const at = this.waiting.findIndex((w) => !w.paused);
      if (at < 0) break;
      const q = this.waiting[at]!;
      if (used() + q.r.n > this.opts.engine.maxNumSeqs) break;
      if (this.stats().kvBlocksFree < this.blocksFor(q.r.prompt.length + q.r.maxTokens, q.r.n)) break;
      this.waiting.splice(at, 1);
      this.running.set(q.r.id, q);
    }
  }

  /** Blocks a request holds: its prompt's (shared by the choices) plus each choice's own. */
  private blocksUsed(q: Req): number {
    if (!q.prefilled) return 0; // waiting requests hold no blocks
    const prompt = Math.ceil(q.r.prompt.length / this.blockSize);
    return prompt + q.seqs.reduce((n, s) => n + Math.ceil(s.tokens.length / this.blockSize), 0);
  }

  private blocksFor(tokens: number, n: number): number {
    return Math.ceil(tokens / this.blockSize) * n;
  }

  private notePeaks(): void {
    this.peaks.running = Math.max(this.peaks.running, this.running.size);
    this.peaks.waiting = Math.max(this.peaks.waiting, this.waiting.length);
  }

  private schedule(): void {
    if (this.opts.manual || this.closed || this.timer) return;
    const ms = this.opts.stepMs ?? 0;
    // Busy: something to step. Paused requests alone are not (pause(id, false) schedules again).
    const busy = () =>
      this.toFree.length > 0 || this.waiting.some((w) => !w.paused) || [...this.running.values()].some((q) => !q.paused);
    if (ms > 0 && this.opts.pace === 'fixed') return this.scheduleFixed(ms, busy);
    const run = () => {
      this.timer = null;
      this.step();
      this.notePeaks();
      if (busy()) this.schedule();
    };
    this.timer = ms > 0 ? setTimeout(run, ms) : setImmediate(run);
  }

  private scheduleFixed(ms: number, busy: () => boolean): void {
    if (this.paceSteps === 0) this.paceStart = performance.now();
    const run = () => {
      this.timer = null;
      const owed = Math.floor((performance.now() - this.paceStart) / ms) - this.paceSteps;
      for (let k = 0; k < Math.min(Math.max(owed, 1), FIXED_PACE_CATCH_UP) && !this.closed; k++) {
        this.paceSteps++;
        this.step();
        this.notePeaks();
      }
      if (busy()) this.schedule();
      else this.paceSteps = 0; // idle: the next request starts a new cadence
    };
    const due = this.paceStart + (this.paceSteps + 1) * ms - performance.now();
    this.timer = setTimeout(run, Math.max(0, due));
  }

  private cancelTimer(): void {
    if (!this.timer) return;
    clearTimeout(this.timer as ReturnType<typeof setTimeout>);
    clearImmediate(this.timer as ReturnType<typeof setImmediate>);
    this.timer = null;
  }
}

/** Fixed pace: most steps one timer runs to catch up (bounds the burst a long stall leaves). */
const FIXED_PACE_CATCH_UP = 8;

/** FNV-1a over u32s: stable offsets for seeds and prompts. */
function hash(xs: readonly number[]): number {
  let h = 0x811c9dc5;
  for (const x of xs) {
    h ^= x & 0xffff;
    h = Math.imul(h, 0x01000193) >>> 0;
    h ^= (x >>> 16) & 0xffff;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}
