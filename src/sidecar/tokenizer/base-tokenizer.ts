// What the two tokenizer forms share: the encode flow (split special markers → encode plain runs) and
// per-id byte/text caches. Subclasses supply the reference-specific parts.

import type { SplitPiece } from './added-tokens.js';
import { splitSegments, type PlainRun } from './segments.js';
import type { DecodeOptions, EncodeOptions, StreamPiece, TextSegment, Tokenizer, TokenizerKind } from './types.js';
import { isValidUtf8, utf8DecodeValid, utf8Encode } from './utf8.js';

const BYTE_PIECE = /^<0x([0-9A-Fa-f]{2})>$/;
const EMPTY = new Uint8Array(0);

export abstract class BaseTokenizer implements Tokenizer {
  abstract readonly kind: TokenizerKind;
  abstract readonly size: number;
  abstract readonly bosId: number | null;
  abstract readonly eosId: number | null;
  abstract readonly specialIds: ReadonlySet<number>;
  abstract readonly invalidBytePolicy: 'per-byte' | 'whole-run';
  abstract readonly description: string;

  private bytesCache: Array<Uint8Array | undefined> = [];
  private textCache: Array<string | undefined> = [];
  private pieceCache: StreamPiece[] = []; // undefined entries: not computed yet

  /** Splits trusted (`parseSpecial`) or untrusted text on the markers the encoder must not see. */
  protected abstract splitSpecial(text: string, parseSpecial: boolean): SplitPiece[];
  /** Encodes one run of plain text (no markers in it), appending ids. */
  protected abstract encodeRun(run: PlainRun, out: number[]): void;
  abstract decode(ids: readonly number[], opts?: DecodeOptions): string;
  abstract idToToken(id: number): string | null;
  abstract tokenToId(token: string): number | null;
  /** Uncached streamPiece (see types.ts). */
  protected abstract computeStreamPiece(id: number): StreamPiece;

  encode(text: string, opts: EncodeOptions = {}): number[] {
    return this.encodeSegments([{ text, parseSpecial: opts.parseSpecial ?? true }], { addBos: opts.addBos ?? false });
  }

  encodeSegments(segments: readonly TextSegment[], opts: { addBos?: boolean } = {}): number[] {
    const out: number[] = [];
    if (opts.addBos && this.bosId !== null) out.push(this.bosId);
    for (const item of splitSegments(segments, (t, p) => this.splitSpecial(t, p))) {
      if (typeof item === 'number') out.push(item);
      else this.encodeRun(item, out);
    }
    return out;
  }

  streamPiece(id: number): StreamPiece {
    if (!Number.isInteger(id) || id < 0 || id >= this.size) return null;
    let p = this.pieceCache[id];
    if (p === undefined) p = this.pieceCache[id] = this.computeStreamPiece(id);
    return p;
  }

  tokenText(id: number): string {
    let t = this.textCache[id];
    if (t === undefined) {
      const b = this.tokenBytes(id);
      // OpenAI's convention for a token that is not whole UTF-8 by itself: "bytes:\xe4\xb8".
      t = isValidUtf8(b) ? utf8DecodeValid(b) : 'bytes:' + Array.from(b, (x) => '\\x' + x.toString(16).padStart(2, '0')).join('');
      if (Number.isInteger(id) && id >= 0 && id < this.size) this.textCache[id] = t;
    }
    return t;
  }

  tokenBytes(id: number): Uint8Array {
    const cached = this.bytesCache[id];
    if (cached) return cached;
    const tok = Number.isInteger(id) && id >= 0 && id < this.size ? this.idToToken(id) : null;
    if (tok === null) return EMPTY;
    const m = tok.length === 6 ? BYTE_PIECE.exec(tok) : null;
    const bytes = m ? Uint8Array.of(parseInt(m[1]!, 16)) : utf8Encode(tok.replaceAll('\u2581', ' '));
    this.bytesCache[id] = bytes;
    return bytes;
  }
}
