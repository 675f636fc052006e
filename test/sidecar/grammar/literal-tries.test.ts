// Literal alternations as tries (src/sidecar/grammar/literal-tries.ts, applied by compile-lowering.ts):
// xgrammar 0.1.27's matcher accepts strings outside an alternation of literals that share a prefix;
// the lowered grammar accepts exactly the literals. Checked by brute force (every string over the
// literals' characters up to a length) with xgrammar's own matcher (Testings.isGrammarAcceptString).
import { describe, expect, it } from 'vitest';
import type { Constraint } from '../../../src/protocol/engine-client.js';
import { rng } from '../../../src/cli/bench-serve/rng.js';
import { lowerSource } from '../../../src/sidecar/grammar/compile-lowering.js';
import { literalTries, trieExpression } from '../../../src/sidecar/grammar/literal-tries.js';
import { grammarSource } from '../../../src/sidecar/grammar/source.js';
import { loadXgrammar } from '../../../src/sidecar/grammar/xgrammar.js';

const xg = loadXgrammar();

/** Strings up to maxLen over `alphabet` whose acceptance by `ebnf` differs from membership in `language`. */
async function mismatches(ebnf: string, language: readonly string[], maxLen: number, alphabet = [...new Set(language.join(''))]): Promise<string[]> {
  const g = await xg.Grammar.fromEBNF(ebnf);
  const out: string[] = [];
  const visit = async (s: string): Promise<void> => {
    if (s.length > 0 && (await xg.Testings.isGrammarAcceptString(g, s)) !== language.includes(s)) out.push(s);
    if (s.length < maxLen) for (const c of alphabet) await visit(s + c);
  };
  await visit('');
  g.dispose();
  return out;
}

const alternation = (literals: readonly string[]) => `root ::= ${literals.map((s) => JSON.stringify(s)).join(' | ')}`;

async function lowered(c: Constraint): Promise<string> {
  const s = await lowerSource(xg, grammarSource(c));
  expect(s.kind).toBe('ebnf');
  return s.text;
}

describe('xgrammar 0.1.27 alone (what the lowering is for)', () => {
  it.each([
    [['0.25', '0.5'], ['0.225', '0.2225']],
    [['abcd', 'abd'], ['abccd', 'abcccd']],
    [['bab', 'a', 'aab', 'aaa'], ['baa']],
  ])('root ::= %j accepts %j', async (literals, extra) => {
    expect(await mismatches(alternation(literals), literals, 6)).toEqual(expect.arrayContaining(extra));
  }, 60_000);
});

describe('trieExpression / literalTries', () => {
  it('writes a set as a trie: shared prefixes once, "" where a string ends inside another', () => {
    expect(trieExpression(['0.25', '0.5'])).toBe('"0." ("25" | "5")');
    expect(trieExpression(['ab', 'abc', 'b'])).toBe('("ab" ("" | "c") | "b")');
    expect(trieExpression(['北京', '北', 'café'])).toBe('("北" ("" | "京") | "café")');
  });

  it('rewrites rules whose language is finite (through references), keeps every other rule as printed', () => {
    const ebnf = ['x_1 ::= (("\\"ab\\""))', 'x_2 ::= (("\\"abc\\""))', 'x ::= ((x_1) | (x_2))', 's ::= (("\\"" [a-z]* "\\""))', 'r ::= ((s) | ("\\"abq\\""))', 'root ::= (("{" x "}"))'].join('\n');
    expect(literalTries(ebnf).split('\n')).toEqual(['x_1 ::= (("\\"ab\\""))', 'x_2 ::= (("\\"abc\\""))', 'x ::= "\\"ab" ("\\"" | "c\\"")', 's ::= (("\\"" [a-z]* "\\""))', 'r ::= ((s) | ("\\"abq\\""))', 'root ::= (("{" x "}"))']);
  });

  it('decodes what xgrammar prints (\\x, \\u, \\U, escaped quotes and backslashes)', () => {
    const line = 'root ::= (("\\"\\u5317\\u4eac\\"") | ("\\"caf\\xe9\\"") | ("\\"a\\\\\\"b\\"") | ("\\"\\U0001f600\\""))';
    expect(literalTries(line)).toBe(`root ::= ${trieExpression(['"北京"', '"café"', '"a\\"b"', '"😀"'])}`);
  });

  it('300 random literal sets over {a, b}: the lowered grammar accepts exactly them', async () => {
    const next = rng(3);
    const failures: string[] = [];
    for (let t = 0; t < 300; t++) {
      const literals = [...new Set(Array.from({ length: 2 + Math.floor(next() * 3) }, () => Array.from({ length: 1 + Math.floor(next() * 4) }, () => (next() < 0.5 ? 'a' : 'b')).join('')))];
      const text = await lowered({ kind: 'choice', choices: literals, param: 'p' });
      const bad = await mismatches(text, literals, 5, ['a', 'b']);
      if (bad.length > 0) failures.push(`${JSON.stringify(literals)}: ${bad.join(',')}`);
    }
    expect(failures).toEqual([]);
  }, 120_000);
});

