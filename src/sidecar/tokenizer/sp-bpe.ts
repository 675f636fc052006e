// SentencePiece BPE encoding (bpe_model.cc `Model::SampleEncode` with alpha 0), hand-written.
// Why by hand: no maintained npm package encodes sentencepiece BPE bit-exactly without a native or WASM
// build of sentencepiece, and the hot loop is small. Algorithm, as in the reference:
//   1. split the normalized text into one symbol per character. The reference first matches the longest
//      user-defined symbol at each position and freezes it (never merged); a frozen symbol is a hard
//      border, so the caller splits user-defined symbols out beforehand (AddedTokenMatcher) and hands this
//      encoder only the text between them: same result, and one matcher for trusted/untrusted text;
//   2. queue every adjacent pair whose concatenation is a piece (NORMAL / USER_DEFINED / UNUSED), keyed by
//      that piece's score; pop the highest score, leftmost on ties; skip stale entries (an emptied side,
//      or a side that has grown since the entry was queued); merge; queue the two new neighbour pairs;
//   3. resegment UNUSED pieces back into the pair they were merged from;
//   4. a symbol that is not a piece is unknown: with byte_fallback, one `<0xXX>` piece per UTF-8 byte.
// Speed: symbols and queue entries live in reusable typed arrays; pair lookups of two known pieces are
// cached under the integer key `left * numPieces + right`.

import { HandleHeap } from './heap.js';
import { PieceType, type SpModel } from './sp-proto.js';
import { utf8Encode } from './utf8.js';
import { pacePoint } from './pace.js';

export class SpBpeEncoder {
  private readonly numPieces: number;
  /** pieces_ of the reference: the pieces a merge may produce. */
  private readonly mergeable = new Map<string, number>();
  /** Every piece (PieceToId). */
  private readonly all = new Map<string, number>();
  private readonly byteIds = new Int32Array(256).fill(-1);
  /** Pair key → merged id, or -1 when the concatenation is not a (permitted) piece. */
  private readonly pairCache = new Map<number, number>();

  // Symbols of the text being encoded. [start, end) are UTF-16 offsets into it.
  private symStart = new Int32Array(256);
  private symEnd = new Int32Array(256);
  private symId = new Int32Array(256);
  private symPrev = new Int32Array(256);
  private symNext = new Int32Array(256);
  // Queue entries (one per candidate pair).
  private qLeft = new Int32Array(512);
  private qRight = new Int32Array(512);
  private qSize = new Int32Array(512);
  private qScore = new Float64Array(512);
  private qCount = 0;
  private readonly heap: HandleHeap;

  constructor(
    private readonly model: SpModel,
    /** Ids no merge may produce: special pieces are only ever matched as whole markers by the caller
     *  (or, in untrusted text, never), so `<mask:1` + `>` can never become a control id. */
    private readonly blockedIds: ReadonlySet<number>,
  ) {
    this.numPieces = model.pieces.length;
    model.pieces.forEach((p, id) => {
      const t = model.types[id]!;
      if (!this.all.has(p)) this.all.set(p, id);
      if (t === PieceType.NORMAL || t === PieceType.USER_DEFINED || t === PieceType.UNUSED) this.mergeable.set(p, id);
      if (t === PieceType.BYTE) {
        const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(p);
        if (m) this.byteIds[parseInt(m[1]!, 16)] = id;
      }
    });
    this.heap = new HandleHeap((a, b) => {
      const sa = this.qScore[a]!;
      const sb = this.qScore[b]!;
      return sa > sb || (sa === sb && this.qLeft[a]! < this.qLeft[b]!);
    }, 256);
  }

  private ensureSymbols(n: number): void {
    if (this.symStart.length >= n) return;
    const cap = Math.max(n, this.symStart.length * 2);
    this.symStart = new Int32Array(cap);
    this.symEnd = new Int32Array(cap);
    this.symId = new Int32Array(cap);
    this.symPrev = new Int32Array(cap);
    this.symNext = new Int32Array(cap);
  }

  private newEntry(): number {
    if (this.qCount === this.qLeft.length) {
      const cap = this.qLeft.length * 2;
      const grow = <T extends Int32Array | Float64Array>(a: T, b: T): T => (b.set(a), b);
      this.qLeft = grow(this.qLeft, new Int32Array(cap));
      this.qRight = grow(this.qRight, new Int32Array(cap));
      this.qSize = grow(this.qSize, new Int32Array(cap));
      this.qScore = grow(this.qScore, new Float64Array(cap));
    }
    return this.qCount++;
  }

