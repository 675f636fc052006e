// OffThreadCodec: one worker thread per process that takes the whole-payload passes of large inputs off
// the event loop serving every stream (issue #26). The gateway parses large request bodies with it
// (../gateway/body.ts: BodyParser) and encodes large SUBMIT/TOKENIZE frames (../protocol/frame-codec.ts);
// the sidecar decodes and validates them with it. The serving thread only hands bytes over (transferred,
// not copied) and takes the result back (a structured clone: a string's characters are copied as one
// block, not looked at one by one).
// Order: jobs are answered in the order given (one worker, one queue); callers that need an order
// between frames keep it themselves (client-connection.ts, serve-engine.ts).
// Memory return: the worker's heap grows to the largest inputs it parsed; once it has handled
// RECYCLE_BYTES and then had no job for RECYCLE_IDLE_MS it is replaced, which gives all of it back to
// the OS at once (as the tokenizer pool does: ../sidecar/server/tokenize-pool.ts). NOTE: not at once:
// starting a worker is a few hundred ms of CPU, which an attack's next request would find competing
// with the streams; after a quiet second it competes with nothing.
// A worker that dies fails its jobs (the caller answers them as errors) and is replaced.

import type { Worker } from 'node:worker_threads';
import { z } from 'zod';
import type { BodySchemaName } from '../gateway/body-schemas.js';
import { ApiError } from '../gateway/errors.js';
import type { FrameCodec } from '../protocol/frame-codec.js';
import { FrameError, type Frame } from '../protocol/framing.js';
import { ProtocolError, type Message, type MessageBody, type MsgTypeName } from '../protocol/messages.js';
import { sibling, startTsWorker, whenIdleFor } from '../sidecar/server/ts-worker.js';

/** Bytes a worker handles before it is replaced (once idle for RECYCLE_IDLE_MS). */
export const RECYCLE_BYTES = 8 * 1024 * 1024;
export const RECYCLE_IDLE_MS = 1000;

export type CodecJob =
  | { id: number; op: 'parse'; bytes: Uint8Array; schema?: BodySchemaName }
  | { id: number; op: 'encode'; type: MsgTypeName; body: unknown; maxFrameBytes: number }
  | { id: number; op: 'decode'; type: number; payload: Uint8Array };
export interface CodecReply {
  id: number;
  json?: unknown;
  parts?: Uint8Array[];
  msg?: Message;
  error?: { kind: 'api' | 'protocol' | 'frame' | 'zod' | 'other'; message: string };
  api?: { status: number; code: string; param: string | null };
  /** With kind 'zod': the schema's issues, as its parse would have thrown them. */
  issues?: z.core.$ZodIssue[];
}

/** The buffers of `views` that can be transferred: each one a view of its whole, unshared ArrayBuffer. */
export function transferList(views: Uint8Array[]): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const v of views) {
    const b = v.buffer;
    if (b instanceof ArrayBuffer && v.byteOffset === 0 && v.byteLength === b.byteLength && !out.includes(b)) out.push(b);
  }
  return out;
}

interface Pending {
  bytes: number;
  resolve: (r: CodecReply) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
  bytes: number;
  idle?: ReturnType<typeof setTimeout>;
}

export class OffThreadCodec implements FrameCodec {
  private slot: Slot;
  private nextId = 1;
  private closed = false;
  /** Workers started so far (tests: recycling is observable here). */
  started = 0;

  /** `recycleIdleMs`: how long a worker past RECYCLE_BYTES must have been idle to be replaced (0: at once). */
  constructor(private readonly recycleIdleMs = RECYCLE_IDLE_MS) {
    this.slot = this.spawn();
  }

  /** A request body as readJsonBody's checks leave it; rejects with the same ApiError. */
  /** The body as a JSON object; with `schema`, validated by it: the schema's output (../gateway/body.ts: BodyParser). */
  async parseBody(bytes: Uint8Array, schema?: BodySchemaName): Promise<unknown> {
    return (await this.run({ id: 0, op: 'parse', bytes, ...(schema ? { schema } : {}) }, bytes.byteLength, [bytes])).json!;
  }

