// Native logprob arrays (StepOutput.logprobs / topIds / topLogprobs, k alternatives per token) →
// the protocol's TokenLogprob, with token text and bytes from the tokenizer.

import type { TokenLogprob } from '../../protocol/engine-client.js';
import type { StepOutput } from '../engine/native-engine.js';
import type { Tokenizer } from '../tokenizer/index.js';

/** NOTE: -inf (a token the sampler masked out) is not JSON; vLLM reports -9999.0 for it, and so do we. */
const FLOOR = -9999;
const finite = (x: number): number => (Number.isFinite(x) ? x : FLOOR);

export function tokenLogprob(o: StepOutput, t: number, k: number, tok: Tokenizer): TokenLogprob {
  const entry = (tokenId: number, logprob: number) => ({
    tokenId,
    token: tok.tokenText(tokenId),
    bytes: Array.from(tok.tokenBytes(tokenId)),
    logprob: finite(logprob),
  });
  const top: TokenLogprob['top'] = [];
  if (k > 0 && o.topIds && o.topLogprobs) {
    for (let j = 0; j < k; j++) top.push(entry(o.topIds[t * k + j]!, o.topLogprobs[t * k + j]!));
  }
  return { ...entry(o.tokens[t]!, o.logprobs?.[t] ?? FLOOR), top };
}
