// One live, handshaken connection of a FramedEngineClient: demultiplexes STEP frames to per-request
// queues and REPLY frames to pending calls, and sends the streams' credit (./flow.ts) back, all streams'
// reports of one task in one CREDIT frame. When the transport closes, every open stream receives an
// ENGINE_DEAD error event and every pending call rejects with EngineError('ENGINE_DEAD').
// Large inputs (./messages.ts: inputBytes) are encoded by the injected FrameCodec when there is one
// (./frame-codec.ts: off this thread), and leave when it is done. Other frames do not wait for it (other
// streams' CREDIT and SUBMIT, calls): that would stall every stream of the connection behind one
// client's megabytes. The one order kept is the one the server needs: a request's ABORT never passes
// its SUBMIT.

import { EngineError, type ModelInfo } from './engine-client.js';
import { EventQueue } from './event-queue.js';
import type { FrameCodec } from './frame-codec.js';
import { FrameDecoder, writeParts } from './framing.js';
import {
  callResultSchemas,
  decodeMessage,
  inputBytes,
  LARGE_INPUT_BYTES,
  packedResultSchemas,
  encodeMessageParts,
  PROTOCOL_VERSION,
  type Message,
  type MessageBody,
  type MsgTypeName,
  type WireEvent,
} from './messages.js';
import type { ByteTransport } from './transport.js';

export type CallType = keyof typeof callResultSchemas;
interface PendingCall {
  type: CallType;
  resolve: (value: unknown) => void;
  reject: (err: EngineError) => void;
}

export class ClientConnection {
  readonly streams = new Map<string, EventQueue<WireEvent>>();
  private readonly calls = new Map<number, PendingCall>();
  private nextCid = 1;
  private closedFlag = false;
  private deathReason = 'engine connection closed';
  private helloWaiter: { resolve: (m: ModelInfo) => void; reject: (e: EngineError) => void } | null = null;
  private credits = new Map<string, number>(); // stream id → units consumed in all, not yet sent
  model: ModelInfo | null = null;
  /** Request ids whose SUBMIT is being encoded by the codec → settles once it is handed to the transport. */
  private readonly encoding = new Map<string, Promise<void>>();