  async encode<T extends MsgTypeName>(type: T, body: MessageBody<T>, maxFrameBytes: number): Promise<Uint8Array[]> {
    return (await this.run({ id: 0, op: 'encode', type, body, maxFrameBytes }, 0, [])).parts!;
  }

  async decode(frame: Frame): Promise<Message> {
    return (await this.run({ id: 0, op: 'decode', type: frame.type, payload: frame.payload }, frame.payload.byteLength, [frame.payload])).msg!;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.slot.idle);
    const { worker } = this.slot;
    this.fail(this.slot, new Error('the codec is closed'));
    await worker.terminate();
  }

  private run(job: CodecJob, bytes: number, transfer: Uint8Array[]): Promise<CodecReply> {
    if (this.closed) return Promise.reject(new Error('the codec is closed'));
    const id = this.nextId++;
    const slot = this.slot;
    return new Promise<CodecReply>((resolve, reject) => {
      clearTimeout(slot.idle);
      slot.pending.set(id, { bytes, resolve, reject });
      slot.bytes += bytes;
      slot.worker.postMessage({ ...job, id }, transferList(transfer));
    }).then(toResult);
  }

  private spawn(): Slot {
    this.started++;
    const worker = startTsWorker(sibling(import.meta.url, 'off-thread-codec-worker'), {}, 'ee-codec');
    worker.unref(); // an idle codec must not keep the process alive
    const slot: Slot = { worker, pending: new Map(), bytes: 0 };
    worker.on('message', (reply: CodecReply) => {
      const p = slot.pending.get(reply.id);
      if (!p) return;
      slot.pending.delete(reply.id);
      p.resolve(reply);
      this.recycleIfDone(slot);
    });
    worker.on('error', () => undefined); // 'exit' follows and fails its jobs
    worker.on('exit', (code) => {
      this.fail(slot, new Error(`the codec worker exited (code ${code})`));
      if (this.slot === slot && !this.closed) this.slot = this.spawn();
    });
    return slot;
  }

  /** A worker past RECYCLE_BYTES idle for recycleIdleMs ends; new jobs go to its replacement at once. */
  private recycleIfDone(slot: Slot): void {
    const idle = () => slot.bytes >= RECYCLE_BYTES && slot.pending.size === 0 && !this.closed && this.slot === slot;
    whenIdleFor(slot, this.recycleIdleMs, idle, () => {
      this.slot = this.spawn();
      void slot.worker.terminate();
    });
  }

  private fail(slot: Slot, e: Error): void {
    for (const p of slot.pending.values()) p.reject(e);
    slot.pending.clear();
  }
}

/** The reply's result, or its error rebuilt as the class the in-thread path would have thrown. */
function toResult(r: CodecReply): CodecReply {
  if (!r.error) return r;
  const { kind, message } = r.error;
  if (kind === 'api' && r.api) throw new ApiError(r.api.status, message, r.api.code, r.api.param);
  if (kind === 'protocol') throw new ProtocolError(message);
  if (kind === 'frame') throw new FrameError(message);
  // NOTE: ZodRealError, what a schema's parse throws: zod 4's plain ZodError is no Error instance, and
  // Hono's onError sees only Errors (anything else escapes it: an empty 500 and an uncaught exception).
  if (kind === 'zod' && r.issues) throw new z.ZodRealError(r.issues);
  throw new Error(message);
}

let shared: OffThreadCodec | null = null;

/**
 * This process's codec, its worker started on the first call (at start-up: its memory is then part of
 * the footprint at /ready). NOTE: one per process on purpose: it serves the process's one event loop.
 */
export function processCodec(): OffThreadCodec {
  return (shared ??= new OffThreadCodec());
}
