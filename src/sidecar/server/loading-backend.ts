// What the sidecar's sockets serve while the model loads: every call answers NOT_READY (the gateway's
// /ready says 503, its requests get 503 + Retry-After) and health() says `loading`. Once the EngineHost
// exists, `ready(host)` switches every call over to it; `failed(err)` reports a failed load. The response
// store (./response-store.ts) is the backend's own, not the host's: one per sidecar, for all its gateways.
// Serving before the load finishes is what lets /health be 200 and /ready 503 during start-up.

import {
  EngineError,
  type EngineEvent,
  type EngineStats,
  type Health,
  type ModelInfo,
  type ResponseStore,
  type StreamOptions,
  type SubmitRequest,
  type TokenizeRequest,
  type TokenizeResult,
} from '../../protocol/engine-client.js';
import type { Emit, PushedStream } from '../../protocol/push-stream.js';
import type { EngineBackend } from '../../protocol/serve-engine.js';
import type { EngineHost } from './engine-host.js';
import { MemoryResponseStore } from './response-store.js';

export class LoadingBackend implements EngineBackend {
  private host: EngineHost | null = null;
  private failure: string | null = null;

  constructor(
    private status = 'loading the model',
    /** One per sidecar process, shared by every connection (every gateway). */
    readonly responses: ResponseStore = new MemoryResponseStore(),
  ) {}

  /** Progress text for health() while loading ("generating default weights 40%"). */
  setStatus(status: string): void {
    this.status = status;
  }

  ready(host: EngineHost): void {
    this.host = host;
  }

  failed(err: unknown): void {
    this.failure = err instanceof Error ? err.message : String(err);
  }

  private get(): EngineHost {
    if (this.host) return this.host;
    throw new EngineError('NOT_READY', this.failure ? `the model failed to load: ${this.failure}` : `not ready: ${this.status}`);
  }

  stream(req: SubmitRequest, signal?: AbortSignal, opts?: StreamOptions): AsyncIterable<EngineEvent> {
    return this.get().stream(req, signal, opts);
  }
  open(req: SubmitRequest, emit: Emit): PushedStream {
    return this.get().open(req, emit);
  }
  async abort(id: string): Promise<void> {
    await this.host?.abort(id);
  }
  async health(): Promise<Health> {
    if (this.host) return this.host.health();
    return { ready: false, loading: this.failure === null, draining: false, message: this.failure ?? this.status };
  }
  async stats(): Promise<EngineStats> {
    return this.get().stats();
  }
  async model(): Promise<ModelInfo> {
    return this.get().model();
  }
  async tokenize(req: TokenizeRequest): Promise<TokenizeResult> {
    return this.get().tokenize(req);
  }
  async detokenize(tokens: number[]): Promise<{ prompt: string }> {
    return this.get().detokenize(tokens);
  }
}
