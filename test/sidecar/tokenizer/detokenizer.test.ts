// The streaming detokenizer on hand-picked cases: Chinese text whose characters are byte-fallback pieces,
// stop strings across tokens, invalid bytes at the reference's positions, unknown ids, token reports.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { GOLDEN_FILES, golden, makeCheckpoint, removeCheckpoints } from './helpers.js';

afterAll(removeCheckpoints);

const bundles: Record<'sentencepiece' | 'hf-json', TokenizerBundle> = {} as Record<'sentencepiece' | 'hf-json', TokenizerBundle>;
const POEM = '金风送爽叶纷飞，玉露凝霜雁南归。'; // golden case 16: 金 风 送 玉 凝 霜 are byte-fallback runs

beforeAll(async () => {
  const dir = await makeCheckpoint({ 'tokenizer.model': GOLDEN_FILES.model, 'tokenizer.json': GOLDEN_FILES.json, 'tokenizer_config.json': GOLDEN_FILES.config });
  bundles.sentencepiece = await loadTokenizerBundle(dir, { prefer: 'sentencepiece' });
  bundles['hf-json'] = await loadTokenizerBundle(dir, { prefer: 'json' });
});

/** Pushes ids one at a time; returns every push's text, the concatenation (with flush) and the stop. */
function stream(b: TokenizerBundle, ids: number[], stop: string[] = [], skipSpecialTokens = false) {
  const d = b.newDetokenizer({ stop, skipSpecialTokens });
  const emitted: string[] = [];
  let stopped: string | null = null;
  for (const id of ids) {
    const r = d.push([id]);
    emitted.push(r.text);
    if (r.stopped) stopped = r.stopped.stop;
  }
  const tail = d.flush();
  return { emitted, text: emitted.join('') + tail, stopped, tail };
}

