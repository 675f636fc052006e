// jsonUnsafeConstruct: a JSON Schema pattern may only match characters JSON writes unescaped, because
// xgrammar writes the match into the JSON string as is (shown on xgrammar itself at the end).
import { describe, expect, it } from 'vitest';
import { jsonUnsafeConstruct } from '../../../src/protocol/json-pattern-check.js';
import { checkJsonSchema } from '../../../src/protocol/json-schema-check.js';
import { loadXgrammar } from '../../../src/sidecar/grammar/xgrammar.js';
import { randomSchemas } from '../../doubles/random-schemas.js';

describe('jsonUnsafeConstruct', () => {
  it.each(['[a-z]{2,8}', '[A-Z][a-z]{1,6}', '[0-9]{3}-[0-9]{4}', '(red|green|blue)', '^\\d+$', '\\w+\\.\\w+', '[^"\\\\\\x00-\\x1f]{0,5}', '[^"\\\\\\u0000-\\u001f,]+', '北京x', '[\\u4e00-\\u9fff]+', 'a\\-b', '[+-]?[0-9]+'])('%s is safe', (pattern) => {
    expect(jsonUnsafeConstruct(pattern)).toBeNull();
  });

  it.each([
    ['.+@.+', '.'],
    ['[^a]{1,3}', '[^a]'],
    ['[^"\\\\]', '[^"\\\\]'],
    ['\\s+', '\\s'],
    ['x\\S', '\\S'],
    ['\\D', '\\D'],
    ['[ -~]+', '[ -~]'],
    ['[A-z]', '[A-z]'],
    ['say "x"', '"'],
    ['a\\\\b', '\\\\'],
    ['a\\nb', '\\n'],
    ['\\x01', '\\x01'],
    ['[\\s\\d]', '[\\s\\d]'],
    ['\\p{L}+', '\\p'],
  ])('%s is unsafe through %s', (pattern, construct) => {
    expect(jsonUnsafeConstruct(pattern)).toBe(construct);
  });

  it("the random schemas' patterns are all safe (the proof relies on it)", () => {
    for (const s of randomSchemas(24, 200)) expect(() => checkJsonSchema(s, 'p')).not.toThrow();
  });

  it('checkJsonSchema refuses an unsafe pattern, and an unsafe patternProperties name, naming the pointer', () => {
    expect(() => checkJsonSchema({ type: 'object', properties: { e: { type: 'string', pattern: '.+@.+' } } }, 'p')).toThrow(/'pattern' can match .* through "\.", .*\(at \/properties\/e\/pattern\)/);
    expect(() => checkJsonSchema({ type: 'object', patternProperties: { '^.*$': { type: 'integer' } } }, 'p')).toThrow(/\(at \/patternProperties\//);
  });

  it('why: xgrammar writes what a pattern matches unescaped', async () => {
    const xg = loadXgrammar();
    const g = await xg.Grammar.fromJSONSchema(JSON.stringify({ type: 'string', pattern: '[^a]{1,3}' }), false, -1, [',', ':'], true);
    try {
      expect(await xg.Testings.isGrammarAcceptString(g, '"""')).toBe(true); // not JSON
    } finally {
      g.dispose();
    }
  });
});
