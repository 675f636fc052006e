// Unit tests of the pieces the golden data does not reach: UTF-8 rules, the protobuf reader, the
// unigram path, added-token flags and the Metaspace / decoder variants of tokenizer.json.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AddedTokenMatcher, type AddedToken } from '../../../src/sidecar/tokenizer/added-tokens.js';
import { buildDecoder, buildPreTokenizer } from '../../../src/sidecar/tokenizer/hf-pipeline.js';
import { parseSpModel, PieceType, type SpModel } from '../../../src/sidecar/tokenizer/sp-proto.js';
import { SpUnigramEncoder } from '../../../src/sidecar/tokenizer/sp-unigram.js';
import { decodeBytesHf, decodeBytesSp, utf8CharState } from '../../../src/sidecar/tokenizer/utf8.js';
import { GOLDEN_FILES, prng } from './helpers.js';

describe('utf8', () => {
  const sp = (b: number[]): string => decodeBytesSp(Uint8Array.from(b), 0, b.length, true).text;
  it('sentencepiece rule: one U+FFFD per byte that cannot start a character (not per maximal subpart)', () => {
    expect(sp([0xe4, 0xb8, 0x41])).toBe('\uFFFD\uFFFDA');
    expect(new TextDecoder().decode(Uint8Array.of(0xe4, 0xb8, 0x41))).toBe('\uFFFDA'); // what we do NOT do
    expect(sp([0xe4, 0xb8, 0xad, 0xe4])).toBe('中\uFFFD');
    expect(sp([0xef, 0xbf, 0xbd])).toBe('\uFFFD'); // a real U+FFFD is valid
    expect(sp([0xf4, 0x90, 0x80, 0x80])).toBe('\uFFFD'.repeat(4)); // > U+10FFFF
    expect(sp([0xf8, 0x41])).toBe('\uFFFDA');
  });
  it('HF rule: the whole run, one U+FFFD per byte, if any of it is invalid', () => {
    expect(decodeBytesHf(Uint8Array.of(0xe4, 0xb8, 0xad, 0xe4))).toBe('\uFFFD'.repeat(4));
    expect(decodeBytesHf(Uint8Array.of(0xe4, 0xb8, 0xad))).toBe('中');
  });
  it('streaming: incomplete prefixes wait, impossible ones fail', () => {
    expect(utf8CharState([0xf0, 0x9f], 0, 2)).toBe(0);
    expect(utf8CharState([0xe0, 0x80], 0, 2)).toBe(-1); // overlong
    expect(utf8CharState([0xed, 0xa0], 0, 2)).toBe(-1); // surrogate
    expect(decodeBytesSp(Uint8Array.of(0x41, 0xe4, 0xb8), 0, 3, false)).toEqual({ text: 'A', consumed: 1 });
  });
  it('agrees with TextDecoder on random well-formed byte strings', () => {
    const rand = prng(7);
    for (let i = 0; i < 300; i++) {
      const s = Array.from({ length: 8 }, () => {
        const cp = Math.floor(rand() * 0x10ffff);
        return String.fromCodePoint(cp >= 0xd800 && cp < 0xe000 ? cp + 0x800 : cp); // all planes, no surrogates
      }).join('');
      const b = new TextEncoder().encode(s);
      expect(sp(Array.from(b))).toBe(s);
    }
  });
});

describe('sentencepiece protobuf', () => {
  it('reads the test model: pieces, scores, types and specs', () => {
    const m = parseSpModel(new Uint8Array(readFileSync(GOLDEN_FILES.model)));
    expect(m.pieces.length).toBe(3000);
    expect(m.modelType).toBe('bpe');
    expect(m.byteFallback).toBe(true);
    expect([m.unkId, m.bosId, m.eosId, m.padId]).toEqual([0, 1, 2, -1]);
    expect(m.normalizer).toMatchObject({ name: 'identity', addDummyPrefix: false, removeExtraWhitespaces: false, escapeWhitespaces: true });
    expect([m.pieces[0], m.types[0], m.types[1], m.types[3], m.types[14]]).toEqual(['<unk>', PieceType.UNKNOWN, PieceType.CONTROL, PieceType.USER_DEFINED, PieceType.BYTE]);
    expect(m.pieces[2320]).toBe('\u2581');
    expect(m.scores[2320]).toBe(-2050);
  });
  it('rejects garbage', () => {
    expect(() => parseSpModel(Uint8Array.of(0x0f))).toThrow();
    expect(() => parseSpModel(new Uint8Array(0))).toThrow(/no pieces/);
  });
});