  constructor(
    private readonly transport: ByteTransport,
    private readonly maxFrameBytes: number,
    private readonly codec?: FrameCodec,
  ) {
    const decoder = new FrameDecoder(maxFrameBytes);
    transport.onData((chunk) => {
      try {
        for (const frame of decoder.push(chunk)) this.dispatch(decodeMessage(frame));
      } catch (err) {
        // Framing or schema violation: the byte stream can't be trusted any more.
        this.deathReason = `engine protocol error: ${(err as Error).message}`;
        transport.close();
      }
    });
    transport.onClose((err) => this.onClosed(err));
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Sends HELLO and resolves with the server's model info, or rejects with the server's refusal. */
  handshake(secret: string | undefined, timeoutMs: number): Promise<ModelInfo> {
    return new Promise<ModelInfo>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.helloWaiter = null;
        reject(new EngineError('ENGINE_DEAD', `engine handshake timed out after ${timeoutMs} ms`));
        this.transport.close();
      }, timeoutMs);
      this.helloWaiter = {
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.send('HELLO', secret === undefined ? { version: PROTOCOL_VERSION } : { version: PROTOCOL_VERSION, secret }).catch(
        (err: unknown) => this.helloWaiter?.reject(dead(err)),
      );
    });
  }

  /**
   * Writes the message's frame; settles when the transport took it. The frame is written synchronously,
   * before send() returns, unless it is a large input for the codec or the ABORT of one.
   */
  async send<T extends MsgTypeName>(type: T, body: MessageBody<T>): Promise<void> {
    if (this.closedFlag) throw new EngineError('ENGINE_DEAD', this.deathReason);
    const write = (parts: Uint8Array[]) => writeParts((b) => this.transport.write(b), parts);
    try {
      if (this.codec !== undefined && inputBytes(type, body) > LARGE_INPUT_BYTES) return await this.sendEncoded(type, body, write);
      const submitting = type === 'ABORT' ? this.encoding.get((body as MessageBody<'ABORT'>).id) : undefined;
      if (submitting) await submitting;
      return await write(encodeMessageParts(type, body, this.maxFrameBytes));
    } catch (err) {
      throw err instanceof EngineError ? err : dead(err);
    }
  }

  private async sendEncoded<T extends MsgTypeName>(type: T, body: MessageBody<T>, write: (parts: Uint8Array[]) => Promise<void>): Promise<void> {
    const id = type === 'SUBMIT' ? (body as MessageBody<'SUBMIT'>).req.id : null;
    let handedOver!: () => void;
    if (id !== null) this.encoding.set(id, new Promise<void>((r) => (handedOver = r)));
    try {
      const parts = await this.codec!.encode(type, body, this.maxFrameBytes);
      if (this.closedFlag) throw new EngineError('ENGINE_DEAD', this.deathReason);
      const written = write(parts);
      handedOver?.();
      await written;
    } finally {
      if (id !== null) {
        handedOver();
        this.encoding.delete(id);
      }
    }
  }

  /** Reports that stream `id` has consumed `consumed` units in all; sent with the task's other reports. */
  credit(id: string, consumed: number): void {
    if (this.closedFlag) return;
    if (this.credits.size === 0) queueMicrotask(() => this.flushCredits());
    this.credits.set(id, consumed);
  }

  private flushCredits(): void {
    const consumed = [...this.credits];
    this.credits.clear();
    // Best effort: a connection that broke ends its streams anyway.
    if (consumed.length > 0) this.send('CREDIT', { consumed }).catch(() => undefined);
  }

  /** A unary request/reply; the reply's result is validated against that call's result schema. */
  call<T extends CallType>(type: T, body: Omit<MessageBody<T>, 'cid'>): Promise<unknown> {
    const cid = this.nextCid++;
    return new Promise((resolve, reject) => {
      this.calls.set(cid, { type, resolve, reject });
      this.send(type, { ...body, cid } as MessageBody<T>).catch((err: unknown) => {
        this.calls.delete(cid);
        reject(err);
      });
    });
  }

  close(reason = 'engine client closed'): void {
    this.deathReason = reason;
    this.transport.close();
  }

  private dispatch(msg: Message): void {
    switch (msg.type) {
      case 'HELLO_OK':
        this.model = msg.body.model;
        this.helloWaiter?.resolve(msg.body.model);
        this.helloWaiter = null;
        return;
      case 'HELLO_ERR': {
        const code = msg.body.code === 'NOT_READY' ? 'NOT_READY' : 'ENGINE_DEAD';
        this.helloWaiter?.reject(new HandshakeRefusedError(code, `engine refused the connection: ${msg.body.message}`));
        this.helloWaiter = null;
        this.transport.close();
        return;
      }
      case 'STEP':
        // Events for a stream the caller already gave up on are dropped (its ABORT is in flight).
        for (const [id, event] of msg.body.events) this.streams.get(id)?.push(event);
        return;
      case 'REPLY': {
        const pending = this.calls.get(msg.body.cid);
        if (!pending) return;
        this.calls.delete(msg.body.cid);
        if (!msg.body.ok) {
          pending.reject(new EngineError(msg.body.error.code, msg.body.error.message, msg.body.error.param));
          return;
        }
        const parsed = callResultSchemas[pending.type].safeParse(msg.body.result);
        if (parsed.success) pending.resolve(parsed.data);
        else pending.reject(new EngineError('INTERNAL', `malformed ${pending.type} reply from engine`));
        return;
      }
      case 'REPLY_IDS': {
        const pending = this.calls.get(msg.body.cid);
        if (!pending) return;
        this.calls.delete(msg.body.cid);
        // The ids are typed by their encoding; the rest is checked as any reply is.
        const parsed = pending.type === 'TOKENIZE' ? packedResultSchemas.TOKENIZE.safeParse(msg.body.result) : null;
        if (parsed?.success) pending.resolve({ ...parsed.data, tokens: msg.body.ids });
        else pending.reject(new EngineError('INTERNAL', `malformed ${pending.type} reply from engine`));
        return;
      }
      default:
        this.deathReason = `engine sent an unexpected ${msg.type} message`;
        this.transport.close();
    }
  }

  private onClosed(err?: Error): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    const reason = err ? `${this.deathReason}: ${err.message}` : this.deathReason;
    this.helloWaiter?.reject(new EngineError('ENGINE_DEAD', reason));
    this.helloWaiter = null;
    for (const queue of this.streams.values()) {
      queue.push({ type: 'error', code: 'ENGINE_DEAD', message: reason, param: null });
    }
    for (const call of this.calls.values()) call.reject(new EngineError('ENGINE_DEAD', reason));
    this.calls.clear();
  }
}

/** The server answered HELLO with HELLO_ERR (version or secret mismatch, or model not loaded yet). */
export class HandshakeRefusedError extends EngineError {}

function dead(err: unknown): EngineError {
  return new EngineError('ENGINE_DEAD', `engine connection failed: ${(err as Error)?.message ?? String(err)}`);
}
