// What route handlers get from createApp: the engine, limits, and helpers that need app config.

import type { Context } from 'hono';
import type { EngineClient, ModelInfo } from '../protocol/engine-client.js';
import { ApiError } from './errors.js';
import type { GatewayMetrics } from './metrics.js';
import type { RequestRecord } from './request-record.js';

/** What a request may bring (Hono's env, fetch's second argument): its own engine. */
export type RequestBindings = { engine?: EngineClient };
export type AppEnv = { Variables: { rec: RequestRecord } };
export type AppContext = Context<AppEnv>;

export interface RouteDeps {
  engine: EngineClient;
  maxBodyBytes: number;
  /** Wall clock, ms (for `created`). */
  now: () => number;
  /** The name clients use for the model; defaults to the engine's model id. */
  servedModelName: string | undefined;
  metrics: GatewayMetrics;
}

export interface ResolvedModel {
  info: ModelInfo;
  name: string;
}

/** Asks the engine for its model; a request naming another model is a 404 (OpenAI's model_not_found). */
export async function resolveModel(deps: RouteDeps, requested: string | null | undefined): Promise<ResolvedModel> {
  const info = await deps.engine.model();
  const name = deps.servedModelName ?? info.id;
  deps.metrics.setModelName(name);
  // NOTE: `model` may be omitted (vLLM does the same); OpenAI's SDK always sends it.
  if (requested != null && requested !== name) {
    throw new ApiError(404, `The model \`${requested.slice(0, 200)}\` does not exist.`, 'model_not_found', 'model');
  }
  return { info, name };
}
