// The tokenizer.model form (the original ERNIE-4.5 checkpoints): sentencepiece semantics throughout.
//  - encode = SentencePieceProcessor::Encode: normalizer (identity for ERNIE; dummy prefix, extra-whitespace
//    removal and '▁' escaping as the NormalizerSpec says), then the BPE or unigram model, byte fallback.
//    User-defined symbols (ERNIE's <|begin_of_sentence|>, <mask:N>…) are matched in text, as sentencepiece
//    does; CONTROL pieces (<s>, </s>) and <unk> are not (golden `cases[]`, last case).
//  - ids from added_tokens.json that the proto lacks (ERNIE: <|IMAGE_PLACEHOLDER|>=100295 …) are matched
//    in text like HF added tokens and decode to their content.
//  - decode = SentencePieceProcessor::Decode: CONTROL → '', <unk> → unk_surface (" ⁇ "), byte runs per
//    utf8.ts (one U+FFFD per bad byte). Ids the tokenizer does not know decode to '' (the reference raises;
//    the server must not fail on the 0.3B's 2,120 padding rows).

import { AddedTokenMatcher, type AddedToken, type SplitPiece } from './added-tokens.js';
import { BaseTokenizer } from './base-tokenizer.js';
import type { TokenizerSideConfig } from './checkpoint-config.js';
import type { PlainRun } from './segments.js';
import { SpBpeEncoder } from './sp-bpe.js';
import { PieceType, parseSpModel, type SpModel } from './sp-proto.js';
import { SpUnigramEncoder } from './sp-unigram.js';
import type { DecodeOptions, StreamPiece } from './types.js';
import { decodeBytesSp } from './utf8.js';

const SPACE = '\u2581';

export class SentencePieceTokenizer extends BaseTokenizer {
  readonly kind = 'sentencepiece' as const;
  readonly size: number;
  readonly bosId: number | null;
  readonly eosId: number | null;
  readonly specialIds: ReadonlySet<number>;
  readonly invalidBytePolicy = 'per-byte' as const;
  readonly description: string;

  private readonly model: SpModel;
  private readonly pieceIds = new Map<string, number>();
  /** Ids beyond/outside the proto's pieces (added_tokens.json), id → content. */
  private readonly extra = new Map<number, string>();
  private readonly extraIds = new Map<string, number>();
  private readonly markers: AddedTokenMatcher;
  private readonly encoder: { encode(text: string, out: number[]): void };
  private readonly byteValue: Int16Array; // -1: not a byte piece
  private readonly normalize: (s: string, atStart: boolean) => string;

  constructor(model: SpModel, side: TokenizerSideConfig, path: string) {
    super();
    this.model = model;
    const n = model.pieces.length;
    model.pieces.forEach((p, id) => {
      if (!this.pieceIds.has(p)) this.pieceIds.set(p, id);
    });
    this.byteValue = new Int16Array(n).fill(-1);
    const special = new Set<number>();
    const markers: AddedToken[] = [];
    for (let id = 0; id < n; id++) {
      const t = model.types[id]!;
      if (t === PieceType.CONTROL || t === PieceType.UNKNOWN || t === PieceType.USER_DEFINED) special.add(id);
      if (t === PieceType.USER_DEFINED) markers.push(marker(id, model.pieces[id]!, true));
      if (t === PieceType.BYTE) {
        const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(model.pieces[id]!);
        if (m) this.byteValue[id] = parseInt(m[1]!, 16);
      }
    }
    let size = n;
    for (const a of side.addedTokens) {
      if (this.pieceIds.get(a.content) === a.id) continue; // already a piece (matched by the model rules)
      if (a.id < n) throw new Error(`${path}: added token ${a.content}=${a.id} collides with piece ${JSON.stringify(model.pieces[a.id])}`);
      this.extra.set(a.id, a.content);
      if (a.special) special.add(a.id);
      size = Math.max(size, a.id + 1);
      // The model file is authoritative: content it already has under another id stays encoded as that
      // id; the side-file id remains a valid id that decodes to the same text (an alias).
      if (this.pieceIds.has(a.content) || this.extraIds.has(a.content)) continue;
      this.extraIds.set(a.content, a.id);
      markers.push(a);
    }
    for (const name of [...Object.values(side.namedTokens), ...side.additionalSpecialTokens]) {
      const id = this.tokenToId(name);
      if (id !== null) special.add(id);
    }
    this.size = size;
    this.specialIds = special;
    this.markers = new AddedTokenMatcher(markers);
    const idOf = (field: string, fallback: number): number | null => {
      const name = side.namedTokens[field];
      const id = name !== undefined ? this.tokenToId(name) : null;
      return id ?? (fallback >= 0 && fallback < n ? fallback : null);
    };
    this.bosId = idOf('bos_token', model.bosId);
    this.eosId = idOf('eos_token', model.eosId);

    if (model.modelType === 'bpe') this.encoder = new SpBpeEncoder(model, special);
    else if (model.modelType === 'unigram') this.encoder = new SpUnigramEncoder(model, special);
    else throw new Error(`${path}: sentencepiece model_type ${model.modelType} is not supported (bpe, unigram are)`);

    const ns = model.normalizer;
    // NOTE: a precompiled charsmap (nmt_nfkc…) is approximated by String.normalize('NFKC'); ERNIE uses
    // identity, so its path is exact. The description says when the approximation is in use.
    const approx = ns.hasCharsMap && ns.name !== 'identity';
    const nfkc = approx ? (s: string): string => s.normalize('NFKC') : (s: string): string => s;
    this.normalize = (s, atStart) => {
      let t = nfkc(s);
      if (ns.removeExtraWhitespaces) t = t.replace(/ +/g, ' ').replace(/^ | $/g, '');
      if (ns.addDummyPrefix && atStart && t.length > 0) t = model.treatWhitespaceAsSuffix ? t + ' ' : ' ' + t;
      return ns.escapeWhitespaces ? t.replaceAll(' ', SPACE) : t;
    };
    this.description =
      `sentencepiece ${path} (${model.modelType}, ${n} pieces + ${this.extra.size} added, size ${size}, ` +
      `byte_fallback=${model.byteFallback}, normalizer=${ns.name || 'none'}${approx ? ' ~NFKC approximation' : ''}, ` +
      `dummy_prefix=${ns.addDummyPrefix})`;
  }

