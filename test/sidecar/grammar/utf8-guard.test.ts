// The UTF-8 guard over xgrammar's masks (src/sidecar/grammar/utf8-guard.ts), on a toy byte-fallback
// vocabulary: id 0 is the stop token, ids 1..256 the byte pieces <0x00>..<0xFF>, then whole pieces.
// First the matcher's fault the guard exists for, then random walks through guarded masks: every
// finished string is well-formed UTF-8 that parses as JSON and keeps the schema's maxLength.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompiledGrammar, GrammarCompiler } from '@mlc-ai/web-xgrammar';
import { rng } from '../../../src/cli/bench-serve/rng.js';
import { Utf8Guard } from '../../../src/sidecar/grammar/utf8-guard.js';
import { loadXgrammar } from '../../../src/sidecar/grammar/xgrammar.js';

const xg = loadXgrammar();
const WHOLE = ['"', 'a', 'é', '北', '😀', '\\', 'n'];
const pieces = ['', ...Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`), ...WHOLE];
const BYTE = (b: number) => 1 + b;
const QUOTE = pieces.indexOf('"');
const bytesOf = (id: number): number[] => (id >= 1 && id <= 256 ? [id - 1] : [...new TextEncoder().encode(pieces[id]!)]);
const allowed = (mask: Int32Array, id: number) => ((mask[id >> 5]! >>> (id & 31)) & 1) === 1;
const guard = new Utf8Guard({ pieces, vocabType: 'byte_fallback' });

let compiler: GrammarCompiler;
let bounded: CompiledGrammar;
beforeAll(async () => {
  const info = await xg.TokenizerInfo.createTokenizerInfo(pieces, 'byte_fallback', false, pieces.length, [0]);
  compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
  bounded = await compiler.compileJSONSchema(JSON.stringify({ type: 'string', pattern: '[^"\\\\\\x00-\\x1f]{0,3}' }), false, -1, [',', ':'], true);
});
afterAll(() => {
  bounded?.dispose();
  compiler?.dispose();
});

describe('xgrammar 0.1.27 alone', () => {
  it.each([
    ['an overlong NUL', [0xc0, 0x80]],
    ['a surrogate', [0xed, 0xa0, 0x80]],
    ['an overlong 3-byte form', [0xe0, 0x80, 0x80]],
    ['a code point past U+10FFFF', [0xf5, 0x80, 0x80, 0x80]],
  ])('accepts %s inside a JSON string (what the guard is for)', async (_name, bytes) => {
    const m = await xg.GrammarMatcher.createGrammarMatcher(bounded, [0]);
    expect(m.acceptToken(QUOTE)).toBe(true);
    for (const b of bytes) expect(m.acceptToken(BYTE(b))).toBe(true);
    expect(m.acceptToken(QUOTE)).toBe(true);
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes))).toThrow();
    m.dispose();
  });
});

describe('Utf8Guard', () => {
  const full = () => new Int32Array(Math.ceil(pieces.length / 32)).fill(-1);
  const highAllowed = (mask: Int32Array) => Array.from({ length: 128 }, (_, i) => 0x80 + i).filter((b) => allowed(mask, BYTE(b)));

  it('between characters: only well-formed lead bytes; whole pieces and ASCII bytes untouched', () => {
    const s = Utf8Guard.start();
    const mask = full();
    guard.narrow(s, mask, 0);
    const lead = highAllowed(mask);
    expect(lead[0]).toBe(0xc2);
    expect(lead[lead.length - 1]).toBe(0xf4);
    expect(lead).toHaveLength(0xf4 - 0xc2 + 1);
    for (let id = 0; id <= BYTE(0x7f); id++) expect(allowed(mask, id)).toBe(true);
    for (const w of WHOLE) expect(allowed(mask, pieces.indexOf(w))).toBe(true);
  });

  it.each([
    [[0xc3], 0x80, 0xbf],
    [[0xe0], 0xa0, 0xbf],
    [[0xed], 0x80, 0x9f],
    [[0xf0], 0x90, 0xbf],
    [[0xf4], 0x80, 0x8f],
    [[0xf0, 0x9f], 0x80, 0xbf],
    [[0xe4, 0xb8], 0x80, 0xbf],
  ])('after %o: the next byte in [%i, %i]', (bytes, lo, hi) => {
    const s = Utf8Guard.start();
    for (const b of bytes) guard.accept(s, BYTE(b));
    const mask = full();
    guard.narrow(s, mask, 0);
    const next = highAllowed(mask);
    expect([next[0], next[next.length - 1], next.length]).toEqual([lo, hi, hi - lo + 1]);
  });

  it('a finished character, or a whole piece, starts over', () => {
    const s = Utf8Guard.start();
    for (const b of [0xe4, 0xb8, 0xad]) guard.accept(s, BYTE(b));
    expect(s.need).toBe(0);
    guard.accept(s, BYTE(0xc3));
    guard.accept(s, pieces.indexOf('a'));
    expect(s.need).toBe(0);
  });

  it('a vocabulary without byte pieces (or byte-level) is left alone', () => {
    const g = new Utf8Guard({ pieces, vocabType: 'byte_level' });
    const mask = full();
    g.narrow(Utf8Guard.start(), mask, 0);
    expect(mask.every((w) => w === -1)).toBe(true);
  });
});

describe('xgrammar with the guard: random walks', () => {
  it('300 walks under {pattern: [^"\\\\\\x00-\\x1f]{0,3}}, bytes favoured: every string is valid UTF-8, JSON, at most 3 characters', async () => {
    const next = rng(11);
    const failures: string[] = [];
    for (let walk = 0; walk < 300; walk++) {
      const m = await xg.GrammarMatcher.createGrammarMatcher(bounded, [0]);
      const s = Utf8Guard.start();
      const out: number[] = [];
      for (let step = 0; step < 40 && !m.isTerminated(); step++) {
        const mask = await m.getNextTokenBitmask();
        guard.narrow(s, mask, 0);
        const ids = Array.from({ length: pieces.length }, (_, id) => id).filter((id) => allowed(mask, id));
        // High bytes first most of the time: random logits over a real vocabulary reach them just as often.
        const high = ids.filter((id) => id > BYTE(0x7f) && id <= BYTE(0xff));
        const pool = high.length > 0 && next() < 0.8 ? high : ids;
        const id = pool[Math.floor(next() * pool.length)]!;
        expect(m.acceptToken(id)).toBe(true);
        guard.accept(s, id);
        if (id !== 0) out.push(...bytesOf(id));
      }
      m.dispose();
      if (out.length === 0 || out[out.length - 1] !== 0x22) continue; // cut by the step limit
      try {
        const text = new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(out));
        const value = JSON.parse(text) as string;
        if ([...value].length > 3) failures.push(`too long: ${text}`);
      } catch (e) {
        failures.push(`${(e as Error).message}: ${out.map((b) => b.toString(16)).join(' ')}`);
      }
    }
    expect(failures).toEqual([]);
  });
});