describe('lowered sources accept exactly their literals', () => {
  it('a JSON Schema enum of numbers sharing a prefix: [0.25, 0.5]', async () => {
    const text = await lowered({ kind: 'json_schema', schema: JSON.stringify({ enum: [0.25, 0.5] }), param: 'p' });
    expect(await mismatches(text, ['0.25', '0.5'], 6, ['0', '.', '2', '5'])).toEqual([]);
  }, 60_000);

  it('string enums, consts under anyOf, and a choice list sharing prefixes', async () => {
    const strings = ['"no"', '"north"', '"nor"'];
    expect(await mismatches(await lowered({ kind: 'json_schema', schema: JSON.stringify({ type: 'string', enum: ['no', 'north', 'nor'] }), param: 'p' }), strings, 6, ['"', 'n', 'o', 'r'])).toEqual([]);
    const anyOf = { anyOf: [{ const: 'abcd' }, { const: 'abd' }, { const: 12 }] };
    expect(await mismatches(await lowered({ kind: 'json_schema', schema: JSON.stringify(anyOf), param: 'p' }), ['"abcd"', '"abd"', '12'], 6, ['"', 'a', 'b', 'c', 'd'])).toEqual([]);
    expect(await mismatches(await lowered({ kind: 'choice', choices: ['abcd', 'abd', 'ab'], param: 'p' }), ['abcd', 'abd', 'ab'], 6)).toEqual([]);
  }, 60_000);

  it('an enum inside an object: the whole object', async () => {
    const schema = { type: 'object', properties: { v: { enum: [0.25, 0.5] } }, required: ['v'], additionalProperties: false };
    const g = await xg.Grammar.fromEBNF(await lowered({ kind: 'json_schema', schema: JSON.stringify(schema), param: 'p' }));
    for (const [s, ok] of [['{"v":0.25}', true], ['{"v":0.5}', true], ['{"v":0.225}', false], ['{"v":0.2225}', false]] as const) {
      expect(await xg.Testings.isGrammarAcceptString(g, s), s).toBe(ok);
    }
    g.dispose();
  });
});

describe('regex constraints are lowered too', () => {
  it.each([
    ['(abcd|abd)', ['abcd', 'abd'], ['a', 'b', 'c', 'd']],
    ['(0\\.25|0\\.5)', ['0.25', '0.5'], ['0', '.', '2', '5']],
    ['(cat|car|cart)s?', ['cat', 'cats', 'car', 'cars', 'cart', 'carts'], ['c', 'a', 't', 'r', 's']],
  ])('%s accepts exactly what the RegExp matches', async (pattern, language, alphabet) => {
    const text = await lowered({ kind: 'regex', pattern, param: 'p' });
    expect(await mismatches(text, language, 6, alphabet)).toEqual([]);
  }, 60_000);

  it('a regex that xgrammar alone gets wrong (what the lowering is for)', async () => {
    const g = await xg.Grammar.fromStructuralTag({ type: 'structural_tag', format: { type: 'regex', pattern: '(abcd|abd)' } });
    expect(await xg.Testings.isGrammarAcceptString(g, 'abccd')).toBe(true);
    g.dispose();
  });
});
