// The lookaheads on the tails of length-bounded strings (src/sidecar/grammar/string-tail-lookahead.ts):
// where they go (text), and that they change no mask: the same random walks under the grammar with and
// without them, every step's mask compared over the test tokenizer's ids (xgrammar's own matcher).
import { describe, expect, it } from 'vitest';
import { rng } from '../../../src/cli/bench-serve/rng.js';
import { lowerSource } from '../../../src/sidecar/grammar/compile-lowering.js';
import { compileSource, grammarSource, type GrammarSource } from '../../../src/sidecar/grammar/source.js';
import { stringTailLookaheads } from '../../../src/sidecar/grammar/string-tail-lookahead.js';
import { grammarVocab } from '../../../src/sidecar/grammar/vocab.js';
import { loadXgrammar } from '../../../src/sidecar/grammar/xgrammar.js';
import { loadTokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { TOKENIZER_DIR } from '../server/helpers.js';

const C = '[^\\"\\\\\\0-\\x1f]'; // the string-character class as xgrammar prints it
const LA = ' (=("\\""))';

describe('stringTailLookaheads (text)', () => {
  it('marks a chain whose head is followed by a closing quote, through every tail', () => {
    const ebnf = [`s ::= (("\\"" ${C} s_1 "\\""))`, `s_1 ::= ("" | (${C} s_2))`, `s_2 ::= ("" | (${C}))`, 'root ::= (("[" s "]"))'].join('\n');
    expect(stringTailLookaheads(ebnf).split('\n')).toEqual([`s ::= (("\\"" ${C} s_1 "\\""))`, `s_1 ::= ("" | (${C} s_2))${LA}`, `s_2 ::= ("" | (${C}))${LA}`, 'root ::= (("[" s "]"))']);
  });

  it('marks a self-recursive tail (minLength without maxLength) through its outer reference', () => {
    const ebnf = [`s ::= (("\\"" ${C} s_1 "\\""))`, `s_1 ::= ("" | (${C} s_1))`, 'root ::= ((s))'].join('\n');
    expect(stringTailLookaheads(ebnf).split('\n')[1]).toBe(`s_1 ::= ("" | (${C} s_1))${LA}`);
  });

  it('leaves a chain alone where anything but a quote may follow it (a reference elsewhere, a repetition, the root)', () => {
    const elsewhere = [`s ::= (("\\"" s_1 "\\""))`, `t ::= ((s_1 "x"))`, `s_1 ::= ("" | (${C} s_2))`, `s_2 ::= ("" | (${C}))`, 'root ::= ((s t))'].join('\n');
    // s_1 is referenced before "x": neither it nor its tail s_2 (a tail of s_1 only) may assert a quote.
    expect(stringTailLookaheads(elsewhere)).toBe(elsewhere);
    const repeated = [`s ::= (("\\"" (s_1)* "\\""))`, `s_1 ::= ("" | (${C}))`, 'root ::= ((s))'].join('\n');
    expect(stringTailLookaheads(repeated)).toBe(repeated);
    const root = `root ::= ("" | (${C} root))`;
    expect(stringTailLookaheads(root)).toBe(root);
    const unused = `s_1 ::= ("" | (${C}))\nroot ::= (("a"))`;
    expect(stringTailLookaheads(unused)).toBe(unused);
  });

  it('keeps a rule that has a lookahead already, and classes that may match a quote', () => {
    const ebnf = [`s ::= (("\\"" s_1 s_2 "\\""))`, `s_1 ::= ("" | ([a-z])) (=("x"))`, `s_2 ::= ("" | ([^a]))`, 'root ::= ((s))'].join('\n');
    expect(stringTailLookaheads(ebnf)).toBe(ebnf);
  });

  it('is applied by the lowering of a JSON schema with length-bounded strings', async () => {
    const xg = loadXgrammar();
    const s = await lowerSource(xg, grammarSource({ kind: 'json_schema', schema: JSON.stringify({ type: 'array', items: { type: 'string', minLength: 1, maxLength: 4 } }), param: 'schema' }));
    const tails = s.text.split('\n').filter((l) => l.endsWith(LA));
    expect(tails.length).toBe(3);
  });
});

describe('same masks with and without the lookaheads (xgrammar, test tokenizer)', () => {
  const schemas = [
    { type: 'object', properties: { a: { type: 'string', minLength: 2, maxLength: 5 }, b: { type: 'array', items: { type: 'string', maxLength: 3 }, maxItems: 6 }, c: { type: 'string', minLength: 1 } }, required: ['a', 'b', 'c'], additionalProperties: false },
    { type: 'array', items: { type: 'string', minLength: 0, maxLength: 2 }, minItems: 3, maxItems: 8 },
    { type: 'string', minLength: 1, maxLength: 4 },
  ];

  it.each(schemas.map((s, i) => [i, s] as const))('schema %i: every step of 20 random walks', async (_i, schema) => {
    const bundle = await loadTokenizerBundle(TOKENIZER_DIR);
    const vocab = grammarVocab(bundle.tokenizer, bundle.tokenizer.size, bundle.eosIds);
    const known = vocab.pieces.length;
    const xg = loadXgrammar();
    const info = await xg.TokenizerInfo.createTokenizerInfo(vocab.pieces, vocab.vocabType, false, known, vocab.stopIds);
    const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
    const withLa = await lowerSource(xg, grammarSource({ kind: 'json_schema', schema: JSON.stringify(schema), param: 'schema' }));
    const without: GrammarSource = { kind: 'ebnf', text: withLa.text.replaceAll(LA, '') };
    expect(without.text).not.toBe(withLa.text);
    const [g0, g1] = [await compileSource(compiler, without), await compileSource(compiler, withLa)];
    let steps = 0;
    const differing: string[] = [];
    let closed = 0; // walks that completed their JSON (strings reached their bounds and closed on the way)
    for (let walk = 0; walk < 20; walk++) {
      const next = rng(walk + 1);
      const [m0, m1] = [await xg.GrammarMatcher.createGrammarMatcher(g0, vocab.stopIds), await xg.GrammarMatcher.createGrammarMatcher(g1, vocab.stopIds)];
      for (let s = 0; s < 80 && !m0.isTerminated(); s++, steps++) {
        const [a, b] = [await m0.getNextTokenBitmask(), await m1.getNextTokenBitmask()];
        const allowed: number[] = [];
        for (let id = 0; id < known; id++) {
          const x = (a[id >> 5]! >>> (id & 31)) & 1;
          if (x !== ((b[id >> 5]! >>> (id & 31)) & 1)) differing.push(`walk ${walk} step ${s} id ${id}`);
          if (x) allowed.push(id);
        }
        const id = allowed[Math.floor(next() * allowed.length)]!;
        expect(m0.acceptToken(id)).toBe(true);
        expect(m1.acceptToken(id)).toBe(true);
      }
      if (m0.isTerminated()) closed++;
      m0.dispose();
      m1.dispose();
    }
    g0.dispose();
    g1.dispose();
    expect(differing).toEqual([]);
    expect(steps).toBeGreaterThanOrEqual(60); // 20 walks of 3+ tokens
    expect(closed).toBeGreaterThan(0);
  }, 120_000);
});
