// The sidecar's grammar engine: a small pool of worker threads (./worker.ts), each owning an xgrammar
// instance, its compile cache and the matchers of the requests pinned to it. Thread design:
//  - open(): a request's grammar is compiled (or found in a cache) and its matchers created on one
//    worker, which writes every choice's first mask into the request's SharedArrayBuffer
//    (./mask-layout.ts) before the request reaches the engine: a slow compile holds that request and
//    that worker, never the engine's step loop;
//  - each engine step, the engine's step thread writes every constrained choice's new token into the
//    request's buffer and rings the process's grammar bell (native/src/engine/grammar_bell.h); the
//    workers, blocked on the bell between steps, accept their requests' tokens and write the next masks
//    while the engine runs its next forward pass. This thread is not on that path: its step callback
//    (detokenizing, streaming) runs beside the mask work, not before it. The step thread waits for a
//    row only at sampling (native/src/engine/engine.cc, await_masks);
//  - a request is pinned to the worker with the fewest constrained rows (choices), where a worker
//    that has the grammar cached wins a tie: every row's mask is computed once per step, so rows are
//    spread evenly (a batch of requests sharing one schema on one worker would compute all its masks
//    there, one after another, while the engine waits); each worker compiles a shared grammar once.
//  - the pool's own messages (open, close) ring the bell after posting, so a worker blocked on it
//    turns to its message queue.
// A worker that reports a rejected token (failed) or dies ends its requests through onFailed.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { EngineError, type Constraint } from '../../protocol/engine-client.js';
import { native } from '../native.js';
import { allocateMasks, MaskCounter, maskWords } from './mask-layout.js';
import { grammarSource, sourceKey, type GrammarSource } from './source.js';
import type { GrammarVocab } from './vocab.js';

const DESCRIBE: Record<Constraint['kind'], string> = {
  json_schema: 'JSON schema',
  json_object: 'JSON object grammar',
  regex: 'regular expression',
  choice: 'choice',
  grammar: 'grammar',
  structural_tag: 'structural tag',
};

export interface WorkerData {
  vocab: GrammarVocab;
  cacheSize: number;
  /** The worker's step counters (MaskCounter), written by it only. */
  counters: Float64Array;
}

/** The pool's mask work since start, summed over the workers; busyMsByWorker: each one's busy time. */
export interface MaskStats {
  workers: number;
  batches: number;
  rows: number;
  busyMs: number;
  busyMsByWorker: number[];
  hopMs: number;
}
export type WorkerRequest =
  | { op: 'open'; key: number; source: GrammarSource; n: number; stopIds: number[]; buf: Int32Array }
  | { op: 'close'; key: number };
export type WorkerReply =
  | { op: 'ready' }
  | { op: 'opened'; key: number; error?: string; compileMs?: number; cached?: boolean }
  | { op: 'failed'; key: number; index: number; message: string }
  | { op: 'crashed'; message: string };

export interface GrammarPoolOptions {
  vocab: GrammarVocab;
  workers: number;
  /** Compiled grammars kept per worker (least recently used evicted). */
  cacheSize: number;
}

/** A constrained request's masks: what the engine request carries (EngineRequest.grammar / maskWords). */
export interface GrammarSession {
  readonly key: number;
  readonly buf: Int32Array;
  readonly maskWords: number;
  /** How long the worker took to compile (or find) the grammar and write the first masks, ms. */
  readonly compileMs: number;
  readonly cached: boolean;
}

interface PoolWorker {
  worker: Worker;
  sessions: Map<number, number>; // session key → its rows (choices)
  rows: number; // the sum of sessions' rows: the mask work per step
  keys: Set<string>; // sources it compiled (approximately its cache: it may have evicted some)
  counters: Float64Array;
  opening: Map<number, { resolve: (r: WorkerReply & { op: 'opened' }) => void; reject: (e: Error) => void }>;
}

export class GrammarPool {
  private readonly workers: PoolWorker[] = [];
  private readonly byKey = new Map<number, PoolWorker>();
  private nextKey = 1;
  private closed = false;
  /** A choice's grammar failed (its engine row is marked failed too), or its worker died (index -1). */
  onFailed: (key: number, index: number, message: string) => void = () => {};

  private constructor(private readonly opts: GrammarPoolOptions) {}

  /** Starts the workers; resolves when each has built its TokenizerInfo. */
  static async start(opts: GrammarPoolOptions): Promise<GrammarPool> {
    const pool = new GrammarPool(opts);
    await Promise.all(Array.from({ length: Math.max(1, opts.workers) }, () => pool.spawn()));
    return pool;
  }

  get size(): number {
    return this.workers.length;
  }

