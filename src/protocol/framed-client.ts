// FramedEngineClient: EngineClient over any ByteTransport speaking the framed protocol (./messages.ts).
//
// Lifecycle: connects lazily on the first call and handshakes (version + optional shared secret). When
// the connection drops, open streams end with EngineError('ENGINE_DEAD') and pending calls reject; the
// next call reconnects, retrying with exponential backoff, so the gateway survives a sidecar restart.
// Handshake refusals (wrong version or secret) are not retried: retrying cannot fix them.

import {
  EngineError,
  type EngineClient,
  type EngineEvent,
  type EngineStats,
  type Health,
  type ModelInfo,
  type ResponseStore,
  type StreamOptions,
  type SubmitRequest,
  type TokenizeRequest,
  type TokenizeResult,
} from './engine-client.js';
import { ClientConnection, HandshakeRefusedError, type CallType } from './client-connection.js';
import { EventQueue } from './event-queue.js';
import { CREDIT_REPORT_UNITS, eventUnits, nextCoalesced } from './flow.js';
import type { WireEvent } from './messages.js';
import type { FrameCodec } from './frame-codec.js';
import { DEFAULT_MAX_FRAME_BYTES } from './framing.js';
import type { Tracer } from './trace.js';
import type { Connector } from './transport.js';

export interface RetryPolicy {
  /** Connection attempts per call before giving up with ENGINE_DEAD (≥ 1). */
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

export interface FramedEngineClientOptions {
  connect: Connector;
  /** Shared secret sent in HELLO (required by TCP servers). */
  secret?: string;
  maxFrameBytes?: number;
  handshakeTimeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Injectable for tests; default setTimeout. */
  sleep?: (ms: number) => Promise<void>;
  /** Stage marks of streams (gw.submit, gw.accepted, gw.delta); default none. */
  tracer?: Tracer;
  /** Encodes large inputs off this thread (./frame-codec.ts); default: on it. */
  codec?: FrameCodec;
}

/**
 * Reconnection when the caller gives none: up to 5 attempts, 50, 100, 200, 400 ms apart (under a second
 * of waiting; maxDelayMs caps longer policies). NOTE: short on purpose: it rides out a dropped connection
 * to a sidecar that is still there; when the sidecar is down or still loading, the call then fails
 * (ENGINE_DEAD or NOT_READY: HTTP 503) and /ready keeps the load balancer away until it is back, where a
 * longer wait would only pile requests up. Clients with other needs pass their own (adapters/workers.ts).
 */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, initialDelayMs: 50, maxDelayMs: 2000 };

