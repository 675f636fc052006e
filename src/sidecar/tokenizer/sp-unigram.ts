// SentencePiece unigram encoding (unigram_model.cc `Model::EncodeOptimized`: Viterbi without a full
// lattice), hand-written for the same reason as sp-bpe.ts. Used only when the model proto says
// model_type UNIGRAM (ERNIE-4.5 is BPE; there is no unigram golden here, so this path is checked by unit
// tests of its rules, not against the reference).
// Rules kept from the reference: candidates are NORMAL and USER_DEFINED pieces (UNUSED skipped); a
// user-defined piece scores `byteLength * maxScore - 0.1` so it always wins; a position with no
// one-character candidate gets an unknown node of one character scored `minScore - 10`; path scores
// accumulate in float32; ties keep the first candidate found (shorter pieces are found first).

import { PieceType, type SpModel } from './sp-proto.js';
import { utf8Encode } from './utf8.js';
import { pacePoint } from './pace.js';

const UNK_PENALTY = 10;

export class SpUnigramEncoder {
  private readonly candidates = new Map<string, number>();
  private readonly maxLen: number; // longest candidate, UTF-16 units
  private readonly minScore: number;
  private readonly maxScore: number;
  private readonly byteIds = new Int32Array(256).fill(-1);

  constructor(
    private readonly model: SpModel,
    /** Ids never chosen from text: special pieces are split out by the caller (see sp-bpe.ts). */
    private readonly blockedIds: ReadonlySet<number>,
  ) {
    let maxLen = 1;
    let minScore = Infinity;
    let maxScore = -Infinity;
    model.pieces.forEach((p, id) => {
      const t = model.types[id]!;
      if ((t === PieceType.NORMAL || t === PieceType.USER_DEFINED) && p.length > 0 && !this.candidates.has(p)) {
        this.candidates.set(p, id);
        maxLen = Math.max(maxLen, p.length);
      }
      if (t === PieceType.NORMAL) {
        minScore = Math.min(minScore, model.scores[id]!);
        maxScore = Math.max(maxScore, model.scores[id]!);
      }
      const m = t === PieceType.BYTE ? /^<0x([0-9A-Fa-f]{2})>$/.exec(p) : null;
      if (m) this.byteIds[parseInt(m[1]!, 16)] = id;
    });
    this.maxLen = maxLen;
    this.minScore = Number.isFinite(minScore) ? minScore : 0;
    this.maxScore = Number.isFinite(maxScore) ? maxScore : 0;
  }

  /** Encodes normalized text (spaces already '▁', special markers split out), appending ids to `out`. */
  encode(text: string, out: number[]): void {
    const n = text.length;
    if (n === 0) return;
    const bestScore = new Float32Array(n + 1);
    const bestFrom = new Int32Array(n + 1).fill(-1);
    const bestId = new Int32Array(n + 1).fill(-1);
    const unkScore = Math.fround(this.minScore - UNK_PENALTY);
    for (let start = 0; start < n; ) {
      const c = text.charCodeAt(start);
      const charLen = c >= 0xd800 && c <= 0xdbff && start + 1 < n ? 2 : 1;
      const base = bestScore[start]!;
      let hasSingle = false;
      for (let len = 1; len <= this.maxLen && start + len <= n; len++) {
        const id = this.candidates.get(text.slice(start, start + len));
        if (id === undefined || this.blockedIds.has(id)) continue;
        const score =
          this.model.types[id] === PieceType.USER_DEFINED
            ? Math.fround(utf8Encode(text.slice(start, start + len)).length * this.maxScore - 0.1)
            : this.model.scores[id]!;
        const cand = Math.fround(score + base);
        const end = start + len;
        if (bestFrom[end] === -1 || cand > bestScore[end]!) {
          bestScore[end] = cand;
          bestFrom[end] = start;
          bestId[end] = id;
        }
        if (len === charLen) hasSingle = true;
      }
      if (!hasSingle) {
        const end = start + charLen;
        const cand = Math.fround(unkScore + base);
        if (bestFrom[end] === -1 || cand > bestScore[end]!) {
          bestScore[end] = cand;
          bestFrom[end] = start;
          bestId[end] = -1; // unknown
        }
      }
      start += charLen;
      pacePoint();
    }
    const path: Array<[number, number, number]> = [];
    for (let end = n; end > 0; end = bestFrom[end]!) path.push([bestFrom[end]!, end, bestId[end]!]);
    for (let k = path.length - 1; k >= 0; k--) {
      const [s, e, id] = path[k]!;
      if (id >= 0) out.push(id);
      else if (this.model.byteFallback) for (const b of utf8Encode(text.slice(s, e))) out.push(this.byteIds[b]! >= 0 ? this.byteIds[b]! : this.model.unkId);
      else out.push(this.model.unkId);
    }
  }
}