  /**
   * Compiles the constraint (or finds it cached) on a worker and writes each choice's first mask.
   * A constraint that does not compile: EngineError INVALID_REQUEST naming constraint.param.
   */
  async open(constraint: Constraint, n: number, stopIds: readonly number[]): Promise<GrammarSession> {
    if (this.closed) throw new EngineError('NOT_READY', 'the grammar engine is shutting down');
    const source = grammarSource(constraint);
    const skey = sourceKey(source);
    const w = this.pick(skey);
    const key = this.nextKey++;
    const words = maskWords(this.opts.vocab.vocabSize);
    const buf = allocateMasks(n, words);
    const reply = await new Promise<WorkerReply & { op: 'opened' }>((resolve, reject) => {
      w.opening.set(key, { resolve, reject });
      w.sessions.set(key, n);
      w.rows += n;
      this.byKey.set(key, w);
      this.post(w, { op: 'open', key, source, n, stopIds: [...stopIds], buf });
    }).finally(() => w.opening.delete(key));
    if (reply.error !== undefined) {
      this.forget(key);
      throw new EngineError('INVALID_REQUEST', `the ${DESCRIBE[constraint.kind]} does not compile: ${reply.error}`, constraint.param);
    }
    w.keys.add(skey);
    return { key, buf, maskWords: words, compileMs: reply.compileMs ?? 0, cached: reply.cached ?? false };
  }

  /** Mask work since start, summed over the workers (./worker.ts keeps the counters). */
  maskStats(): MaskStats {
    const s: MaskStats = { workers: this.workers.length, batches: 0, rows: 0, busyMs: 0, busyMsByWorker: [], hopMs: 0 };
    for (const { counters: c } of this.workers) {
      s.batches += c[MaskCounter.Batches]!;
      s.rows += c[MaskCounter.Rows]!;
      s.busyMs += c[MaskCounter.BusyMs]!;
      s.busyMsByWorker.push(c[MaskCounter.BusyMs]!);
      s.hopMs += c[MaskCounter.HopMs]!;
    }
    return s;
  }

  /** The request ended: its matchers are freed (the engine no longer waits on its masks). */
  close(key: number): void {
    const w = this.byKey.get(key);
    if (!w) return;
    this.forget(key);
    this.post(w, { op: 'close', key });
  }

  async stop(): Promise<void> {
    this.closed = true;
    native().grammarRing(); // a worker blocked on the bell returns to its event loop, where terminate() ends it
    await Promise.all(this.workers.map((w) => w.worker.terminate()));
    this.workers.length = 0;
  }

  private forget(key: number): void {
    const w = this.byKey.get(key);
    if (w) {
      w.rows -= w.sessions.get(key) ?? 0;
      w.sessions.delete(key);
    }
    this.byKey.delete(key);
  }

  /** The worker with the fewest rows; among those, one that has the source compiled. */
  private pick(skey: string): PoolWorker {
    let best = this.workers[0]!;
    for (const w of this.workers)
      if (w.rows < best.rows || (w.rows === best.rows && w.keys.has(skey) && !best.keys.has(skey))) best = w;
    return best;
  }

  private post(w: PoolWorker, msg: WorkerRequest): void {
    w.worker.postMessage(msg);
    native().grammarRing();
  }

  private spawn(): Promise<void> {
    const counters = new Float64Array(new SharedArrayBuffer(8 * MaskCounter.Length));
    const data: WorkerData = { vocab: this.opts.vocab, cacheSize: this.opts.cacheSize, counters };
    const worker = new Worker(BOOTSTRAP, { eval: true, workerData: { ...data, entry: ENTRY, tsx: TSX } });
    const w: PoolWorker = { worker, sessions: new Map(), rows: 0, keys: new Set(), counters, opening: new Map() };
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      worker.on('message', (r: WorkerReply) => {
        if (r.op === 'ready') {
          ready = true;
          this.workers.push(w);
          resolve();
        } else if (r.op === 'opened') w.opening.get(r.key)?.resolve(r);
        else if (r.op === 'failed') this.onFailed(r.key, r.index, r.message);
        else this.lost(w, `the grammar worker failed: ${r.message}`);
      });
      worker.on('error', (e) => {
        if (!ready) reject(e);
        else this.lost(w, `the grammar worker died: ${e.message}`);
      });
      worker.on('exit', () => {
        if (!ready) reject(new Error('the grammar worker exited while starting'));
        else if (!this.closed) this.lost(w, 'the grammar worker exited');
      });
    });
  }

  /** A worker is gone: its requests fail, a new worker takes its place. */
  private lost(w: PoolWorker, message: string): void {
    const i = this.workers.indexOf(w);
    if (i < 0) return;
    this.workers.splice(i, 1);
    for (const [, p] of w.opening) p.reject(new EngineError('INTERNAL', message));
    for (const key of [...w.sessions.keys()]) {
      this.forget(key);
      this.onFailed(key, -1, message);
    }
    void w.worker.terminate();
    if (!this.closed) this.spawn().catch(() => {});
  }
}

// The worker runs this module's sibling: ./worker.js when compiled (dist/), else the .ts source
// through tsx's loader, registered in the worker itself (loader hooks are per thread).
const fromSource = import.meta.url.endsWith('.ts');
const ENTRY = new URL(`./worker.${fromSource ? 'ts' : 'js'}`, import.meta.url).href;
const TSX = fromSource ? new URL('./dist/esm/api/index.mjs', pathToFileURL(createRequire(import.meta.url).resolve('tsx/package.json'))).href : null;
const BOOTSTRAP = `(async () => {
  const { workerData } = require('node:worker_threads');
  if (workerData.tsx) (await import(workerData.tsx)).register();
  await import(workerData.entry);
})().catch((e) => { setImmediate(() => { throw e; }); });`;
