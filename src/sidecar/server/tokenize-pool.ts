// Tokenization of large inputs off the sidecar's main thread. The main thread runs every stream's
// per-step delivery (detokenize, frame, write): a 4 MB prompt tokenized there took seconds, and every
// other stream froze for as long (issue #26). So inputs above INLINE_MAX_CHARS (or chats of more than
// INLINE_MAX_MESSAGES messages) go to a small pool of worker threads, each holding its own copy of the
// checkpoint's tokenizer bundle (./tokenize-worker.ts); results come back as transferred Int32Arrays.
// NOTE: small inputs stay inline. A worker round trip (structured clone of the input, a thread wake-up,
// the reply) costs more than tokenizing a chat turn, and time to first token is what short requests
// are measured by; inline work below the threshold costs the other streams no more than a step does.
// Memory: the text waiting in the pool is bounded (MAX_PENDING_CHARS); past it a job is refused with
// QUEUE_FULL (HTTP 429), so a client cannot park unbounded megabytes here.
// Workers start with the pool and are ready (bundle loaded) before start() resolves, so their memory
// is part of the sidecar's footprint at /ready. A worker that dies fails its jobs and is replaced.
// Memory return: a worker that has tokenized RECYCLE_CHARS or more is retired once it has had no job
// for RECYCLE_IDLE_MS and replaced by a fresh one (not at once: starting one, the bundle loaded, is
// CPU an attack's next job would find competing with the streams). A large input grows a worker's heap and the BPE models' scratch arrays
// (several bytes per character, kept for the next word) to its high-water mark; ending the thread
// hands all of it back to the OS at once (issue #26: the sidecar's RSS back to its baseline after an
// attack), where shrinking each structure would leave V8's heap to decide when. Jobs that arrive while
// no worker is ready wait in the pool (bounded by MAX_PENDING_CHARS like the rest).
// Priority: each worker lowers its own thread below the serving threads (./thread-priority.ts), and
// while the engine has live requests it runs in slices with pauses (./bulk-duty.ts: `duty.live`, set by
// the engine host), so a worker never holds a core a stream's next frame waits for; `priority` says what
// it got.

import type { Worker } from 'node:worker_threads';
import { EngineError, type EngineErrorCode, type Prompt } from '../../protocol/engine-client.js';
import type { TokenizeInput, TokenizerLoadOptions } from '../tokenizer/index.js';
import { BulkDuty } from './bulk-duty.js';
import type { ThreadPriority } from './thread-priority.js';
import { sibling, startTsWorker, whenIdleFor } from './ts-worker.js';

/** Inputs up to this many characters, and chats up to INLINE_MAX_MESSAGES, are tokenized inline. */
export const INLINE_MAX_CHARS = 16 * 1024;
export const INLINE_MAX_MESSAGES = 64;
/** Characters queued or in progress in the pool, all jobs together. */
export const MAX_PENDING_CHARS = 64 * 1024 * 1024;
/** Characters a worker tokenizes before it is replaced (at its next idle moment). */
export const RECYCLE_CHARS = 256 * 1024;
export const RECYCLE_IDLE_MS = 1000;

export interface PoolWorkerData {
  /** The pool's BulkDuty flag (./bulk-duty.ts). */
  duty: SharedArrayBuffer;
  dir: string;
  options: TokenizerLoadOptions;
  vocabSize: number;
}
export type PoolJob = { id: number; op: 'prompt'; prompt: Prompt } | { id: number; op: 'tokenize'; req: TokenizeInput };
export interface PoolReply {
  id: number;
  ready?: true;
  /** With `ready`: the worker's thread and its nice value, or why it could not be lowered. */
  priority?: ThreadPriority;
  ids?: Int32Array;
  /** With `ids`: the duty cycle's pauses during the job. */
  pauses?: number;
  error?: { code: EngineErrorCode | null; message: string; param: string | null };
}

interface Pending {
  chars: number;
  resolve: (ids: Int32Array) => void;
  reject: (e: Error) => void;
}

class PoolWorker {
  readonly pending = new Map<number, Pending>();
  /** Characters of the jobs it has been given since it started. */
  chars = 0;
  retiring = false;
  idle?: ReturnType<typeof setTimeout>;
  constructor(readonly worker: Worker) {}
  load(): number {
    let n = 0;
    for (const p of this.pending.values()) n += p.chars;
    return n;
  }
}

/** Whether an input of this size is tokenized in the pool rather than inline. */
export function offThread(size: { chars: number; messages: number }): boolean {
  return size.chars > INLINE_MAX_CHARS || size.messages > INLINE_MAX_MESSAGES;
}

export class TokenizePool {
  private workers: PoolWorker[] = [];
  /** Jobs given while no worker was ready (every one retiring or starting), in arrival order. */
  private waiting: { id: number; job: PoolJob; pending: Pending }[] = [];
  private nextId = 1;
  private pendingChars = 0;
  private closed = false;
  private spawned = 0;
  /** What the latest worker's thread got (every worker asks for the same). */
  priority: ThreadPriority | null = null;
  /** The workers' duty cycle: set `live` while the engine has requests (./bulk-duty.ts). */
  readonly duty: BulkDuty;
  /** The duty cycle's pauses in the jobs answered so far. */
  pauses = 0;
  private readonly data: PoolWorkerData;

  private constructor(
    data: Omit<PoolWorkerData, 'duty'>,
    private readonly size: number,
    private readonly recycleIdleMs: number,
  ) {
    this.duty = new BulkDuty();
    this.data = { ...data, duty: this.duty.buffer };
  }