  static fromBytes(buf: Uint8Array, side: TokenizerSideConfig, path: string): SentencePieceTokenizer {
    return new SentencePieceTokenizer(parseSpModel(buf), side, path);
  }

  protected splitSpecial(text: string, parseSpecial: boolean): SplitPiece[] {
    return this.markers.split(text, parseSpecial);
  }

  protected encodeRun(run: PlainRun, out: number[]): void {
    this.encoder.encode(this.normalize(run.text, run.atStart), out);
  }

  idToToken(id: number): string | null {
    if (!Number.isInteger(id) || id < 0) return null;
    return id < this.model.pieces.length ? this.model.pieces[id]! : (this.extra.get(id) ?? null);
  }

  tokenToId(token: string): number | null {
    return this.pieceIds.get(token) ?? this.extraIds.get(token) ?? null;
  }

  /** DecodeSentencePiece's surface of a non-byte id, without the begin-of-sentence '▁' rule. */
  private surface(id: number): string {
    if (id >= this.model.pieces.length) return this.extra.get(id) ?? '';
    const t = this.model.types[id];
    if (t === PieceType.CONTROL) return '';
    if (t === PieceType.UNKNOWN) return this.model.unkSurface;
    return this.model.pieces[id]!.replaceAll(SPACE, ' ');
  }

  private specialSurface(id: number): boolean {
    const t = this.model.types[id];
    return t === PieceType.CONTROL || t === PieceType.UNKNOWN;
  }

  protected computeStreamPiece(id: number): StreamPiece {
    if (!Number.isInteger(id) || id < 0 || id >= this.size) return null;
    if (id < this.model.pieces.length) {
      const b = this.byteValue[id]!;
      return b >= 0 ? b : this.surface(id);
    }
    return this.extra.has(id) ? this.surface(id) : null;
  }

  decode(ids: readonly number[], opts: DecodeOptions = {}): string {
    const skip = opts.skipSpecialTokens ?? false;
    const ns = this.model.normalizer;
    const stripBosWs = ns.addDummyPrefix || ns.removeExtraWhitespaces;
    let text = '';
    let bytes: number[] = [];
    let isBosWs = true;
    let bosWsSeen = false;
    for (const id of ids) {
      const p = this.streamPiece(id);
      if (p === null || (skip && this.specialIds.has(id))) continue;
      if (typeof p === 'number') {
        bytes.push(p);
        continue;
      }
      if (bytes.length > 0) {
        text += decodeBytesSp(Uint8Array.from(bytes), 0, bytes.length, true).text;
        bytes = [];
      }
      if (bosWsSeen || text.length > 0) isBosWs = false;
      let piece = p;
      bosWsSeen = false;
      if (isBosWs && stripBosWs && id < this.model.pieces.length && !this.specialSurface(id) && piece.startsWith(' ')) {
        piece = piece.slice(1);
        bosWsSeen = !ns.removeExtraWhitespaces;
      }
      text += piece;
    }
    if (bytes.length > 0) text += decodeBytesSp(Uint8Array.from(bytes), 0, bytes.length, true).text;
    return text;
  }
}

function marker(id: number, content: string, special: boolean): AddedToken {
  return { id, content, special, lstrip: false, rstrip: false, singleWord: false, normalized: false };
}
