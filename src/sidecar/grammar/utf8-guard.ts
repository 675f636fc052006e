// Keeps byte-fallback pieces (<0x80>..<0xFF>) from spelling invalid UTF-8 under a grammar.
// xgrammar 0.1.27's matcher decodes multi-byte characters leniently: it counts continuation bytes after
// a lead byte but checks neither the lead nor the second byte's range, so under any character class
// (a JSON string's [^"\\\x00-\x1f], a pattern's [^"]) it accepts C0 80, ED A0 80 (a surrogate),
// E0 80 80 (overlong), F5.. (past U+10FFFF), and the lone bytes decode to U+FFFD: text the grammar
// counted as one character arrives as several, past a maxLength or a pattern's bounds
// (test/sidecar/grammar/utf8-guard.test.ts shows each on the matcher). The grammar cannot say it: the
// matcher matches characters, the fault is in its byte decoding. So each published mask is narrowed
// to the bytes that continue well-formed UTF-8 (Unicode's Table 3-7), given the bytes the choice's
// pieces have spelled so far. Whole pieces are valid UTF-8 text already; only byte pieces are touched.
// Byte-level BPE vocabularies (GPT-2's Ġ) are not guarded: their pieces are bytes of any kind.
import type { GrammarVocab } from './vocab.js';

/** Where a choice stands in a multi-byte character: `need` continuation bytes to come, the next in [lo, hi]. */
export interface Utf8State {
  need: number;
  lo: number;
  hi: number;
}

const BYTE_PIECE = /^<0x([0-9A-Fa-f]{2})>$/;

/** The range of the byte after lead byte `b`, and how many continuation bytes follow it (0: not a lead). */
function afterLead(b: number): Utf8State {
  if (b >= 0xc2 && b <= 0xdf) return { need: 1, lo: 0x80, hi: 0xbf };
  if (b === 0xe0) return { need: 2, lo: 0xa0, hi: 0xbf };
  if (b === 0xed) return { need: 2, lo: 0x80, hi: 0x9f };
  if (b >= 0xe1 && b <= 0xef) return { need: 2, lo: 0x80, hi: 0xbf };
  if (b === 0xf0) return { need: 3, lo: 0x90, hi: 0xbf };
  if (b >= 0xf1 && b <= 0xf3) return { need: 3, lo: 0x80, hi: 0xbf };
  if (b === 0xf4) return { need: 3, lo: 0x80, hi: 0x8f };
  return { need: 0, lo: 0, hi: 0 };
}

export class Utf8Guard {
  /** token ids of the byte pieces 0x80..0xFF, by byte - 0x80 (-1: the vocabulary has none). */
  private readonly highBytes = new Int32Array(128).fill(-1);
  /** token id -> its byte, for byte pieces 0x80..0xFF (-1 otherwise). */
  private readonly byteOf: Int16Array;
  /**
   * What narrow() clears for each state, built on first use: pairs (word, bits) over the row, one per
   * word that holds a disallowed high byte piece. Keyed by `need > 0 ? lo << 8 | hi : 0`: a state is one
   * of six (no character pending, or one of Table 3-7's five continuation ranges), so each row clears a
   * few words instead of testing 128 bytes.
   */
  private readonly clears = new Map<number, Int32Array>();

  constructor(vocab: Pick<GrammarVocab, 'pieces' | 'vocabType'>) {
    this.byteOf = new Int16Array(vocab.pieces.length).fill(-1);
    if (vocab.vocabType !== 'byte_fallback') return;
    vocab.pieces.forEach((piece, id) => {
      const m = BYTE_PIECE.exec(piece);
      if (!m) return;
      const b = parseInt(m[1]!, 16);
      if (b < 0x80) return;
      this.byteOf[id] = b;
      this.highBytes[b - 0x80] = id;
    });
  }

  static start(): Utf8State {
    return { need: 0, lo: 0, hi: 0 };
  }

  /** The choice accepted `token`. */
  accept(s: Utf8State, token: number): void {
    const b = token < this.byteOf.length ? this.byteOf[token]! : -1;
    if (b < 0) {
      s.need = 0; // a whole piece: the matcher allows none mid-character, so none is pending after it
    } else if (s.need > 0) {
      s.need--;
      s.lo = 0x80;
      s.hi = 0xbf;
    } else {
      Object.assign(s, afterLead(b));
    }
  }

  /** Clears, in the mask at `buf[row..]` (bit t of word t >> 5), every high byte piece that would make `s` ill-formed. */
  narrow(s: Utf8State, buf: Int32Array, row: number): void {
    const key = s.need > 0 ? (s.lo << 8) | s.hi : 0;
    let c = this.clears.get(key);
    if (c === undefined) this.clears.set(key, (c = this.clearsFor(s)));
    for (let i = 0; i < c.length; i += 2) buf[row + c[i]!]! &= ~c[i + 1]!;
  }

  /** The (word, bits) pairs of the high byte pieces that would make `s` ill-formed. */
  private clearsFor(s: Utf8State): Int32Array {
    const bits = new Map<number, number>();
    for (let b = 0x80; b <= 0xff; b++) {
      const id = this.highBytes[b - 0x80]!;
      if (id < 0) continue;
      const ok = s.need > 0 ? b >= s.lo && b <= s.hi : afterLead(b).need > 0;
      if (!ok) bits.set(id >> 5, (bits.get(id >> 5) ?? 0) | (1 << (id & 31)));
    }
    return Int32Array.from([...bits].flat());
  }
}
