import { rng as mulberry32 } from '../../src/cli/bench-serve/rng.js';
// Seeded random JSON Schemas for the structured-output proof and the grammar-compile benchmark.
// Pure and deterministic: randomSchemas(seed, count) returns the same schemas for the same seed, on any
// machine (mulberry32, no Math.random). Every schema is a root object (what OpenAI's json_schema and the
// clients' zod/object helpers send) built only from keywords xgrammar's JSON-schema converter enforces:
// type, properties, required, additionalProperties:false, items, minItems/maxItems, enum, const, anyOf,
// pattern, minLength/maxLength, minimum/maximum/exclusiveMinimum (integers; numbers come as const).
// Strings, arrays and integers are bounded so that a grammar-following sampler, even over random logits,
// can finish a value in a few hundred tokens.

export type JsonSchema = { [key: string]: unknown };

export interface RandomSchemaOptions {
  /** Deepest nesting of objects/arrays under the root (root = depth 0). Default 3. */
  maxDepth?: number;
  /** Most properties per object. Default 4. */
  maxProperties?: number;
}


class Picker {
  constructor(private readonly next: () => number) {}
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  one<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }
  /** `count` distinct items, in the order drawn. */
  distinct<T>(items: readonly T[], count: number): T[] {
    const pool = [...items];
    const out: T[] = [];
    while (out.length < count && pool.length > 0) out.push(pool.splice(this.int(0, pool.length - 1), 1)[0]!);
    return out;
  }
}

const PROPERTY_NAMES = [
  'id', 'name', 'title', 'kind', 'count', 'score', 'tags', 'items', 'owner', 'status', 'level', 'color',
  'city', 'price', 'active', 'notes', 'code', 'rank', 'meta', 'values',
] as const;
// Some share prefixes (no, nor, north; 北, 北京), which enums and choices must keep apart.
const WORDS = ['red', 'green', 'blue', 'alpha', 'beta', 'gamma', 'north', 'nor', 'south', 'yes', 'no', '北', '北京', 'café'];
const NUMBERS = [0.25, 0.5, 0.125, 1.5, 12.5, 1.25, -0.5, -0.25];
// Each pattern matches bounded strings: the regex converter and ajv both accept them.
const PATTERNS = ['[a-z]{2,8}', '[A-Z][a-z]{1,6}', '[0-9]{3}-[0-9]{4}', '(red|green|blue)', '[a-f0-9]{4,8}', 'ab{1,6}c?'];

type Leaf = 'string' | 'pattern' | 'integer' | 'number' | 'boolean' | 'null' | 'enum' | 'const';

function leafSchema(p: Picker): JsonSchema {
  const kind = p.one<Leaf>(['string', 'pattern', 'integer', 'number', 'boolean', 'null', 'enum', 'const']);
  switch (kind) {
    case 'string': {
      const min = p.int(0, 4);
      return { type: 'string', minLength: min, maxLength: min + p.int(0, 10) };
    }
    case 'pattern':
      return { type: 'string', pattern: p.one(PATTERNS) };
    case 'integer': {
      const min = p.int(-1000, 1000);
      return p.chance(0.2)
        ? { type: 'integer', exclusiveMinimum: min, maximum: min + p.int(2, 5000) }
        : { type: 'integer', minimum: min, maximum: min + p.int(0, 5000) };
    }
    case 'number':
      // A fixed number or an enum of numbers sharing prefixes (0.25, 0.5, 0.125: xgrammar 0.1.27 alone
      // accepts 0.2225 for [0.25, 0.5]; src/sidecar/grammar/literal-tries.ts): bounds on type number are
      // refused, and an unbounded number lets random logits fill max_tokens with digits.
      return p.chance(0.5) ? { type: 'number', const: p.int(-50, 50) / 4 } : { type: 'number', enum: p.distinct(NUMBERS, p.int(2, 4)) };
    case 'boolean':
      return { type: 'boolean' };
    case 'null':
      return { type: 'null' };
    case 'enum':
      return p.chance(0.7)
        ? { type: 'string', enum: p.distinct(WORDS, p.int(1, 5)) }
        : { enum: [p.one(WORDS), p.int(-9, 99), true, null].slice(0, p.int(2, 4)) };
    case 'const':
      return { const: p.chance(0.5) ? p.one(WORDS) : p.int(0, 100) };
  }
}

function anySchema(p: Picker, depth: number, opts: Required<RandomSchemaOptions>): JsonSchema {
  if (depth >= opts.maxDepth) return leafSchema(p);
  const r = p.int(0, 9);
  if (r <= 4) return leafSchema(p);
  if (r <= 6) return arraySchema(p, depth, opts);
  if (r <= 8) return objectSchema(p, depth, opts);
  return { anyOf: [leafSchema(p), p.chance(0.5) ? leafSchema(p) : objectSchema(p, depth, opts)] };
}

function arraySchema(p: Picker, depth: number, opts: Required<RandomSchemaOptions>): JsonSchema {
  const min = p.int(0, 2);
  return { type: 'array', items: anySchema(p, depth + 1, opts), minItems: min, maxItems: min + p.int(0, 3) };
}

function objectSchema(p: Picker, depth: number, opts: Required<RandomSchemaOptions>): JsonSchema {
  const names = p.distinct(PROPERTY_NAMES, p.int(1, opts.maxProperties));
  const properties: Record<string, JsonSchema> = {};
  for (const name of names) properties[name] = anySchema(p, depth + 1, opts);
  // Mostly all-required (what OpenAI strict mode demands), sometimes a subset: optional properties too.
  const required = p.chance(0.7) ? names : names.filter(() => p.chance(0.5));
  return { type: 'object', properties, required, additionalProperties: false };
}

/** `count` random root-object JSON Schemas, the same for the same seed and options. */
export function randomSchemas(seed: number, count: number, options: RandomSchemaOptions = {}): JsonSchema[] {
  const opts: Required<RandomSchemaOptions> = { maxDepth: options.maxDepth ?? 3, maxProperties: options.maxProperties ?? 4 };
  const p = new Picker(mulberry32(seed));
  return Array.from({ length: count }, () => objectSchema(p, 0, opts));
}

/** Seeded random regexes (full-match semantics, bounded length) for the regex proof. */
export function randomRegexes(seed: number, count: number): string[] {
  const p = new Picker(mulberry32(seed ^ 0x5eed));
  const parts = ['[a-z]{1,4}', '[0-9]{2}', '(cat|dog|bird)', '-', '\\.', '[A-Z]', 'x?', '(ab|cd){1,2}', '[^"\\\\]{0,3}'];
  return Array.from({ length: count }, () => Array.from({ length: p.int(1, 4) }, () => p.one(parts)).join(''));
}

/** Seeded random choice lists (1–5 distinct strings) for the choice proof. */
export function randomChoices(seed: number, count: number): string[][] {
  const p = new Picker(mulberry32(seed ^ 0xc401ce));
  return Array.from({ length: count }, () => p.distinct(WORDS, p.int(1, 5)));
}