describe('sentencepiece unigram (Viterbi)', () => {
  const model = (pieces: Array<[string, number, number]>): SpModel => ({
    pieces: pieces.map((p) => p[0]),
    scores: Float32Array.from(pieces.map((p) => p[1])),
    types: Uint8Array.from(pieces.map((p) => p[2])),
    modelType: 'unigram',
    byteFallback: true,
    unkId: 0,
    bosId: -1,
    eosId: -1,
    padId: -1,
    unkSurface: ' \u2047 ',
    treatWhitespaceAsSuffix: false,
    normalizer: { name: 'identity', hasCharsMap: false, addDummyPrefix: false, removeExtraWhitespaces: false, escapeWhitespaces: true },
  });
  const N = PieceType.NORMAL;
  const m = model([
    ['<unk>', 0, PieceType.UNKNOWN],
    ['a', -2, N],
    ['b', -2, N],
    ['ab', -3, N],
    ['abc', -10, N],
    ['c', -2, N],
    ['<0xE4>', 0, PieceType.BYTE],
    ['<0xB8>', 0, PieceType.BYTE],
    ['<0xAD>', 0, PieceType.BYTE],
  ]);
  it('picks the best-scoring path and byte-falls-back unknown characters', () => {
    const out: number[] = [];
    new SpUnigramEncoder(m, new Set()).encode('abc中', out);
    expect(out).toEqual([3, 5, 6, 7, 8]); // ab(-3)+c(-2) beats abc(-10) and a+b+c(-6)
  });
});

describe('added tokens', () => {
  const tok = (id: number, content: string, over: Partial<AddedToken> = {}): AddedToken => ({
    id,
    content,
    special: true,
    lstrip: false,
    rstrip: false,
    singleWord: false,
    normalized: false,
    ...over,
  });
  it('leftmost-longest, lstrip/rstrip absorb whitespace, single_word needs word borders', () => {
    const m = new AddedTokenMatcher([tok(1, '<a>'), tok(2, '<a><b>'), tok(3, '[M]', { lstrip: true, rstrip: true }), tok(4, 'cat', { singleWord: true, special: false })]);
    expect(m.split('x<a><b>y<a>', true)).toEqual([
      { text: 'x', id: -1 },
      { text: '<a><b>', id: 2 },
      { text: 'y', id: -1 },
      { text: '<a>', id: 1 },
    ]);
    expect(m.split('x  [M]  y', true)).toEqual([
      { text: 'x', id: -1 },
      { text: '[M]', id: 3 },
      { text: 'y', id: -1 },
    ]);
    expect(m.split('a cat concat cats', true)).toEqual([
      { text: 'a ', id: -1 },
      { text: 'cat', id: 4 },
      { text: ' concat cats', id: -1 },
    ]);
    expect(m.split('<a> cat', false)).toEqual([
      { text: '<a> ', id: -1 },
      { text: 'cat', id: 4 }, // non-special tokens still match in untrusted text
    ]);
  });
});

describe('tokenizer.json pipeline variants', () => {
  it('Metaspace prepend_scheme and split', () => {
    const first = buildPreTokenizer({ type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: true }).fn;
    expect(first('hi  there', true)).toEqual(['\u2581hi', '\u2581', '\u2581there']);
    expect(first('hi', false)).toEqual(['hi']);
    const never = buildPreTokenizer({ type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'never', split: false }).fn;
    expect(never(' a b', true)).toEqual(['\u2581a\u2581b']);
    expect(() => buildPreTokenizer({ type: 'ByteLevel' })).toThrow(/unsupported pre_tokenizer ByteLevel/);
  });
  it('Llama-style decoder with Strip after Fuse', () => {
    const d = buildDecoder({
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    });
    expect(d.decode(['\u2581Hello', '<0xE4>', '<0xB8>', '<0xAD>', '\u2581x'])).toBe('Hello中 x');
    expect(d.perToken('\u2581Hello')).toBe(' Hello');
    expect(d.byteFallback).toBe(true);
  });
});
