// SamplingParams (OpenAI level, already defaulted by the gateway) → the native EngineRequest.
// Stop token ids: the model's eos ids unless ignore_eos, plus the request's stop_token_ids.

import { EngineError, type SamplingParams } from '../../protocol/engine-client.js';
import type { EngineRequest } from '../engine/native-engine.js';

export function toEngineRequest(
  id: number,
  prompt: readonly number[],
  n: number,
  maxTokens: number,
  s: SamplingParams,
  eosIds: readonly number[],
  vocabSize: number,
): EngineRequest {
  if (!Number.isInteger(n) || n < 1) throw new EngineError('INVALID_REQUEST', `n must be a positive integer, got ${n}`, 'n');
  const stop = new Set<number>(s.ignoreEos ? [] : eosIds);
  for (const t of s.stopTokenIds) stop.add(checkId(t, vocabSize, 'stop_token_ids'));
  const bias = Object.entries(s.logitBias).map(([k, v]) => [checkId(Number(k), vocabSize, 'logit_bias'), v] as const);
  if (s.seed !== null && !Number.isSafeInteger(s.seed)) throw new EngineError('INVALID_REQUEST', 'seed must be an integer', 'seed');
  return {
    id,
    prompt: Int32Array.from(prompt),
    maxTokens,
    n,
    temperature: s.temperature,
    topP: s.topP,
    topK: s.topK < 0 ? 0 : s.topK, // OpenAI/vLLM's -1 = off; the engine's 0 = off
    minP: s.minP,
    repetitionPenalty: s.repetitionPenalty,
    frequencyPenalty: s.frequencyPenalty,
    presencePenalty: s.presencePenalty,
    // NOTE: u32 seeds in the engine; larger (or negative) seeds are folded, so equal seeds stay equal.
    seed: s.seed === null ? null : Number(BigInt.asUintN(32, BigInt(s.seed))),
    logitBiasIds: Int32Array.from(bias, ([k]) => k),
    logitBiasValues: Float32Array.from(bias, ([, v]) => v),
    stopTokenIds: Int32Array.from(stop),
    minTokens: s.minTokens ?? 0,
    logprobs: s.logprobs ?? -1,
    ...(s.promptLogprobs != null ? { promptLogprobs: s.promptLogprobs } : {}),
  };
}

function checkId(id: number, vocabSize: number, param: string): number {
  if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
    throw new EngineError('INVALID_REQUEST', `token id ${id} is out of vocabulary (size ${vocabSize})`, param);
  }
  return id;
}
