// Per-choice generation of the fake engine: cycles a fixed corpus token by token (one lap, then EOS) from a start offset
// chosen by (seed | prompt hash, choice index), and applies the engine's output contract — stop strings
// withheld (a partial stop-string match is held back until resolved), stop token ids, eos, max_tokens,
// and logprobs with plausible values (probabilities of the top list sum to < 1, sorted descending).

import type { ChoiceDelta, SamplingParams, TokenLogprob } from '../../src/protocol/engine-client.js';
import { EOS_ID, type FakeTokenizer } from './fake-tokenizer.js';

export const DEFAULT_CORPUS =
  'The quick brown fox jumps over the lazy dog. 春眠不觉晓，处处闻啼鸟。' +
  'Hello, world! 你好，世界。ERNIE is a family of large language models. 文心一言，知识增强。';

const utf8 = new TextEncoder();

/** FNV-1a over numbers: a stable hash for prompts and logprob noise. */
export function hashIds(ids: readonly number[], seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (const id of ids) {
    h ^= id & 0xffff;
    h = Math.imul(h, 0x01000193) >>> 0;
    h ^= id >>> 16;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export class FakeChoice {
  readonly tokenIds: number[] = [];
  private text = ''; // everything generated (stop strings included)
  private emitted = 0; // chars of `text` already sent
  finishReason: 'stop' | 'length' | 'abort' | 'error' | null = null;
  stopReason: string | number | null = null;
  private readonly start: number;

  constructor(
    readonly index: number,
    private readonly corpus: readonly number[],
    private readonly tok: FakeTokenizer,
    private readonly sampling: SamplingParams,
    private readonly maxTokens: number,
    promptHash: number,
    fixedStart: number | null = null,
  ) {
    const greedy = sampling.temperature === 0;
    const base = sampling.seed !== null ? hashIds([sampling.seed]) : promptHash;
    this.start = fixedStart ?? (base + (greedy ? 0 : index * 7919)) % corpus.length;
  }

  get done(): boolean {
    return this.finishReason !== null;
  }

  /** Generates up to `count` tokens; returns this step's delta (possibly with empty text). */
  step(count: number): ChoiceDelta {
    const ids: number[] = [];
    const logprobs: TokenLogprob[] = [];
    for (let i = 0; i < count && !this.done; i++) {
      const pos = this.start + this.tokenIds.length;
      // EOS after one full lap of the corpus (so outputs without max_tokens end), unless ignore_eos.
      const lapDone = this.tokenIds.length === this.corpus.length;
      const id = lapDone && !this.sampling.ignoreEos ? EOS_ID : this.corpus[pos % this.corpus.length]!;
      this.tokenIds.push(id);
      ids.push(id);
      if (this.sampling.logprobs !== null) logprobs.push(this.logprob(id, pos));
      if (id === EOS_ID || this.sampling.stopTokenIds.includes(id)) {
        this.finish('stop', id === EOS_ID ? null : id);
        break;
      }
      this.text += this.tok.piece(id);
      if (this.matchStop()) break;
      if (this.tokenIds.length >= this.maxTokens) this.finish('length', null);
    }
    return this.delta(ids, logprobs);
  }

  /** Ends the choice early (abort or injected error); a held-back partial stop match is then released. */
  finish(reason: NonNullable<FakeChoice['finishReason']>, stopReason: string | number | null): void {
    if (this.done) return;
    this.finishReason = reason;
    this.stopReason = stopReason;
  }

  private matchStop(): boolean {
    let best = -1;
    let which = '';
    for (const s of this.sampling.stop) {
      if (!s) continue;
      const at = this.text.indexOf(s, Math.max(0, this.emitted - s.length));
      if (at >= 0 && (best < 0 || at < best)) [best, which] = [at, s];
    }
    if (best < 0) return false;
    this.text = this.text.slice(0, best);
    this.finish('stop', which);
    return true;
  }

  /** Text safe to send now: all of it when finished, else minus a tail that may start a stop string. */
  private releasable(): number {
    if (this.done) return this.text.length;
    let hold = 0;
    for (const s of this.sampling.stop) {
      for (let k = Math.min(s.length - 1, this.text.length); k > hold; k--) {
        if (this.text.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    return Math.max(this.emitted, this.text.length - hold);
  }

  private delta(ids: number[], logprobs: TokenLogprob[]): ChoiceDelta {
    const upTo = this.releasable();
    const d: ChoiceDelta = { index: this.index, text: this.text.slice(this.emitted, upTo), tokenIds: ids };
    this.emitted = upTo;
    if (this.sampling.logprobs !== null) d.logprobs = logprobs;
    if (this.done) {
      d.finishReason = this.finishReason!;
      d.stopReason = this.stopReason;
    }
    return d;
  }

  private logprob(id: number, pos: number): TokenLogprob {
    const h = hashIds([id, pos, this.index]);
    const p0 = 0.3 + (h % 600) / 1000; // 0.3 .. 0.9
    const entry = (tokenId: number, p: number) => {
      const token = this.tok.piece(tokenId);
      return { tokenId, token, bytes: [...utf8.encode(token)], logprob: Math.log(p) };
    };
    const top = [entry(id, p0)];
    for (let k = 1; top.length < (this.sampling.logprobs ?? 0); k++) {
      const alt = this.corpus[(pos + k * 31) % this.corpus.length]!;
      if (top.some((t) => t.tokenId === alt)) {
        if (k > this.corpus.length) break;
        continue;
      }
      top.push(entry(alt, (1 - p0) * 0.5 ** top.length));
    }
    return { ...entry(id, p0), top: top.slice(0, this.sampling.logprobs ?? 0) };
  }
}
