// Prompt logprobs as the engine computes them (StepOutput.prompt: a run of prompt tokens per prefill
// step, choice 0 only) → the protocol's per-prompt-token list, handed out once, whole: every token
// with its text and bytes; from the second on, its logprob, rank and top-k.

import type { PromptLogprob, TokenLogprob } from '../../protocol/engine-client.js';
import type { StepPromptLogprobs } from '../engine/native-engine.js';
import type { Tokenizer } from '../tokenizer/index.js';

/** NOTE: -inf is not JSON; vLLM reports -9999.0 for it, and so do we (as ./logprobs.ts). */
const finite = (x: number): number => (Number.isFinite(x) ? x : -9999);

export class PromptLogprobCollector {
  private readonly entries: PromptLogprob[];
  private filled = 1; // prompt index 0 never has a logprob
  private handedOut = false;

  constructor(
    prompt: readonly number[],
    private readonly k: number,
    private readonly tok: Tokenizer,
  ) {
    this.entries = prompt.map((id) => ({ ...this.entry(id, 0), logprob: null, rank: null, top: [] }));
  }

  /** One step's run of prompt tokens (the engine computes each position once, in order). */
  add(p: StepPromptLogprobs): void {
    const k = this.k;
    for (let i = 0; i < p.logprobs.length; i++) {
      const e = this.entries[p.start + i];
      if (p.start + i < 1 || !e) continue;
      const top: TokenLogprob['top'] = [];
      for (let t = 0; t < k; t++) top.push(this.entry(p.topIds[i * k + t]!, p.topLogprobs[i * k + t]!));
      e.logprob = finite(p.logprobs[i]!);
      e.rank = p.ranks[i]!;
      e.top = top;
      this.filled = Math.max(this.filled, p.start + i + 1);
    }
  }

  /** The whole list once every prompt token is covered, the first time it is asked for; else null. */
  take(): PromptLogprob[] | null {
    if (this.handedOut || this.filled < this.entries.length) return null;
    this.handedOut = true;
    return this.entries;
  }

  private entry(tokenId: number, logprob: number) {
    return { tokenId, token: this.tok.tokenText(tokenId), bytes: Array.from(this.tok.tokenBytes(tokenId)), logprob: finite(logprob) };
  }
}
