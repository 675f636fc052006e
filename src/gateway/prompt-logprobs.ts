// The prompt's logprobs in the two shapes clients read them (the engine computes them in the prefill,
// src/protocol PromptLogprob):
//  - vLLM's `prompt_logprobs`: per prompt token, null for the first, else {token id: {logprob, rank,
//    decoded_token}} holding the prompt token itself and the top-k (a key appears once);
//  - completions' `echo` with `logprobs` (what lm-evaluation-harness scores): the prompt's tokens in the
//    legacy parallel arrays, before the generated ones, the first with null logprob and top_logprobs.

import type { PromptLogprob } from '../protocol/engine-client.js';
import type { CompletionLogprobs } from './openai-shapes.js';

const text = (tokenId: number, token: string, asIds: boolean) => (asIds ? `token_id:${tokenId}` : token);

export type VllmPromptLogprobs = (Record<string, { logprob: number; rank: number; decoded_token: string }> | null)[];

/** vLLM's prompt_logprobs with k alternatives per token. */
export function vllmPromptLogprobs(lps: readonly PromptLogprob[], k: number, asIds: boolean): VllmPromptLogprobs {
  return lps.map((lp) => {
    if (lp.logprob === null || lp.rank === null) return null;
    const out: Record<string, { logprob: number; rank: number; decoded_token: string }> = {
      [lp.tokenId]: { logprob: lp.logprob, rank: lp.rank, decoded_token: text(lp.tokenId, lp.token, asIds) },
    };
    lp.top.slice(0, k).forEach((t, i) => {
      out[t.tokenId] ??= { logprob: t.logprob, rank: i + 1, decoded_token: text(t.tokenId, t.token, asIds) };
    });
    return out;
  });
}

/**
 * Appends the prompt's tokens to a completion choice's logprobs (echo): top_logprobs holds the top-k
 * and the token itself ("up to logprobs + 1" entries). Offsets count from the start of the choice's
 * text; returns the offset after the prompt.
 */
export function appendEchoLogprobs(into: CompletionLogprobs, lps: readonly PromptLogprob[], k: number, asIds: boolean): number {
  let offset = 0;
  for (const lp of lps) {
    const token = text(lp.tokenId, lp.token, asIds);
    into.tokens.push(token);
    into.text_offset.push(offset);
    offset += lp.token.length;
    if (lp.logprob === null) {
      into.token_logprobs.push(null);
      into.top_logprobs.push(null);
      continue;
    }
    into.token_logprobs.push(lp.logprob);
    const top = Object.fromEntries(lp.top.slice(0, k).map((t) => [text(t.tokenId, t.token, asIds), t.logprob]));
    top[token] ??= lp.logprob;
    into.top_logprobs.push(top);
  }
  return offset;
}