  /** Starts `size` workers and waits until each has loaded the bundle. `recycleIdleMs` 0: recycle as soon as idle. */
  static async start(data: Omit<PoolWorkerData, 'duty'>, size: number, recycleIdleMs = RECYCLE_IDLE_MS): Promise<TokenizePool> {
    const pool = new TokenizePool(data, Math.max(1, size), recycleIdleMs);
    await Promise.all(Array.from({ length: pool.size }, () => pool.spawn()));
    return pool;
  }

  get queuedChars(): number {
    return this.pendingChars;
  }

  /** A prompt's ids as an array (the engine request is built from one). */
  async encodePrompt(prompt: Prompt, chars: number): Promise<number[]> {
    return toArray(await this.run((id) => ({ id, op: 'prompt', prompt }), chars));
  }

  /** /tokenize's ids as they came from the worker: the engine protocol sends them packed (REPLY_IDS). */
  tokenize(req: TokenizeInput, chars: number): Promise<Int32Array> {
    return this.run((id) => ({ id, op: 'tokenize', req }), chars);
  }

  /** Workers started since the pool was (tests: recycling is observable here). */
  get started(): number {
    return this.spawned;
  }

  async close(): Promise<void> {
    this.closed = true;
    const ws = this.workers.splice(0);
    for (const w of ws) clearTimeout(w.idle);
    const shutdown = new EngineError('NOT_READY', 'the sidecar is shutting down');
    for (const w of ws) this.fail(w, shutdown);
    for (const { pending } of this.waiting.splice(0)) pending.reject(shutdown);
    await Promise.all(ws.map((w) => w.worker.terminate()));
  }

  private run(job: (id: number) => PoolJob, chars: number): Promise<Int32Array> {
    if (this.closed) return Promise.reject(new EngineError('NOT_READY', 'the sidecar is shutting down'));
    if (this.pendingChars + chars > MAX_PENDING_CHARS) {
      return Promise.reject(new EngineError('QUEUE_FULL', 'too much text is waiting to be tokenized; retry later'));
    }
    const id = this.nextId++;
    this.pendingChars += chars;
    return new Promise<Int32Array>((resolve, reject) => {
      const pending = { chars, resolve, reject };
      const ready = this.workers.filter((w) => !w.retiring);
      if (ready.length === 0) this.waiting.push({ id, job: job(id), pending });
      else this.give(ready.reduce((a, b) => (b.load() < a.load() ? b : a)), id, job(id), pending);
    });
  }

  private give(w: PoolWorker, id: number, job: PoolJob, pending: Pending): void {
    clearTimeout(w.idle);
    w.pending.set(id, pending);
    w.chars += pending.chars;
    w.worker.postMessage(job);
  }

  /** A worker past RECYCLE_CHARS with no job for recycleIdleMs ends; its 'exit' starts the replacement. */
  private recycleIfDone(w: PoolWorker): void {
    const idle = () => w.chars >= RECYCLE_CHARS && w.pending.size === 0 && !w.retiring && !this.closed;
    whenIdleFor(w, this.recycleIdleMs, idle, () => {
      w.retiring = true;
      void w.worker.terminate();
    });
  }

  private settle(w: PoolWorker, reply: PoolReply): void {
    const p = w.pending.get(reply.id);
    if (!p) return;
    w.pending.delete(reply.id);
    this.pendingChars -= p.chars;
    this.pauses += reply.pauses ?? 0;
    if (reply.error) {
      const { code, message, param } = reply.error;
      p.reject(code ? new EngineError(code, message, param) : new Error(message));
    } else p.resolve(reply.ids!);
    this.recycleIfDone(w);
  }

  private failWaiting(e: Error): void {
    for (const { pending } of this.waiting.splice(0)) {
      this.pendingChars -= pending.chars;
      pending.reject(new EngineError('INTERNAL', `no tokenizer worker could start: ${e.message}`));
    }
  }

  private fail(w: PoolWorker, e: Error): void {
    for (const p of w.pending.values()) {
      this.pendingChars -= p.chars;
      p.reject(e);
    }
    w.pending.clear();
  }

  private spawn(): Promise<void> {
    this.spawned++;
    const worker = startTsWorker(sibling(import.meta.url, 'tokenize-worker'), this.data, 'ee-tokenize');
    worker.unref(); // an idle pool must not keep the process alive
    const w = new PoolWorker(worker);
    return new Promise<void>((ready, failed) => {
      let started = false;
      worker.on('message', (reply: PoolReply) => {
        if (reply.ready) {
          started = true;
          this.priority = reply.priority ?? null;
          this.workers.push(w);
          for (const { id, job, pending } of this.waiting.splice(0)) this.give(w, id, job, pending);
          ready();
        } else this.settle(w, reply);
      });
      worker.on('error', (e) => {
        if (!started) failed(e);
      });
      worker.on('exit', (code) => {
        this.workers = this.workers.filter((x) => x !== w);
        this.fail(w, new EngineError('INTERNAL', `a tokenizer worker exited (code ${code})`));
        // Replaced (retired or died). A replacement that fails to start leaves the rest; with none
        // left, the jobs waiting for one fail rather than wait forever.
        if (started && !this.closed) this.spawn().catch((e: unknown) => this.workers.length === 0 && this.failWaiting(e as Error));
      });
    });
  }
}

/** Ids converted per event-loop turn: copying millions in one go stalls the loop like tokenizing did. */
const COPY_SLICE = 1 << 16;

async function toArray(ids: Int32Array): Promise<number[]> {
  const out = new Array<number>(ids.length);
  for (let i = 0; i < ids.length; i += COPY_SLICE) {
    if (i > 0) await new Promise((r) => setImmediate(r));
    const end = Math.min(ids.length, i + COPY_SLICE);
    for (let j = i; j < end; j++) out[j] = ids[j]!;
  }
  return out;
}
