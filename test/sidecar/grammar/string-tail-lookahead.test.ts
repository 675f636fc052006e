// The tails of length-bounded strings (src/sidecar/grammar/string-tail-lookahead.ts): the closing quote
// moved into the chain and the lookaheads (text), and that they change no mask: the same random walks
// under the grammar with and without the step, every step's mask compared over the test tokenizer's ids
// (xgrammar's own matcher).
import type * as Xgrammar from '@mlc-ai/web-xgrammar';
import { describe, expect, it } from 'vitest';
import { rng } from '../../../src/cli/bench-serve/rng.js';
import { lowerSource } from '../../../src/sidecar/grammar/compile-lowering.js';
import { compileSource, grammarSource, SEPARATORS, strict, type GrammarSource } from '../../../src/sidecar/grammar/source.js';
import { literalTries } from '../../../src/sidecar/grammar/literal-tries.js';
import { randomSchemas } from '../../doubles/random-schemas.js';
import { stringTailLookaheads } from '../../../src/sidecar/grammar/string-tail-lookahead.js';
import { grammarVocab } from '../../../src/sidecar/grammar/vocab.js';
import { loadXgrammar } from '../../../src/sidecar/grammar/xgrammar.js';
import { loadTokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { TOKENIZER_DIR } from '../server/helpers.js';

const C = '[^\\"\\\\\\0-\\x1f]'; // the string-character class as xgrammar prints it
const Q = '("\\"")'; // a chain rule's closing-quote alternative
const END = '"\\""'; // the quote literal

type Matcher = Xgrammar.GrammarMatcher;

/** The test tokenizer's vocabulary as xgrammar takes it (`known` pieces), and a compiler over it. */
async function testCompiler() {
  const bundle = await loadTokenizerBundle(TOKENIZER_DIR);
  const vocab = grammarVocab(bundle.tokenizer, bundle.tokenizer.size, bundle.eosIds);
  const known = vocab.pieces.length;
  const xg = loadXgrammar();
  const info = await xg.TokenizerInfo.createTokenizerInfo(vocab.pieces, vocab.vocabType, false, known, vocab.stopIds);
  const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
  return { vocab, known, xg, compiler };
}

/**
 * Walks two matchers in lockstep, up to `max` tokens or until m0 terminates: each step draws a token
 * uniformly (`next`) from m0's mask over the first `known` ids, records under `tag` every id whose bit
 * differs between the two masks, and has both accept the token. Returns the steps taken.
 */
async function walkInLockstep(m0: Matcher, m1: Matcher, known: number, max: number, next: () => number, tag: string, differing: string[]): Promise<number> {
  let s = 0;
  for (; s < max && !m0.isTerminated(); s++) {
    const [a, b] = [await m0.getNextTokenBitmask(), await m1.getNextTokenBitmask()];
    const allowed: number[] = [];
    for (let id = 0; id < known; id++) {
      const x = (a[id >> 5]! >>> (id & 31)) & 1;
      if (x !== ((b[id >> 5]! >>> (id & 31)) & 1)) differing.push(`${tag} step ${s} id ${id}`);
      if (x) allowed.push(id);
    }
    const id = allowed[Math.floor(next() * allowed.length)]!;
    expect(m0.acceptToken(id)).toBe(true);
    expect(m1.acceptToken(id)).toBe(true);
  }
  return s;
}

describe('stringTailLookaheads (text)', () => {
  it('ends a chain whose head is followed by a closing quote in the quote, through every tail, with what follows as a lookahead', () => {
    const ebnf = [`s ::= (("\\"" ${C} s_1 "\\""))`, `s_1 ::= ("" | (${C} s_2))`, `s_2 ::= ("" | (${C}))`, 'root ::= (("[" s "]"))'].join('\n');
    const LA = ' (=([\\]]))';
    expect(stringTailLookaheads(ebnf).split('\n')).toEqual([`s ::= (("\\"" ${C} s_1))${LA}`, `s_1 ::= (${Q} | (${C} s_2))${LA}`, `s_2 ::= (${Q} | (${C} ${END}))${LA}`, 'root ::= (("[" s "]"))']);
  });

  it('finds what follows through the first characters of a following rule and through tails', () => {
    // s is followed by r (which starts with ",") in root, and ends r, which "]" follows.
    const ebnf = [`s ::= (("\\"" s_1 "\\""))`, `s_1 ::= ("" | (${C}))`, 'r ::= (("," s))', 'root ::= (("[" s r "]"))'].join('\n');
    const out = stringTailLookaheads(ebnf).split('\n');
    expect(out.slice(0, 2)).toEqual([`s ::= (("\\"" s_1)) (=([,\\]]))`, `s_1 ::= (${Q} | (${C} ${END})) (=([,\\]]))`]);
    // a rule's own lookahead says what follows it
    const la = [`s ::= (("\\"" s_1 "\\""))`, `s_1 ::= ("" | (${C}))`, 'root ::= ((t))', 't ::= ((s)) (=(":" "x"))'].join('\n');
    expect(stringTailLookaheads(la).split('\n')[1]).toBe(`s_1 ::= (${Q} | (${C} ${END})) (=([:]))`);
  });

  it('moves the quote but asserts nothing where what follows is not plain (a class, the end of the root, a repetition)', () => {
    for (const root of ['root ::= ((s [a-z]))', 'root ::= ((s))', 'root ::= (((s)* "x"))']) {
      const ebnf = [`s ::= (("\\"" s_1 "\\""))`, `s_1 ::= ("" | (${C} s_1))`, root].join('\n');
      expect(stringTailLookaheads(ebnf).split('\n').slice(0, 2)).toEqual([`s ::= (("\\"" s_1))`, `s_1 ::= (${Q} | (${C} s_1))`]);
    }
  });

  it('leaves a chain alone where anything but a quote may follow it (a reference elsewhere, a repetition, the root)', () => {
    const elsewhere = [`s ::= (("\\"" s_1 "\\""))`, `t ::= ((s_1 "x"))`, `s_1 ::= ("" | (${C} s_2))`, `s_2 ::= ("" | (${C}))`, 'root ::= ((s t))'].join('\n');
    // s_1 is referenced before "x": neither it nor its tail s_2 (a tail of s_1 only) may take the quote.
    expect(stringTailLookaheads(elsewhere)).toBe(elsewhere);
    const repeated = [`s ::= (("\\"" (s_1)* "\\""))`, `s_1 ::= ("" | (${C}))`, 'root ::= ((s))'].join('\n');
    expect(stringTailLookaheads(repeated)).toBe(repeated);
    const root = `root ::= ("" | (${C} root))`;
    expect(stringTailLookaheads(root)).toBe(root);
    const unused = `s_1 ::= ("" | (${C}))\nroot ::= (("a"))`;
    expect(stringTailLookaheads(unused)).toBe(unused);
    // named in a lookahead, whose meaning the quote would change
    const asserted = [`s ::= (("\\"" s_1 "\\""))`, `s_1 ::= ("" | (${C}))`, 'root ::= ((s "x")) (=(s_1 "y"))'].join('\n');
    expect(stringTailLookaheads(asserted)).toBe(asserted);
  });

  it('keeps a rule that has a lookahead already, and classes that may match a quote', () => {
    const ebnf = [`s ::= (("\\"" s_1 s_2 "\\""))`, `s_1 ::= ("" | ([a-z])) (=("x"))`, `s_2 ::= ("" | ([^a]))`, 'root ::= ((s))'].join('\n');
    expect(stringTailLookaheads(ebnf)).toBe(ebnf);
    for (const cls of ['[ -~]', '[a"]', '[\\x22]', '[!-#]'])
      for (const ebnf of [[`s ::= (("\\"" s_1 "\\""))`, `s_1 ::= ("" | (${cls}))`, 'root ::= ((s))'].join('\n')]) expect(stringTailLookaheads(ebnf)).toBe(ebnf);
  });

  it('takes a positive class without the quote (a pattern such as [a-z]{2,8})', () => {
    for (const cls of ['[a-z]', '[a-f0-9]', '[#-~]', '[\\-_]']) {
      const ebnf = [`s ::= (("\\"" ${cls} s_1 "\\""))`, `s_1 ::= ("" | (${cls}))`, 'root ::= (("[" s "]"))'].join('\n');
      expect(stringTailLookaheads(ebnf).split('\n').slice(0, 2)).toEqual([`s ::= (("\\"" ${cls} s_1)) (=([\\]]))`, `s_1 ::= (${Q} | (${cls} ${END})) (=([\\]]))`]);
    }
  });

  it('is applied by the lowering of a JSON schema with length-bounded strings', async () => {
    const xg = loadXgrammar();
    const s = await lowerSource(xg, grammarSource({ kind: 'json_schema', schema: JSON.stringify({ type: 'array', items: { type: 'string', minLength: 1, maxLength: 4 } }), param: 'schema' }));
    const tails = s.text.split('\n').filter((l) => l.includes(` ::= (${Q} | (${C}`));
    expect(tails.length).toBe(3);
  });
});

describe('same masks with and without the rewrite (xgrammar, test tokenizer)', () => {
  const schemas = [
    { type: 'object', properties: { a: { type: 'string', minLength: 2, maxLength: 5 }, b: { type: 'array', items: { type: 'string', maxLength: 3 }, maxItems: 6 }, c: { type: 'string', minLength: 1 } }, required: ['a', 'b', 'c'], additionalProperties: false },
    { type: 'array', items: { type: 'string', minLength: 0, maxLength: 2 }, minItems: 3, maxItems: 8 },
    { type: 'string', minLength: 1, maxLength: 4 },
    // the bench schema's shape: a fixed count of bounded strings (xgrammar prints a repetition and a long lookahead)
    { type: 'object', properties: { items: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 3 }, minItems: 12, maxItems: 12 } }, required: ['items'], additionalProperties: false },
    // patterns: positive classes
    { type: 'object', properties: { a: { type: 'string', pattern: '[a-z]{2,8}' }, b: { type: 'array', items: { type: 'string', pattern: '[a-f0-9]{1,4}' } } }, required: ['a', 'b'], additionalProperties: false },
  ];

  it.each(schemas.map((s, i) => [i, s] as const))('schema %i: every step of 20 random walks', async (_i, schema) => {
    const { vocab, known, xg, compiler } = await testCompiler();
    const source = grammarSource({ kind: 'json_schema', schema: JSON.stringify(schema), param: 'schema' });
    const withLa = await lowerSource(xg, source);
    // the same lowering without this step: xgrammar's printed grammar, literal rules as tries
    const printed = await xg.Grammar.fromJSONSchema(source.text, false, -1, SEPARATORS, strict(source));
    const without: GrammarSource = { kind: 'ebnf', text: literalTries(printed.toString()) };
    printed.dispose();
    expect(without.text).not.toBe(withLa.text);
    const [g0, g1] = [await compileSource(compiler, without), await compileSource(compiler, withLa)];
    let steps = 0;
    const differing: string[] = [];
    let closed = 0; // walks that completed their JSON (strings reached their bounds and closed on the way)
    for (let walk = 0; walk < 20; walk++) {
      const next = rng(walk + 1);
      const [m0, m1] = [await xg.GrammarMatcher.createGrammarMatcher(g0, vocab.stopIds), await xg.GrammarMatcher.createGrammarMatcher(g1, vocab.stopIds)];
      steps += await walkInLockstep(m0, m1, known, 80, next, `walk ${walk}`, differing);
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

describe('same masks with and without the rewrite: the 200 seeded random schemas (test tokenizer)', () => {
  it('one walk of up to 40 steps per schema, every mask compared', async () => {
    const { vocab, known, xg, compiler } = await testCompiler();
    const differing: string[] = [];
    let rewritten = 0;
    let steps = 0;
    for (const [i, schema] of randomSchemas(1, 200).entries()) {
      const source = grammarSource({ kind: 'json_schema', schema: JSON.stringify(schema), param: 'schema' });
      const lowered = await lowerSource(xg, source);
      const printed = await xg.Grammar.fromJSONSchema(source.text, false, -1, SEPARATORS, strict(source));
      const without: GrammarSource = { kind: 'ebnf', text: literalTries(printed.toString()) };
      printed.dispose();
      if (without.text === lowered.text) continue;
      rewritten++;
      const [g0, g1] = [await compileSource(compiler, without), await compileSource(compiler, lowered)];
      const [m0, m1] = [await xg.GrammarMatcher.createGrammarMatcher(g0, vocab.stopIds), await xg.GrammarMatcher.createGrammarMatcher(g1, vocab.stopIds)];
      const next = rng(i + 1);
      steps += await walkInLockstep(m0, m1, known, 40, next, `schema ${i}`, differing);
      for (const x of [m0, m1, g0, g1]) x.dispose();
    }
    expect(differing).toEqual([]);
    expect(rewritten).toBeGreaterThan(50); // bounded strings and patterns are common in them
    expect(steps).toBeGreaterThan(1000);
  }, 300_000);
});
