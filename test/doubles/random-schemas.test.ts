import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { randomChoices, randomRegexes, randomSchemas } from './random-schemas.js';

describe('randomSchemas', () => {
  it('is deterministic per seed and differs across seeds', () => {
    expect(randomSchemas(7, 20)).toEqual(randomSchemas(7, 20));
    expect(randomSchemas(7, 5)).toEqual(randomSchemas(7, 20).slice(0, 5));
    expect(JSON.stringify(randomSchemas(8, 20))).not.toBe(JSON.stringify(randomSchemas(7, 20)));
    expect(randomRegexes(3, 10)).toEqual(randomRegexes(3, 10));
    expect(randomChoices(3, 10)).toEqual(randomChoices(3, 10));
  });

  it('covers the features the proof needs: nesting, bounded arrays, enums, anyOf, patterns, lengths, bounds', () => {
    const text = JSON.stringify(randomSchemas(1, 200));
    for (const keyword of ['"items"', '"minItems"', '"maxItems"', '"enum"', '"anyOf"', '"pattern"', '"minLength"', '"maxLength"', '"minimum"', '"exclusiveMinimum"', '"const"']) {
      expect(text).toContain(keyword);
    }
    const depth = (s: unknown): number => (s && typeof s === 'object' ? 1 + Math.max(0, ...Object.values(s).map(depth)) : 0);
    expect(Math.max(...randomSchemas(1, 200).map(depth))).toBeGreaterThanOrEqual(6);
  });

  it('every schema compiles in ajv (strict); regexes and choices are well formed', () => {
    const ajv = new Ajv({ strict: true });
    for (const schema of randomSchemas(1, 200)) {
      expect(() => ajv.compile(schema)).not.toThrow();
    }
    for (const regex of randomRegexes(1, 50)) {
      expect(() => new RegExp(`^(?:${regex})$`)).not.toThrow();
    }
    for (const choice of randomChoices(1, 50)) expect(choice.length).toBeGreaterThan(0);
  });
});
