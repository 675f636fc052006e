// The BPE model of HF tokenizers (`models::bpe::Word::merge_all`), hand-written.
// Why by hand: @huggingface/transformers' tokenizers run this in JS too but come with onnxruntime and a
// large dependency tree; this file is the ~150 lines the sidecar needs, with typed arrays in the hot loop.
// Rules kept from the reference:
//  - a word starts as one symbol per character; a character missing from the vocabulary becomes its
//    UTF-8 bytes as `<0xXX>` tokens (byte_fallback, only when all of them exist), else unk (consecutive
//    unks fused when fuse_unk);
//  - merges apply lowest rank first, leftmost position on ties; a queued merge is stale unless the pair
//    now at its position still merges into the same id;
//  - ignore_merges: a word that is itself in the vocabulary is one token.

import { HandleHeap } from './heap.js';
import { utf8Encode } from './utf8.js';
import { pacePoint } from './pace.js';

export interface HfBpeSpec {
  vocab: Map<string, number>;
  /** [left, right] in rank order. */
  merges: Array<[string, string]>;
  unkToken: string | null;
  byteFallback: boolean;
  fuseUnk: boolean;
  ignoreMerges: boolean;
}

const ID_SPAN = 2 ** 22; // ids < 4M; merge value = rank * ID_SPAN + newId

export class HfBpeModel {
  private readonly vocab: Map<string, number>;
  private readonly idSpan: number; // pair key = left * idSpan + right
  private readonly merges = new Map<number, number>();
  private readonly unkId: number | null;
  private readonly byteIds = new Int32Array(256).fill(-1);

  private symId = new Int32Array(256);
  private symPrev = new Int32Array(256);
  private symNext = new Int32Array(256);
  private symAlive = new Uint8Array(256);
  private qPos = new Int32Array(512);
  private qRank = new Int32Array(512);
  private qNew = new Int32Array(512);
  private qCount = 0;
  private readonly heap: HandleHeap;

  constructor(private readonly spec: HfBpeSpec) {
    this.vocab = spec.vocab;
    let maxId = 0;
    for (const id of spec.vocab.values()) maxId = Math.max(maxId, id);
    if (maxId >= ID_SPAN) throw new Error(`tokenizer.json: ids up to ${maxId} exceed the supported ${ID_SPAN}`);
    this.idSpan = maxId + 1;
    spec.merges.forEach(([a, b], rank) => {
      const ia = spec.vocab.get(a);
      const ib = spec.vocab.get(b);
      const merged = spec.vocab.get(a + b);
      if (ia === undefined || ib === undefined || merged === undefined) {
        throw new Error(`tokenizer.json: merge "${a} ${b}" refers to a token missing from the vocabulary`);
      }
      const key = ia * this.idSpan + ib;
      if (!this.merges.has(key)) this.merges.set(key, rank * ID_SPAN + merged);
    });
    this.unkId = spec.unkToken !== null ? (spec.vocab.get(spec.unkToken) ?? null) : null;
    for (let b = 0; b < 256; b++) {
      const id = spec.vocab.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
      if (id !== undefined) this.byteIds[b] = id;
    }
    this.heap = new HandleHeap((x, y) => {
      const rx = this.qRank[x]!;
      const ry = this.qRank[y]!;
      return rx < ry || (rx === ry && this.qPos[x]! < this.qPos[y]!);
    }, 256);
  }

  private ensure(n: number): void {
    if (this.symId.length >= n) return;
    const cap = Math.max(n, this.symId.length * 2);
    this.symId = new Int32Array(cap);
    this.symPrev = new Int32Array(cap);
    this.symNext = new Int32Array(cap);
    this.symAlive = new Uint8Array(cap);
  }

  private queue(pos: number, a: number, b: number): void {
    const m = this.merges.get(a * this.idSpan + b);
    if (m === undefined) return;
    if (this.qCount === this.qPos.length) {
      const cap = this.qPos.length * 2;
      const grow = (x: Int32Array): Int32Array<ArrayBuffer> => {
        const y = new Int32Array(cap);
        y.set(x);
        return y;
      };
      this.qPos = grow(this.qPos);
      this.qRank = grow(this.qRank);
      this.qNew = grow(this.qNew);
    }
    const e = this.qCount++;
    this.qPos[e] = pos;
    this.qRank[e] = Math.floor(m / ID_SPAN);
    this.qNew[e] = m % ID_SPAN;
    this.heap.push(e);
  }

  /** Tokenizes one pre-tokenized word, appending ids to `out`. */
  encodeWord(word: string, out: number[]): void {
    if (word.length === 0) return;
    if (this.spec.ignoreMerges) {
      const whole = this.vocab.get(word);
      if (whole !== undefined) {
        out.push(whole);
        return;
      }
    }
    // At most 3 byte symbols per UTF-16 unit (a BMP char is ≤ 3 bytes; a surrogate pair is 4 bytes).
    this.ensure(word.length * 3);
    const { symId, symPrev, symNext, symAlive } = this;
    let n = 0;
    let lastWasUnk = false;
    const add = (id: number, isUnk: boolean): void => {
      if (isUnk && lastWasUnk && this.spec.fuseUnk) return; // fused into the previous unk
      symId[n] = id;
      symPrev[n] = n - 1;
      symNext[n] = n + 1;
      symAlive[n] = 1;
      n++;
      lastWasUnk = isUnk;
    };
    for (let i = 0; i < word.length; ) {
      pacePoint();
      const c = word.charCodeAt(i);
      const len = c >= 0xd800 && c <= 0xdbff && i + 1 < word.length ? 2 : 1;
      const ch = len === 1 ? word[i]! : word.slice(i, i + 2);
      i += len;
      const id = this.vocab.get(ch);
      if (id !== undefined) {
        add(id, false);
        continue;
      }
      if (this.spec.byteFallback) {
        const bytes = utf8Encode(ch);
        if (bytes.every((b) => this.byteIds[b]! >= 0)) {
          for (const b of bytes) add(this.byteIds[b]!, false);
          continue;
        }
      }
      if (this.unkId === null) throw new Error(`tokenizer.json: no token for ${JSON.stringify(ch)} and no unk_token`);
      add(this.unkId, true);
    }
    if (n === 0) return;
    symNext[n - 1] = -1;

    this.qCount = 0;
    this.heap.clear();
    for (let i = 0; i + 1 < n; i++) {
      this.queue(i, symId[i]!, symId[i + 1]!);
      pacePoint();
    }
    for (let e = this.heap.pop(); e >= 0; e = this.heap.pop()) {
      pacePoint();
      const pos = this.qPos[e]!;
      if (!symAlive[pos]) continue;
      const next = symNext[pos]!;
      if (next < 0) continue;
      const m = this.merges.get(symId[pos]! * this.idSpan + symId[next]!);
      if (m === undefined || m % ID_SPAN !== this.qNew[e]) continue; // stale
      symId[pos] = this.qNew[e]!;
      symAlive[next] = 0;
      const nn = symNext[next]!;
      symNext[pos] = nn;
      if (nn >= 0) symPrev[nn] = pos;
      const prev = symPrev[pos]!;
      if (prev >= 0) this.queue(prev, symId[prev]!, symId[pos]!);
      if (nn >= 0) this.queue(pos, symId[pos]!, symId[nn]!);
    }
    for (let s = 0; s >= 0; s = symNext[s]!) out.push(symId[s]!);
  }
}
