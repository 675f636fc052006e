// Streaming detokenization: ids in, client-safe text out.
// Contract (ARCHITECTURE.md: "text never reaches the client half-decoded"):
//  - text is released only as complete UTF-8: the bytes of a character split over byte-fallback pieces
//    are held until the character completes; a byte that can no longer start a well-formed character
//    becomes U+FFFD right away (sentencepiece's per-byte rule, utf8.ts); an unfinished character at a
//    non-byte piece or at flush() becomes one U+FFFD per held byte;
//  - stop strings are matched on the text across token borders; no part of a stop string is ever
//    released: the longest suffix that is a prefix of some stop string is held back; on a match the text
//    before it is released and the detokenizer is finished (later pushes return nothing);
//  - concatenated output == tokenizer.decode(all ids) for well-formed output (ids the tokenizer does not
//    know and skipped special ids contribute nothing and do not break a byte run, as in the references).
// Known difference: for tokenizer.json (HF) a byte run that is invalid as a whole decodes to U+FFFD for
// EVERY byte in decode(); streaming has already released the run's complete characters by then, so the
// stream shows them and U+FFFD only for the bad bytes (the sentencepiece rule).

import type { Tokenizer } from './types.js';
import { REPLACEMENT, utf8CharState, utf8DecodeValid } from './utf8.js';

export interface DetokenizerOptions {
  /** Stop strings (OpenAI `stop`); empty strings are ignored. */
  stop?: readonly string[];
  /** Drop special ids (control markers, eos) from the text. */
  skipSpecialTokens?: boolean;
  /**
   * vLLM's min_tokens: the text of the first minTokens ids is released as it is, never matched against
   * stop strings (a stop string that started there and ends later is not matched either). Default 0.
   */
  minTokens?: number;
}

/** One pushed id, for logprobs: its own bytes and text (tokenText), independent of the stream state. */
export interface TokenInfo {
  id: number;
  text: string;
  bytes: Uint8Array;
}

export interface PushResult {
  /** Text safe to send now (may be ''). */
  text: string;
  /** Set once, on the push that completed a stop string. */
  stopped: null | { stop: string };
  /** One entry per pushed id, in order (also after a stop, so logprobs can still be reported). */
  tokens: TokenInfo[];
}

export class IncrementalDetokenizer {
  private readonly stops: string[];
  private readonly maxStopLen: number;
  private readonly skipSpecial: boolean;
  private readonly pending = new Uint8Array(4); // bytes of an unfinished character (≤ 3 in practice)
  private pendingLen = 0;
  private held = ''; // released text withheld because it may begin a stop string
  private stoppedBy: string | null = null;
  private readonly minTokens: number;
  private pushed = 0; // ids pushed so far

  constructor(
    private readonly tokenizer: Tokenizer,
    opts: DetokenizerOptions = {},
  ) {
    this.stops = (opts.stop ?? []).filter((s) => s.length > 0);
    this.maxStopLen = this.stops.reduce((m, s) => Math.max(m, s.length), 0);
    this.skipSpecial = opts.skipSpecialTokens ?? false;
    this.minTokens = opts.minTokens ?? 0;
  }

  /** The stop string that ended the stream, if any. */
  get stop(): string | null {
    return this.stoppedBy;
  }

  push(ids: readonly number[]): PushResult {
    const tokens: TokenInfo[] = [];
    let early = ''; // text of ids within minTokens: released as is
    let text = '';
    for (const id of ids) {
      tokens.push({ id, text: this.tokenizer.tokenText(id), bytes: this.tokenizer.tokenBytes(id) });
      if (this.stoppedBy !== null) continue;
      const p = this.tokenizer.streamPiece(id);
      const within = ++this.pushed <= this.minTokens;
      if (p === null || (this.skipSpecial && this.tokenizer.specialIds.has(id))) continue;
      let piece: string;
      if (typeof p === 'number') piece = this.pushByte(p);
      else piece = (this.pendingLen > 0 ? this.dropPending() : '') + p;
      if (within) early += piece;
      else text += piece;
    }
    if (this.stoppedBy !== null) return { text: '', stopped: null, tokens };
    const out = early + this.release(text, false);
    return { text: out, stopped: this.stoppedBy !== null ? { stop: this.stoppedBy } : null, tokens };
  }

  /**
   * push([id]) for the per-token path: no TokenInfo, no arrays. Returns the text safe to send now;
   * `stop` becomes non-null on the push that completed a stop string (later pushes return '').
   */
  pushToken(id: number): string {
    if (this.stoppedBy !== null) return '';
    const p = this.tokenizer.streamPiece(id);
    const within = ++this.pushed <= this.minTokens; // as push(): min_tokens' text is never matched
    if (p === null || (this.skipSpecial && this.tokenizer.specialIds.has(id))) return '';
    let text: string;
    if (typeof p === 'number') text = this.pushByte(p);
    else text = this.pendingLen > 0 ? this.dropPending() + p : p;
    if (within) return text;
    return text.length === 0 ? '' : this.release(text, false);
  }

  /**
   * End of stream: an unfinished character becomes U+FFFD per byte, and the held-back stop-string prefix
   * is released (the stop string did not occur, so it is ordinary text). '' after a stop.
   */
  flush(): string {
    if (this.stoppedBy !== null) return '';
    const tail = this.pendingLen > 0 ? this.dropPending() : '';
    return this.pushed <= this.minTokens ? tail : this.release(tail, true);
  }

  private pushByte(b: number): string {
    this.pending[this.pendingLen++] = b;
    let out = '';
    // pending[0..len) was a proper prefix of a well-formed character before this byte; re-examine it.
    let i = 0;
    while (i < this.pendingLen) {
      const n = utf8CharState(this.pending, i, this.pendingLen);
      if (n === 0) break; // still unfinished: wait for more bytes
      if (n > 0) out += utf8DecodeValid(this.pending.subarray(i, i + n));
      else out += REPLACEMENT; // this byte cannot start a character: one U+FFFD, resume at the next
      i += n > 0 ? n : 1;
    }
    if (i > 0) {
      this.pending.copyWithin(0, i, this.pendingLen);
      this.pendingLen -= i;
    }
    return out;
  }

  private dropPending(): string {
    const s = REPLACEMENT.repeat(this.pendingLen);
    this.pendingLen = 0;
    return s;
  }

  /** Applies stop strings to new text; returns what may be sent now. */
  private release(text: string, final: boolean): string {
    if (this.stops.length === 0) return text;
    const all = this.held + text;
    if (all.length === 0) return '';
    let at = -1;
    let which = '';
    // The held text has no complete stop string, so a match must end inside the new text.
    const from = Math.max(0, this.held.length - this.maxStopLen + 1);
    for (const s of this.stops) {
      const i = all.indexOf(s, from);
      if (i >= 0 && (at < 0 || i < at || (i === at && s.length > which.length))) {
        at = i;
        which = s;
      }
    }
    if (at >= 0) {
      this.stoppedBy = which;
      this.held = '';
      return all.slice(0, at);
    }
    if (final) {
      this.held = '';
      return all;
    }
    const keep = this.heldSuffix(all);
    this.held = all.slice(all.length - keep);
    return all.slice(0, all.length - keep);
  }

  /** Length of the longest suffix of `s` that is a proper prefix of some stop string. */
  private heldSuffix(s: string): number {
    for (let k = Math.min(s.length, this.maxStopLen - 1); k > 0; k--) {
      const suffix = s.slice(s.length - k);
      if (this.stops.some((stop) => stop.startsWith(suffix))) return k;
    }
    return 0;
  }
}
