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

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { EngineError, type EngineErrorCode, type Prompt } from '../../protocol/engine-client.js';
import type { TokenizeInput, TokenizerLoadOptions } from '../tokenizer/index.js';

/** Inputs up to this many characters, and chats up to INLINE_MAX_MESSAGES, are tokenized inline. */
export const INLINE_MAX_CHARS = 16 * 1024;
export const INLINE_MAX_MESSAGES = 64;
/** Characters queued or in progress in the pool, all jobs together. */
export const MAX_PENDING_CHARS = 64 * 1024 * 1024;

export interface PoolWorkerData {
  dir: string;
  options: TokenizerLoadOptions;
  vocabSize: number;
}
export type PoolJob = { id: number; op: 'prompt'; prompt: Prompt } | { id: number; op: 'tokenize'; req: TokenizeInput };
export interface PoolReply {
  id: number;
  ready?: true;
  ids?: Int32Array;
  error?: { code: EngineErrorCode | null; message: string; param: string | null };
}

interface Pending {
  chars: number;
  resolve: (ids: Int32Array) => void;
  reject: (e: Error) => void;
}

class PoolWorker {
  readonly pending = new Map<number, Pending>();
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
  private nextId = 1;
  private pendingChars = 0;
  private closed = false;

  private constructor(
    private readonly data: PoolWorkerData,
    private readonly size: number,
  ) {}

  /** Starts `size` workers and waits until each has loaded the bundle. */
  static async start(data: PoolWorkerData, size: number): Promise<TokenizePool> {
    const pool = new TokenizePool(data, Math.max(1, size));
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

  async close(): Promise<void> {
    this.closed = true;
    const ws = this.workers.splice(0);
    for (const w of ws) this.fail(w, new EngineError('NOT_READY', 'the sidecar is shutting down'));
    await Promise.all(ws.map((w) => w.worker.terminate()));
  }

  private run(job: (id: number) => PoolJob, chars: number): Promise<Int32Array> {
    if (this.closed) return Promise.reject(new EngineError('NOT_READY', 'the sidecar is shutting down'));
    if (this.pendingChars + chars > MAX_PENDING_CHARS) {
      return Promise.reject(new EngineError('QUEUE_FULL', 'too much text is waiting to be tokenized; retry later'));
    }
    const w = this.workers.reduce((a, b) => (b.load() < a.load() ? b : a));
    const id = this.nextId++;
    this.pendingChars += chars;
    return new Promise<Int32Array>((resolve, reject) => {
      w.pending.set(id, { chars, resolve, reject });
      w.worker.postMessage(job(id));
    });
  }

  private settle(w: PoolWorker, reply: PoolReply): void {
    const p = w.pending.get(reply.id);
    if (!p) return;
    w.pending.delete(reply.id);
    this.pendingChars -= p.chars;
    if (reply.error) {
      const { code, message, param } = reply.error;
      p.reject(code ? new EngineError(code, message, param) : new Error(message));
    } else p.resolve(reply.ids!);
  }

  private fail(w: PoolWorker, e: Error): void {
    for (const p of w.pending.values()) {
      this.pendingChars -= p.chars;
      p.reject(e);
    }
    w.pending.clear();
  }

  private spawn(): Promise<void> {
    const worker = new Worker(BOOTSTRAP, { eval: true, workerData: { ...this.data, entry: ENTRY, tsx: TSX } });
    worker.unref(); // an idle pool must not keep the process alive
    const w = new PoolWorker(worker);
    return new Promise<void>((ready, failed) => {
      let started = false;
      worker.on('message', (reply: PoolReply) => {
        if (reply.ready) {
          started = true;
          this.workers.push(w);
          ready();
        } else this.settle(w, reply);
      });
      worker.on('error', (e) => {
        if (!started) failed(e);
      });
      worker.on('exit', (code) => {
        this.workers = this.workers.filter((x) => x !== w);
        this.fail(w, new EngineError('INTERNAL', `a tokenizer worker exited (code ${code})`));
        if (started && !this.closed) this.spawn().catch(() => {}); // replaced; a failing replacement leaves the rest
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

// The worker runs this module's sibling: ./tokenize-worker.js when compiled (dist/), else the .ts
// source through tsx's loader, registered in the worker itself (loader hooks are per thread).
const fromSource = import.meta.url.endsWith('.ts');
const ENTRY = new URL(`./tokenize-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url).href;
const TSX = fromSource ? new URL('./dist/esm/api/index.mjs', pathToFileURL(createRequire(import.meta.url).resolve('tsx/package.json'))).href : null;
const BOOTSTRAP = `(async () => {
  const { workerData } = require('node:worker_threads');
  if (workerData.tsx) (await import(workerData.tsx)).register();
  await import(workerData.entry);
})().catch((e) => { setImmediate(() => { throw e; }); });`;