/**
 * How long a connected peer may take to answer HELLO. A sidecar answers at once, even while its model
 * loads (it listens first and answers NOT_READY); this bounds a peer that accepted the connection and
 * never answers (another service on the port, a stopped process), so no call waits forever.
 */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class FramedEngineClient implements EngineClient {
  private conn: ClientConnection | null = null;
  private connecting: Promise<ClientConnection> | null = null;
  private closedForGood = false;
  private readonly retry: RetryPolicy;
  private readonly sleep: (ms: number) => Promise<void>;

  /** Number of handshakes completed so far (observability and tests). */
  connections = 0;

  constructor(private readonly opts: FramedEngineClientOptions) {
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    this.sleep = opts.sleep ?? defaultSleep;
  }

  async *stream(req: SubmitRequest, signal?: AbortSignal, opts: StreamOptions = {}): AsyncIterable<EngineEvent> {
    signal?.throwIfAborted();
    const conn = await this.connection(true);
    if (conn.streams.has(req.id)) throw new EngineError('INVALID_REQUEST', `duplicate request id ${req.id}`, 'id');
    const queue = new EventQueue<WireEvent>();
    conn.streams.set(req.id, queue);
    let finished = false;
    let abortSent = false;
    const sendAbort = () => {
      if (abortSent || finished) return;
      abortSent = true;
      // Best effort: if the connection is gone the server already aborted everything of ours.
      conn.call('ABORT', { id: req.id }).catch(() => undefined);
    };
    signal?.addEventListener('abort', sendAbort, { once: true });
    const tracer = this.opts.tracer;
    // Flow control (./flow.ts): units taken by our consumer, and how many of them the sidecar knows of.
    let consumed = 0;
    let reported = 0;
    try {
      const sent = conn.send('SUBMIT', { req }); // written synchronously, before any await (a large input: in order, ./client-connection.ts)
      tracer?.mark(req.id, 'gw.submit');
      await sent;
      for (;;) {
        const ev = await nextCoalesced(queue, opts.coalesce === true);
        if (ev.type === 'delta') {
          consumed += eventUnits(ev);
          if (consumed - reported >= CREDIT_REPORT_UNITS) {
            reported = consumed;
            conn.credit(req.id, consumed);
          }
        }
        if (tracer && (ev.type === 'accepted' || ev.type === 'delta')) tracer.mark(req.id, ev.type === 'accepted' ? 'gw.accepted' : 'gw.delta');
        if (ev.type === 'error') {
          finished = true;
          throw new EngineError(ev.code, ev.message, ev.param);
        }
        if (ev.type === 'done') finished = true;
        yield ev;
        if (finished) return;
      }
    } finally {
      signal?.removeEventListener('abort', sendAbort);
      conn.streams.delete(req.id);
      // Consumer stopped early (break/return/throw): the engine must hear about it.
      sendAbort();
    }
  }

  async abort(id: string): Promise<void> {
    const conn = this.conn;
    // Not connected: nothing of ours can be running (the server aborts a dead connection's requests).
    if (!conn || conn.closed) return;
    await conn.call('ABORT', { id });
  }

  async health(): Promise<Health> {
    // A single attempt: readiness probes must answer fast, not sit through the backoff schedule.
    return (await this.call('HEALTH', {}, false)) as Health;
  }

  async stats(): Promise<EngineStats> {
    return (await this.call('STATS', {}, false)) as EngineStats;
  }

  /** From the handshake (refreshed on every reconnect): the gateway asks per request, so it must be cheap. */
  async model(): Promise<ModelInfo> {
    const conn = await this.connection(true);
    return conn.model!;
  }

  /** Asks for the ids packed (REPLY_IDS): they arrive as an Int32Array, from an older sidecar as an array. */
  async tokenize(req: TokenizeRequest): Promise<TokenizeResult> {
    return (await this.call('TOKENIZE', { req, packed: true }, true)) as TokenizeResult;
  }

  async detokenize(tokens: number[]): Promise<{ prompt: string }> {
    return (await this.call('DETOKENIZE', { tokens }, true)) as { prompt: string };
  }

  /** The sidecar's store, over the connection (a sidecar without one answers INVALID_REQUEST). */
  readonly responses: ResponseStore = {
    put: async (id, value) => void (await this.call('RESPONSE_PUT', { id, value }, true)),
    get: async (id) => (await this.call('RESPONSE_GET', { id }, true)) as string | null,
    delete: async (id) => (await this.call('RESPONSE_DELETE', { id }, true)) as boolean,
  };

  async close(reason?: string): Promise<void> {
    this.closedForGood = true;
    this.conn?.close(reason);
    this.conn = null;
  }

  private async call(type: CallType, body: object, retry: boolean): Promise<unknown> {
    const conn = await this.connection(retry);
    return conn.call(type, body as never);
  }

  private connection(retry: boolean): Promise<ClientConnection> {
    if (this.closedForGood) return Promise.reject(new EngineError('ENGINE_DEAD', 'engine client closed'));
    if (this.conn && !this.conn.closed) return Promise.resolve(this.conn);
    // Concurrent callers share one connection attempt.
    this.connecting ??= this.connectWithRetry(retry ? this.retry.attempts : 1).finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connectWithRetry(attempts: number): Promise<ClientConnection> {
    let delay = this.retry.initialDelayMs;
    let lastError: EngineError = new EngineError('ENGINE_DEAD', 'engine unreachable');
    for (let attempt = 0; attempt < Math.max(1, attempts); attempt++) {
      if (attempt > 0) {
        await this.sleep(delay);
        delay = Math.min(delay * 2, this.retry.maxDelayMs);
      }
      try {
        const conn = await this.connectOnce();
        if (this.closedForGood) {
          conn.close();
          break;
        }
        this.conn = conn;
        this.connections++;
        return conn;
      } catch (err) {
        lastError = err instanceof EngineError ? err : new EngineError('ENGINE_DEAD', `engine unreachable: ${String(err)}`);
        // A refusal (version/secret) will not change on retry; NOT_READY (model loading) might.
        if (err instanceof HandshakeRefusedError && err.code !== 'NOT_READY') throw err;
      }
    }
    throw lastError.code === 'NOT_READY' ? lastError : new EngineError('ENGINE_DEAD', lastError.message);
  }

  private async connectOnce(): Promise<ClientConnection> {
    const transport = await this.opts.connect();
    const conn = new ClientConnection(transport, this.opts.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES, this.opts.codec);
    await conn.handshake(this.opts.secret, this.opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS);
    return conn;
  }
}
