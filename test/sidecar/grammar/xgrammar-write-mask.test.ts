// The loader's writeNextTokenBitmask (src/sidecar/grammar/xgrammar.ts), which the grammar workers use
// instead of GrammarMatcher.getNextTokenBitmask: the same words, written at the caller's offset, over a
// random walk under a JSON schema (test tokenizer); the words around the row are left alone. And
// MaskWriter (src/sidecar/grammar/mask-writer.ts), the workers' raw calls: the same answers as embind's.
import { describe, expect, it } from 'vitest';
import { rng } from '../../../src/cli/bench-serve/rng.js';
import { lowerSource } from '../../../src/sidecar/grammar/compile-lowering.js';
import { compileSource, grammarSource } from '../../../src/sidecar/grammar/source.js';
import { grammarVocab } from '../../../src/sidecar/grammar/vocab.js';
import { loadXgrammar } from '../../../src/sidecar/grammar/xgrammar.js';
import { MaskWriter } from '../../../src/sidecar/grammar/mask-writer.js';
import { loadTokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { TOKENIZER_DIR } from '../server/helpers.js';

describe('xgrammar loader: writeNextTokenBitmask', () => {
  it('writes the words getNextTokenBitmask returns, at the given offset, at every step of a walk', async () => {
    const bundle = await loadTokenizerBundle(TOKENIZER_DIR);
    const vocab = grammarVocab(bundle.tokenizer, bundle.tokenizer.size, bundle.eosIds);
    const xg = loadXgrammar();
    const info = await xg.TokenizerInfo.createTokenizerInfo(vocab.pieces, vocab.vocabType, false, vocab.pieces.length, vocab.stopIds);
    const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
    const schema = { type: 'object', properties: { a: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 4 } }, b: { type: 'integer' } }, required: ['a', 'b'] };
    const source = await lowerSource(xg, grammarSource({ kind: 'json_schema', schema: JSON.stringify(schema), param: 'schema' }));
    const grammar = await compileSource(compiler, source);
    const m = await xg.GrammarMatcher.createGrammarMatcher(grammar, vocab.stopIds);
    const words = Math.ceil(vocab.pieces.length / 32);
    const out = new Int32Array(words + 10);
    const next = rng(3);
    let steps = 0;
    for (; steps < 40 && !m.isTerminated(); steps++) {
      out.fill(0x5a5a5a5a);
      xg.writeNextTokenBitmask(m, out, 5, words);
      const want = (await m.getNextTokenBitmask()).subarray(0, words);
      expect(Array.from(out.subarray(5, 5 + words))).toEqual(Array.from(want));
      expect(Array.from(out.subarray(0, 5))).toEqual(Array(5).fill(0x5a5a5a5a));
      expect(Array.from(out.subarray(5 + words))).toEqual(Array(5).fill(0x5a5a5a5a));
      const allowed: number[] = [];
      for (let id = 0; id < vocab.pieces.length; id++) if ((want[id >> 5]! >>> (id & 31)) & 1) allowed.push(id);
      expect(allowed.length).toBeGreaterThan(0);
      expect(m.acceptToken(allowed[Math.floor(next() * allowed.length)]!)).toBe(true);
    }
    expect(steps).toBeGreaterThan(5);
    m.dispose();
    grammar.dispose();
  });
});

describe('MaskWriter: the raw embind calls', () => {
  it('accepts, reports termination and writes the same words as the embind wrappers, step by step to the end of a walk', async () => {
    const bundle = await loadTokenizerBundle(TOKENIZER_DIR);
    const vocab = grammarVocab(bundle.tokenizer, bundle.tokenizer.size, bundle.eosIds);
    const xg = loadXgrammar();
    const info = await xg.TokenizerInfo.createTokenizerInfo(vocab.pieces, vocab.vocabType, false, vocab.pieces.length, vocab.stopIds);
    const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
    const schema = { type: 'object', properties: { a: { type: 'array', items: { type: 'string', maxLength: 3 }, maxItems: 3 }, b: { enum: ['x', 'yz'] } }, required: ['a', 'b'], additionalProperties: false };
    const grammar = await compileSource(compiler, await lowerSource(xg, grammarSource({ kind: 'json_schema', schema: JSON.stringify(schema), param: 'schema' })));
    const writer = new MaskWriter(xg);
    const words = Math.ceil(vocab.pieces.length / 32);
    const out = new Int32Array(words + 10);
    let terminated = 0;
    let refused = 0;
    for (let walk = 0; walk < 10; walk++) {
      // `raw` goes through the writer only; `ref` through the embind wrappers: the same tokens.
      const [raw, ref] = [await xg.GrammarMatcher.createGrammarMatcher(grammar, vocab.stopIds), await xg.GrammarMatcher.createGrammarMatcher(grammar, vocab.stopIds)];
      const next = rng(walk + 7);
      for (let step = 0; step < 60; step++) {
        expect(writer.isTerminated(raw)).toBe(ref.isTerminated());
        if (ref.isTerminated()) {
          terminated++;
          break;
        }
        out.fill(0x5a5a5a5a);
        writer.write(raw, out, 5, words);
        const want = (await ref.getNextTokenBitmask()).subarray(0, words);
        expect(Array.from(out.subarray(5, 5 + words))).toEqual(Array.from(want));
        expect(Array.from(out.subarray(0, 5))).toEqual(Array(5).fill(0x5a5a5a5a));
        expect(Array.from(out.subarray(5 + words))).toEqual(Array(5).fill(0x5a5a5a5a));
        const allowed: number[] = [];
        for (let id = 0; id < vocab.pieces.length; id++) if ((want[id >> 5]! >>> (id & 31)) & 1) allowed.push(id);
        // a token the mask leaves out (not a special one, which xgrammar warns about): both refuse it, and neither moves
        const rejected = [...Array(vocab.pieces.length).keys()].find((id) => vocab.pieces[id] !== '' && !allowed.includes(id));
        if (rejected !== undefined) {
          expect([writer.accept(raw, rejected), ref.acceptToken(rejected)]).toEqual([false, false]);
          refused++;
        }
        const id = allowed[Math.floor(next() * allowed.length)]!;
        expect([writer.accept(raw, id), ref.acceptToken(id)]).toEqual([true, true]);
      }
      raw.dispose();
      ref.dispose();
    }
    expect(refused).toBeGreaterThan(0);
    expect(terminated).toBeGreaterThan(0); // walks reached a stop token: termination was compared both ways
    grammar.dispose();
  });
});
