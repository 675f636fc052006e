// From a validated OpenAI request to the engine's SamplingParams: applies the model's generation
// defaults and the checks that need the model (vocab size, max_model_len).
//
// vLLM extras, decided: `ignore_eos`, `skip_special_tokens`, `stop_token_ids`, `top_k`, `min_p`,
// `repetition_penalty`, `return_tokens_as_token_ids` and `min_tokens` (stop ids banned and stop strings
// unmatched until that many tokens, as vLLM) are supported.

import type { ModelInfo, SamplingParams } from '../protocol/engine-client.js';
import { badRequest } from './errors.js';
import type { ChatRequest, CompletionRequest } from './schemas.js';

type Common = ChatRequest | CompletionRequest;
/** The sampling fields buildSampling reads (the Responses API has them too, without `n` or `stream_options`). */
export type SamplingFields = Pick<
  Common,
  | 'temperature' | 'top_p' | 'top_k' | 'min_p' | 'repetition_penalty' | 'frequency_penalty' | 'presence_penalty'
  | 'logit_bias' | 'seed' | 'stop' | 'stop_token_ids' | 'ignore_eos' | 'skip_special_tokens' | 'min_tokens'
>;

/**
 * A temperature below this means greedy, as 0 does: vLLM's _SAMPLING_EPS. The engine divides logits by
 * the temperature in fp32, where 1e-39…1e-44 are subnormal: the quotient overflowed and sampled noise.
 * The native engine applies the same floor at submit (native/src/engine/engine.cc), for clients of the
 * engine protocol that do not come through this gateway.
 */
export const GREEDY_TEMPERATURE = 1e-5;

export interface StreamPlan {
  stream: boolean;
  includeUsage: boolean;
  continuousUsage: boolean;
}

export function streamPlan(body: Common): StreamPlan {
  const stream = body.stream === true;
  if (body.stream_options && !stream) {
    throw badRequest("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options');
  }
  if (stream && body.prompt_logprobs != null) {
    throw badRequest('prompt_logprobs is not available when stream is true', 'prompt_logprobs');
  }
  const includeUsage = body.stream_options?.include_usage === true;
  // vLLM: usage on every chunk only together with include_usage (alone it sends none at all).
  return { stream, includeUsage, continuousUsage: includeUsage && body.stream_options?.continuous_usage_stats === true };
}

export function buildSampling(
  body: SamplingFields,
  model: ModelInfo,
  opts: { maxTokens: number | null; logprobs: number | null; promptLogprobs?: number | null },
): SamplingParams {
  const d = model.generationDefaults;
  if (opts.maxTokens !== null && opts.maxTokens > model.maxModelLen) {
    throw badRequest(
      `max_tokens (${opts.maxTokens}) exceeds the model's maximum context length of ${model.maxModelLen} tokens`,
      'max_tokens',
    );
  }
  const minTokens = body.min_tokens ?? 0;
  if (opts.maxTokens !== null && minTokens > opts.maxTokens) {
    throw badRequest(`min_tokens must be less than or equal to max_tokens=${opts.maxTokens}, got ${minTokens}.`, 'min_tokens');
  }
  const stop = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  return {
    maxTokens: opts.maxTokens,
    temperature: greedyBelowFloor(body.temperature ?? d.temperature ?? 1),
    topP: body.top_p ?? d.topP ?? 1,
    topK: body.top_k ?? d.topK ?? -1,
    minP: body.min_p ?? 0,
    repetitionPenalty: body.repetition_penalty ?? d.repetitionPenalty ?? 1,
    frequencyPenalty: body.frequency_penalty ?? 0,
    presencePenalty: body.presence_penalty ?? 0,
    logitBias: logitBias(body.logit_bias ?? {}, model.vocabSize),
    seed: body.seed ?? null,
    stop: stop.filter((s) => s.length > 0),
    stopTokenIds: (body.stop_token_ids ?? []).map((id) => checkTokenId(id, model.vocabSize, 'stop_token_ids')),
    ignoreEos: body.ignore_eos ?? false,
    minTokens,
    logprobs: opts.logprobs,
    skipSpecialTokens: body.skip_special_tokens ?? true,
    ...(opts.promptLogprobs != null ? { promptLogprobs: opts.promptLogprobs } : {}),
  };
}

function greedyBelowFloor(temperature: number): number {
  return temperature < GREEDY_TEMPERATURE ? 0 : temperature;
}

/** Keys are token-id strings ("123"), values −100..100 (OpenAI's range; out of range is a 400, not clamped). */
function logitBias(bias: Record<string, number>, vocabSize: number): Record<number, number> {
  const out: Record<number, number> = {};
  const entries = Object.entries(bias);
  if (entries.length > 1024) throw badRequest('logit_bias may have at most 1024 entries', 'logit_bias');
  for (const [key, value] of entries) {
    if (!/^\d{1,10}$/.test(key)) throw badRequest(`logit_bias key '${key.slice(0, 32)}' is not a token id`, 'logit_bias');
    if (Number(key) >= vocabSize) throw badRequest(`logit_bias key '${key}' is out of vocabulary (token ids are 0..${vocabSize - 1})`, 'logit_bias');
    const id = Number(key);
    if (!(value >= -100 && value <= 100)) throw badRequest('logit_bias values must be between -100 and 100', 'logit_bias');
    out[id] = value;
  }
  return out;
}

function checkTokenId(id: number, vocabSize: number, param: string): number {
  if (id >= vocabSize) throw badRequest(`token id ${id} is out of vocabulary (size ${vocabSize})`, param);
  return id;
}
