// Per-request bookkeeping for the log line and the metrics: created by the outermost middleware,
// filled by handlers (tokens, TTFT, finish reasons), ended exactly once — when the response is
// returned, or for streams when the SSE body finishes or is cancelled.
// With a Tracer (bench only) it also carries the gateway's stage marks: those taken before the engine
// request id exists are held and handed over by traceAs(id).

import type { EngineTiming } from '../protocol/engine-client.js';
import type { TraceStage, Tracer } from '../protocol/trace.js';

/**
 * nginx's status for a request the client closed before its answer was complete (a Stop click, a client
 * timeout): neither a success nor a server failure, so it never feeds 5xx rates or error logs.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/** One engine request (one prompt) as it finished: what vLLM's per-request histograms observe. */
export interface EngineRunRecord {
  promptTokens: number;
  generationTokens: number;
  /** The most tokens any one of its choices generated. */
  maxChoiceTokens: number;
  cachedTokens: number;
  n: number;
  maxTokens: number | null;
  /** Engine-clock phases; absent when the engine reported none. */
  timing?: EngineTiming;
}

export interface FinishedRequest {
  id: string;
  method: string;
  route: string;
  status: number;
  promptTokens: number;
  outputTokens: number;
  /** Seconds from request start to the first generated token (null: none generated). */
  ttft: number | null;
  /** Seconds between consecutive token-bearing engine steps. */
  interTokenLatencies: number[];
  e2e: number;
  finishReasons: string[];
  /** True for generation routes: they feed the vllm:* request histograms. */
  generation: boolean;
  /** Choices the request asked for (0 until the engine accepted it): those without a finish reason
   * at the end were aborted (or failed). */
  choices?: number;
  engineRuns?: EngineRunRecord[];
}

export class RequestRecord {
  route = 'unmatched';
  status = 0;
  promptTokens = 0;
  outputTokens = 0;
  ttft: number | null = null;
  generation = false;
  /** Set by handlers that return a stream: the middleware then leaves end() to the stream. */
  streaming = false;
  readonly finishReasons: string[] = [];
  choices = 0;
  readonly engineRuns: EngineRunRecord[] = [];
  private readonly itl: number[] = [];
  private lastTokenAt: number | null = null;
  private ended = false;
  private readonly startedAt: number;
  private traceId: string | null = null;
  private readonly pendingMarks: [TraceStage, number][] = [];

  constructor(
    readonly id: string,
    readonly method: string,
    private readonly now: () => number,
    private readonly onEnd: (r: FinishedRequest) => void,
    private readonly tracer?: Tracer,
    /** The HTTP request's signal: aborted when the client went away (the runtime's doing). */
    private readonly clientSignal?: AbortSignal,
  ) {
    this.startedAt = now();
    this.mark('gw.recv');
  }

  /** Marks a stage of this request (no-op without a tracer). */
  mark(stage: TraceStage): void {
    if (!this.tracer) return;
    if (this.traceId !== null) this.tracer.mark(this.traceId, stage);
    else this.pendingMarks.push([stage, this.tracer.now()]);
  }

  /** Names the request for tracing (the engine request id) and hands over the marks taken so far. */
  traceAs(id: string): void {
    if (!this.tracer || this.traceId !== null) return;
    this.traceId = id;
    for (const [stage, at] of this.pendingMarks) this.tracer.mark(id, stage, at);
    this.pendingMarks.length = 0;
  }

  /** A chunk of this request's stream went to the HTTP response (marks the first one after a token). */
  sent(): void {
    if (this.ttft !== null) this.mark('gw.sse');
  }

  /** Call for every engine step that produced `count` tokens (any choice). */
  tokens(count: number): void {
    if (count <= 0) return;
    const t = this.now();
    if (this.ttft === null) this.ttft = (t - this.startedAt) / 1000;
    else if (this.lastTokenAt !== null) this.itl.push((t - this.lastTokenAt) / 1000);
    this.lastTokenAt = t;
    this.outputTokens += count;
  }

  /** Records the outcome; a client that went away before it makes it CLIENT_CLOSED_REQUEST, whatever the handler saw. */
  end(status = this.status): void {
    if (this.ended) return;
    this.ended = true;
    if (this.clientSignal?.aborted) status = CLIENT_CLOSED_REQUEST;
    this.status = status;
    this.onEnd({
      id: this.id,
      method: this.method,
      route: this.route,
      status,
      promptTokens: this.promptTokens,
      outputTokens: this.outputTokens,
      ttft: this.ttft,
      interTokenLatencies: this.itl,
      e2e: (this.now() - this.startedAt) / 1000,
      finishReasons: this.finishReasons,
      generation: this.generation,
      choices: this.choices,
      engineRuns: this.engineRuns,
    });
  }
}