  /** Merged piece id for adjacent symbols l, r, or -1. */
  private lookupPair(text: string, l: number, r: number): number {
    const a = this.symId[l]!;
    const b = this.symId[r]!;
    if (a >= 0 && b >= 0) {
      const cache = this.pairCache;
      const key = a * this.numPieces + b;
      let id = cache.get(key);
      if (id === undefined) {
        id = this.mergeable.get(this.model.pieces[a]! + this.model.pieces[b]!) ?? -1;
        if (id >= 0 && this.blockedIds.has(id)) id = -1;
        cache.set(key, id);
      }
      return id;
    }
    // A side that is not a piece: look the concatenated text up directly (not cacheable by id).
    const id = this.mergeable.get(text.slice(this.symStart[l], this.symEnd[r])) ?? -1;
    return id >= 0 && this.blockedIds.has(id) ? -1 : id;
  }

  private maybeQueue(text: string, l: number, r: number, revMerge: Map<string, [string, string]> | null): Map<string, [string, string]> | null {
    if (l < 0 || r < 0) return revMerge;
    const id = this.lookupPair(text, l, r);
    if (id < 0) return revMerge;
    const e = this.newEntry();
    this.qLeft[e] = l;
    this.qRight[e] = r;
    this.qSize[e] = this.symEnd[r]! - this.symStart[l]!;
    this.qScore[e] = this.model.scores[id]!;
    this.heap.push(e);
    if (this.model.types[id] === PieceType.UNUSED) {
      revMerge ??= new Map();
      revMerge.set(text.slice(this.symStart[l], this.symEnd[r]), [
        text.slice(this.symStart[l], this.symEnd[l]),
        text.slice(this.symStart[r], this.symEnd[r]),
      ]);
    }
    return revMerge;
  }

  /** Encodes normalized text (spaces already '▁', no user-defined symbols in it), appending ids to `out`. */
  encode(text: string, out: number[]): void {
    if (text.length === 0) return;
    this.ensureSymbols(text.length);
    const { symStart, symEnd, symId, symPrev, symNext } = this;
    let n = 0;
    for (let i = 0; i < text.length; ) {
      const c = text.charCodeAt(i);
      const len = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? 2 : 1;
      symStart[n] = i;
      symEnd[n] = i + len;
      symId[n] = this.all.get(len === 1 ? text[i]! : text.slice(i, i + 2)) ?? -1;
      symPrev[n] = n - 1;
      symNext[n] = n + 1;
      n++;
      i += len;
      pacePoint();
    }
    symNext[n - 1] = -1;

    this.qCount = 0;
    this.heap.clear();
    let revMerge: Map<string, [string, string]> | null = null;
    for (let i = 1; i < n; i++) {
      revMerge = this.maybeQueue(text, i - 1, i, revMerge);
      pacePoint();
    }

    for (let e = this.heap.pop(); e >= 0; e = this.heap.pop()) {
      pacePoint();
      const l = this.qLeft[e]!;
      const r = this.qRight[e]!;
      const lLen = symEnd[l]! - symStart[l]!;
      const rLen = symEnd[r]! - symStart[r]!;
      // Stale: a side was emptied, or a side has grown since this entry was queued (sizes only grow).
      if (lLen === 0 || rLen === 0 || lLen + rLen !== this.qSize[e]) continue;
      symId[l] = this.lookupPair(text, l, r);
      symEnd[l] = symEnd[r]!;
      const rn = symNext[r]!;
      symNext[l] = rn;
      if (rn >= 0) symPrev[rn] = l;
      symEnd[r] = symStart[r]!; // empty
      revMerge = this.maybeQueue(text, symPrev[l]!, l, revMerge);
      revMerge = this.maybeQueue(text, l, rn, revMerge);
    }

    for (let s = 0; s >= 0; s = symNext[s]!) {
      const id = symId[s]!;
      if (revMerge && id >= 0 && this.model.types[id] === PieceType.UNUSED) this.resegment(text.slice(symStart[s], symEnd[s]), revMerge, out);
      else if (id >= 0) out.push(id);
      else this.pushUnknown(text.slice(symStart[s], symEnd[s]), out);
    }
  }

  private resegment(w: string, revMerge: Map<string, [string, string]>, out: number[]): void {
    const id = this.all.get(w) ?? -1;
    const parts = id >= 0 && this.model.types[id] === PieceType.UNUSED ? revMerge.get(w) : undefined;
    if (!parts) {
      if (id >= 0) out.push(id);
      else this.pushUnknown(w, out);
      return;
    }
    this.resegment(parts[0], revMerge, out);
    this.resegment(parts[1], revMerge, out);
  }

  /** An unknown piece: its UTF-8 bytes as byte pieces (byte_fallback), else the unknown id. */
  private pushUnknown(w: string, out: number[]): void {
    if (this.model.byteFallback) {
      for (const b of utf8Encode(w)) {
        const id = this.byteIds[b]!;
        out.push(id >= 0 ? id : this.model.unkId);
      }
    } else out.push(this.model.unkId);
  }
}
