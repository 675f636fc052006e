// What route handlers get from createApp: limits and helpers that need app config, built once per app.
// The engine is the request's (`c.var.engine`, set by app.ts's route wrapper): the app's own client, or
// the one a request brought in fetch's env (Workers: a connection belongs to the request that opened it).

import type { Context } from 'hono';
import type { EngineClient, ModelInfo } from '../protocol/engine-client.js';
import type { BodyParser } from './body.js';
import { ApiError } from './errors.js';
import type { MetricsSink } from './metrics.js';
import type { RequestRecord } from './request-record.js';
import type { ToolConfig } from './tools/plan.js';

/**
 * What a request may bring (Hono's env, fetch's second argument): its own engine, and `internal` for the
 * gateway's own warm-up requests (src/cli/http-warm-up.ts), which no metric, log line or trace counts.
 * Only code in this process can set either: the network reaches the app through the runtime's env.
 */
export type RequestBindings = { engine?: EngineClient; internal?: boolean };
export type AppEnv = { Variables: { rec: RequestRecord; engine: EngineClient } };
export type AppContext = Context<AppEnv>;

export interface RouteDeps {
  /** Tool calling: the call parser and whether tool_choice auto is served. */
  tools: ToolConfig;
  maxBodyBytes: number;
  /** Where bodies past OFF_THREAD_BODY_BYTES are parsed (../body.ts); undefined: on this thread. */
  parseLargeBody: BodyParser | undefined;
  /** Wall clock, ms (for `created`). */
  now: () => number;
  /** The name clients use for the model; defaults to the engine's model id. */
  servedModelName: string | undefined;
  metrics: MetricsSink;
  /** How long a stream may wait on a client that reads nothing before it is aborted (0: never). */
  streamStallTimeoutMs: number;
  /** Logs why a stream was aborted for a stalled client (the reason of sseResponse's stall guard). */
  onStreamStall: (reqId: string, stalledMs: number) => void;
}

export interface ResolvedModel {
  info: ModelInfo;
  name: string;
}

/** Asks the engine for its model; a request naming another model is a 404 (OpenAI's model_not_found). */
export async function resolveModel(engine: EngineClient, deps: RouteDeps, requested: string | null | undefined): Promise<ResolvedModel> {
  const info = await engine.model();
  const name = deps.servedModelName ?? info.id;
  deps.metrics.setModelName(name);
  // NOTE: `model` may be omitted (vLLM does the same); OpenAI's SDK always sends it.
  if (requested != null && requested !== name) {
    throw new ApiError(404, `The model \`${requested.slice(0, 200)}\` does not exist.`, 'model_not_found', 'model');
  }
  return { info, name };
}
