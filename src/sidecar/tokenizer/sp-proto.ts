// A minimal protobuf reader for sentencepiece's ModelProto (sentencepiece_model.proto).
// Hand-written because only ~15 fields of one message are needed; a protobuf dependency plus generated
// code would be larger than this file. Unknown fields are skipped, as protobuf requires.
// Field numbers (sentencepiece_model.proto):
//   ModelProto      1 pieces (SentencePiece), 2 trainer_spec, 3 normalizer_spec, 5 denormalizer_spec
//   SentencePiece   1 piece, 2 score (float), 3 type (enum)
//   TrainerSpec     3 model_type, 35 byte_fallback, 40 unk_id, 41 bos_id, 42 eos_id, 43 pad_id,
//                   44 unk_surface, 24 treat_whitespace_as_suffix
//   NormalizerSpec  1 name, 2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces,
//                   5 escape_whitespaces

export const PieceType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

export type SpModelType = 'unigram' | 'bpe' | 'word' | 'char';

export interface SpModel {
  pieces: string[];
  scores: Float32Array;
  types: Uint8Array; // PieceType per id
  modelType: SpModelType;
  byteFallback: boolean;
  unkId: number;
  bosId: number; // -1 = none
  eosId: number;
  padId: number;
  unkSurface: string;
  treatWhitespaceAsSuffix: boolean;
  normalizer: {
    name: string;
    hasCharsMap: boolean;
    addDummyPrefix: boolean;
    removeExtraWhitespaces: boolean;
    escapeWhitespaces: boolean;
  };
}

class Reader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  varint(): number {
    // Values here fit in 53 bits except negative int32 ids (10-byte encodings), handled by toInt32.
    let result = 0;
    let mul = 1;
    for (;;) {
      if (this.pos >= this.end) throw new Error('sentencepiece model: truncated varint');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if (b < 0x80) return result;
      mul *= 128;
    }
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) {
      const len = this.varint(); // read first: `pos += varint()` would add to the pre-read pos
      this.pos += len;
    }
    else if (wire === 5) this.pos += 4;
    else throw new Error(`sentencepiece model: unsupported wire type ${wire}`);
  }
}

/** A protobuf int32 id field. Negative values arrive as 10-byte varints that a double cannot hold exactly;
 *  the only negative id sentencepiece uses is -1 ("none"), so every negative value reads as -1. */
function toInt32(v: number): number {
  return v > 0x7fffffff ? -1 : v;
}

const utf8 = new TextDecoder('utf-8');

function fields(buf: Uint8Array, start: number, end: number, each: (field: number, wire: number, r: Reader) => void): void {
  const r = new Reader(buf, start, end);
  while (r.pos < end) {
    const key = r.varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    const before = r.pos;
    each(field, wire, r);
    if (r.pos === before) r.skip(wire); // the callback did not consume it
  }
}

function lenDelimited(r: Reader): [number, number] {
  const len = r.varint();
  const s = r.pos;
  r.pos += len;
  if (r.pos > r.end) throw new Error('sentencepiece model: truncated field');
  return [s, r.pos];
}

const MODEL_TYPES: Record<number, SpModelType> = { 1: 'unigram', 2: 'bpe', 3: 'word', 4: 'char' };

export function parseSpModel(buf: Uint8Array): SpModel {
  const pieces: string[] = [];
  const scores: number[] = [];
  const types: number[] = [];
  const m: SpModel = {
    pieces,
    scores: new Float32Array(0),
    types: new Uint8Array(0),
    modelType: 'unigram', // proto default
    byteFallback: false,
    unkId: 0,
    bosId: 1,
    eosId: 2,
    padId: -1,
    unkSurface: ' \u2047 ',
    treatWhitespaceAsSuffix: false,
    normalizer: { name: '', hasCharsMap: false, addDummyPrefix: true, removeExtraWhitespaces: true, escapeWhitespaces: true },
  };
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  fields(buf, 0, buf.length, (field, wire, r) => {
    if (wire !== 2) return;
    const [s, e] = lenDelimited(r);
    if (field === 1) {
      let piece = '';
      let score = 0;
      let type: number = PieceType.NORMAL;
      fields(buf, s, e, (f, w, pr) => {
        if (f === 1 && w === 2) {
          const [a, b] = lenDelimited(pr);
          piece = utf8.decode(buf.subarray(a, b));
        } else if (f === 2 && w === 5) {
          score = dv.getFloat32(pr.pos, true);
          pr.pos += 4;
        } else if (f === 3 && w === 0) type = pr.varint();
      });
      pieces.push(piece);
      scores.push(score);
      types.push(type);
    } else if (field === 2) {
      fields(buf, s, e, (f, w, tr) => {
        if (w === 0) {
          const v = tr.varint();
          if (f === 3) m.modelType = MODEL_TYPES[v] ?? 'unigram';
          else if (f === 35) m.byteFallback = v !== 0;
          else if (f === 40) m.unkId = toInt32(v);
          else if (f === 41) m.bosId = toInt32(v);
          else if (f === 42) m.eosId = toInt32(v);
          else if (f === 43) m.padId = toInt32(v);
          else if (f === 24) m.treatWhitespaceAsSuffix = v !== 0;
        } else if (w === 2 && f === 44) {
          const [a, b] = lenDelimited(tr);
          m.unkSurface = utf8.decode(buf.subarray(a, b));
        }
      });
    } else if (field === 3) {
      fields(buf, s, e, (f, w, nr) => {
        if (w === 2) {
          const [a, b] = lenDelimited(nr);
          if (f === 1) m.normalizer.name = utf8.decode(buf.subarray(a, b));
          else if (f === 2) m.normalizer.hasCharsMap = b > a;
        } else if (w === 0) {
          const v = nr.varint() !== 0;
          if (f === 3) m.normalizer.addDummyPrefix = v;
          else if (f === 4) m.normalizer.removeExtraWhitespaces = v;
          else if (f === 5) m.normalizer.escapeWhitespaces = v;
        }
      });
    }
  });
  if (pieces.length === 0) throw new Error('sentencepiece model: no pieces (is this a ModelProto?)');
  m.scores = Float32Array.from(scores);
  m.types = Uint8Array.from(types);
  return m;
}