describe.each(['sentencepiece', 'hf-json'] as const)('%s', (kind) => {
  const b = (): TokenizerBundle => bundles[kind];
  const byteId = (x: number): number => b().tokenizer.tokenToId(`<0x${x.toString(16).toUpperCase().padStart(2, '0')}>`)!;

  it('the poem really is byte-fallback heavy (the test means something)', () => {
    const ids = b().tokenizer.encode(POEM);
    expect(ids).toEqual(golden.cases[16]!.ids);
    expect(ids.filter((id) => typeof b().tokenizer.streamPiece(id) === 'number').length).toBe(18);
  });

  it('holds a character back until its last byte arrives, token by token', () => {
    const ids = b().tokenizer.encode('金风');
    expect(ids.length).toBe(6);
    const { emitted, text } = stream(b(), ids);
    expect(emitted).toEqual(['', '', '金', '', '', '风']);
    expect(text).toBe('金风');
  });

  it('a stop string spanning several byte-fallback tokens is never sent, not even in part', () => {
    const ids = b().tokenizer.encode(POEM);
    const r = stream(b(), ids, ['风送']);
    expect(r.stopped).toBe('风送');
    expect(r.text).toBe('金');
    expect(r.emitted.join('')).toBe('金');
    expect(r.tail).toBe('');
  });

  it('a stop string over normal pieces and punctuation, and one that starts like the text but diverges', () => {
    const ids = b().tokenizer.encode(POEM);
    const r = stream(b(), ids, ['风雨', '，玉露']);
    expect(r.stopped).toBe('，玉露');
    expect(r.text).toBe('金风送爽叶纷飞');
    // '风' was held while it could start '风雨', then released with '送'
    const i = r.emitted.findIndex((t) => t.includes('风'));
    expect(r.emitted[i]).toBe('风送');
  });

  it('min_tokens: a stop string in the text of the first min_tokens ids is ordinary text; later ones stop', () => {
    const ids = b().tokenizer.encode(POEM);
    // The ids up to the end of '叶' (within min_tokens) are released as they are, '叶' included.
    const upTo = (ch: string) => ids.findIndex((_, k) => b().tokenizer.decode(ids.slice(0, k + 1)).includes(ch)) + 1;
    const within = upTo('叶');
    const d = b().newDetokenizer({ stop: ['叶', '露'], minTokens: within });
    const r = d.push(ids);
    expect(r.stopped).toEqual({ stop: '露' });
    expect(r.text).toBe('金风送爽叶纷飞，玉');
    // One id fewer: '叶' completes past min_tokens and stops as usual.
    const early = b().newDetokenizer({ stop: ['叶', '露'], minTokens: within - 1 }).push(ids);
    expect(early).toMatchObject({ text: '金风送爽', stopped: { stop: '叶' } });
    // A stream that ends within min_tokens flushes its text without matching.
    const short = b().newDetokenizer({ stop: ['爽'], minTokens: ids.length });
    expect(short.push(ids.slice(0, upTo('爽'))).text + short.flush()).toBe('金风送爽');
    // The per-token path (pushToken, the sidecar's) gives the same text and the same stop.
    const t = b().newDetokenizer({ stop: ['叶', '露'], minTokens: within });
    let text = '';
    for (const id of ids) text += t.pushToken(id);
    expect({ text, stop: t.stop }).toEqual({ text: '金风送爽叶纷飞，玉', stop: '露' });
  });

  it('the earliest stop wins; nothing after it is ever released', () => {
    const ids = b().tokenizer.encode(POEM);
    const d = b().newDetokenizer({ stop: ['归', '叶'] });
    const r = d.push(ids);
    expect(r).toMatchObject({ text: '金风送爽', stopped: { stop: '叶' } });
    expect(d.push(ids).text).toBe('');
    expect(d.flush()).toBe('');
    expect(d.stop).toBe('叶');
  });

  it('an unfinished stop prefix is released at flush (the stop did not happen)', () => {
    const ids = b().tokenizer.encode('你好，世');
    const r = stream(b(), ids, ['世界']);
    expect(r.stopped).toBeNull();
    expect(r.emitted.join('')).toBe('你好，');
    expect(r.tail).toBe('世');
  });

  it('ids beyond the tokenizer decode to nothing (0.3B: 103,424 rows, 101,304 tokens)', () => {
    const a = b().tokenizer.tokenToId('a')!;
    const ids = [a, 3000, 50_000, 101_304, 103_423, a];
    expect(b().tokenizer.decode(ids)).toBe('aa');
    expect(b().tokenizer.decode([-1, 1e9])).toBe('');
    expect(stream(b(), ids).text).toBe('aa');
    expect(b().tokenizer.tokenBytes(103_423)).toEqual(new Uint8Array(0));
    expect(b().tokenizer.idToToken(103_423)).toBeNull();
    // an unknown id inside a byte run does not break the run
    expect(stream(b(), [byteId(0xe4), 50_000, byteId(0xb8), byteId(0xad)]).text).toBe('中');
  });

  it('skipSpecialTokens drops markers in the stream and in decode', () => {
    const ids = b().tokenizer.encode('<|begin_of_sentence|>hi<|end_of_sentence|>');
    expect(stream(b(), ids, [], true).text).toBe('hi');
    expect(b().tokenizer.decode(ids, { skipSpecialTokens: true })).toBe('hi');
    expect(stream(b(), ids, [], false).text).toBe('<|begin_of_sentence|>hi<|end_of_sentence|>');
    // a skipped marker inside a byte run does not break it (the references filter before decoding)
    expect(stream(b(), [byteId(0xe4), 4, byteId(0xb8), byteId(0xad)], [], true).text).toBe('中');
  });

  it('reports each token for logprobs: text and raw bytes', () => {
    const d = b().newDetokenizer();
    const ids = b().tokenizer.encode('金 a');
    const r = d.push(ids);
    expect(r.tokens.map((t) => t.id)).toEqual(ids);
    expect(r.tokens.map((t) => Array.from(t.bytes))).toEqual([[0xe9], [0x87], [0x91], [0x20, 0x61]]); // '▁a' is one piece
    expect(r.tokens.map((t) => t.text)).toEqual(['bytes:\\xe9', 'bytes:\\x87', 'bytes:\\x91', ' a']);
    expect(b().tokenizer.tokenText(b().tokenizer.tokenToId('\u2581text')!)).toBe(' text');
  });

  describe('invalid bytes → U+FFFD where the reference decoder puts them', () => {
    // Python's b'\xe4\xb8A'.decode('utf-8', 'replace') == '\ufffdA' (one per maximal subpart, like
    // TextDecoder). Neither reference does that: sentencepiece replaces per byte, HF per byte of the run.
    it('E4 B8 then a normal piece: two U+FFFD (one per byte), in decode and in the stream', () => {
      const a = b().tokenizer.tokenToId('a')!;
      const ids = [byteId(0xe4), byteId(0xb8), a];
      expect(b().tokenizer.decode(ids)).toBe('\uFFFD\uFFFDa');
      const r = stream(b(), ids);
      expect(r.emitted).toEqual(['', '', '\uFFFD\uFFFDa']);
    });

    it('a byte that can no longer start a character is replaced at once; the rest of the run continues', () => {
      const ids = [byteId(0xe4), byteId(0x41), byteId(0xe4), byteId(0xb8), byteId(0xad)];
      const r = stream(b(), ids);
      expect(r.emitted).toEqual(['', '\uFFFDA', '', '', '中']);
      expect(b().tokenizer.decode(ids)).toBe(kind === 'sentencepiece' ? '\uFFFDA中' : '\uFFFD'.repeat(5));
    });

    it('valid character then a truncated one: sentencepiece keeps the valid one, HF replaces the whole run', () => {
      const a = b().tokenizer.tokenToId('a')!;
      const ids = [byteId(0xe4), byteId(0xb8), byteId(0xad), byteId(0xe4), a];
      expect(b().tokenizer.decode(ids)).toBe(kind === 'sentencepiece' ? '中\uFFFDa' : '\uFFFD\uFFFD\uFFFD\uFFFDa');
      expect(stream(b(), ids).text).toBe('中\uFFFDa'); // streaming: see detokenizer.ts "Known difference"
    });

    it('surrogate code points and overlongs are invalid per byte; a truncated emoji at the end is flushed as U+FFFD per byte', () => {
      const surrogate = [0xed, 0xa0, 0x80].map(byteId);
      expect(b().tokenizer.decode(surrogate)).toBe('\uFFFD\uFFFD\uFFFD');
      expect(stream(b(), surrogate).text).toBe('\uFFFD\uFFFD\uFFFD');
      const overlong = [0xc0, 0xaf].map(byteId);
      expect(b().tokenizer.decode(overlong)).toBe('\uFFFD\uFFFD');
      const cut = [0xf0, 0x9f, 0x98].map(byteId);
      expect(b().tokenizer.decode(cut)).toBe('\uFFFD\uFFFD\uFFFD');
      const r = stream(b(), cut);
      expect(r.emitted).toEqual(['', '', '']);
      expect(r.tail).toBe('\uFFFD\uFFFD\uFFFD');
    });
  });
});
