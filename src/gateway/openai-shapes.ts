// OpenAI response pieces shared by the chat and completions routes: ids, logprobs in both of
// OpenAI's shapes, and the response envelope. Shapes follow the OpenAI API reference exactly; the
// only vLLM-ism is `return_tokens_as_token_ids` (tokens rendered as `token_id:N`).

import type { TokenLogprob } from '../protocol/engine-client.js';

export interface Envelope {
  id: string;
  created: number;
  model: string;
  system_fingerprint: string;
}

/** The common head of every response/chunk, in OpenAI's key order. */
export function head(env: Envelope, object: string) {
  return { id: env.id, object, created: env.created, model: env.model, system_fingerprint: env.system_fingerprint };
}

/** 32 hex chars from the web-standard crypto (available in Node ≥ 19 and Workers). */
export function randomId(): string {
  return crypto.randomUUID().replace(/-/g, '');
}

/** A stable fingerprint of what is served (model + server), in OpenAI's `fp_` + hex form. */
export function fingerprint(model: string): string {
  let h = 0x811c9dc5;
  for (const ch of `ernie-edge/${model}`) h = Math.imul(h ^ ch.codePointAt(0)!, 0x01000193) >>> 0;
  return `fp_${h.toString(16).padStart(8, '0')}`;
}

const tokenText = (tokenId: number, token: string, asIds: boolean) => (asIds ? `token_id:${tokenId}` : token);

/** Chat: `choices[].logprobs.content[]`. */
export function chatLogprobContent(lps: TokenLogprob[], asIds: boolean) {
  return lps.map((lp) => ({
    token: tokenText(lp.tokenId, lp.token, asIds),
    logprob: lp.logprob,
    bytes: lp.bytes,
    top_logprobs: lp.top.map((t) => ({ token: tokenText(t.tokenId, t.token, asIds), logprob: t.logprob, bytes: t.bytes })),
  }));
}

export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: (number | null)[];
  top_logprobs: (Record<string, number> | null)[];
  text_offset: number[];
}

/**
 * Completions: parallel arrays. `text_offset` is each token's character offset in the choice's text
 * (which starts with the prompt when echoing); `offset` is where this batch of tokens starts. Returns
 * the offset after the batch.
 */
export function appendCompletionLogprobs(into: CompletionLogprobs, lps: TokenLogprob[], asIds: boolean, offset: number): number {
  for (const lp of lps) {
    const token = tokenText(lp.tokenId, lp.token, asIds);
    into.tokens.push(token);
    into.token_logprobs.push(lp.logprob);
    // The chosen token is always among its top_logprobs (OpenAI: "up to logprobs + 1" entries), so
    // logprobs: 0 gives it alone rather than {}.
    const top: Record<string, number> = Object.fromEntries(lp.top.map((t) => [tokenText(t.tokenId, t.token, asIds), t.logprob]));
    top[token] ??= lp.logprob;
    into.top_logprobs.push(top);
    into.text_offset.push(offset);
    offset += lp.token.length;
  }
  return offset;
}

export const emptyCompletionLogprobs = (): CompletionLogprobs => ({ tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] });
