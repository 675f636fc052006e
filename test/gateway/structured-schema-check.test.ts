// checkJsonSchema (#24 item 4): a schema passes only when xgrammar's converter enforces every keyword in
// it; otherwise a 400 naming the keyword and its JSON pointer.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/gateway/errors.js';
import { checkJsonSchema, MAX_SCHEMA_DEPTH } from '../../src/gateway/json-schema-check.js';
import { randomSchemas } from '../doubles/random-schemas.js';

function refusal(schema: unknown): ApiError {
  try {
    checkJsonSchema(schema, 'p');
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).status).toBe(400);
    expect((e as ApiError).param).toBe('p');
    return e as ApiError;
  }
  throw new Error(`accepted: ${JSON.stringify(schema)}`);
}

describe('checkJsonSchema accepts what the grammar engine enforces', () => {
  it.each<[string, unknown]>([
    ['the 200 seeded random schemas', randomSchemas(1, 200)],
    ['true and {}', [true, {}]],
    ['annotations anywhere', { title: 't', description: 'd', $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'string', default: 'x', examples: ['x'], 'x-vendor': 1, contentMediaType: 'text/plain' }],
    ['$defs and a local $ref (recursive)', { $defs: { node: { type: 'object', properties: { next: { anyOf: [{ $ref: '#/$defs/node' }, { type: 'null' }] } } } }, $ref: '#/$defs/node' }],
    ['definitions and #', { definitions: { a: { type: 'integer' } }, type: 'object', properties: { a: { $ref: '#/definitions/a' }, self: { $ref: '#' } } }],
    ['nullable via a type list', { type: ['string', 'null'], maxLength: 4 }],
    ['keywords of another type are vacuous', { type: 'string', minimum: 3, items: { type: 'integer' } }],
    ['enum and const with a matching type', [{ type: 'string', enum: ['a', 'b'] }, { type: ['integer', 'null'], enum: [1, null] }, { const: { a: [1] } }]],
    ['formats', { type: 'object', properties: Object.fromEntries(['email', 'date', 'date-time', 'uuid', 'ipv4', 'uri'].map((f) => [f, { type: 'string', format: f }])) }],
    ['number bounds and exclusive bounds', { type: 'number', exclusiveMinimum: 0.5, maximum: 10 }],
    ['arrays: prefixItems, items false, bounds', { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string' }], items: false, minItems: 2, maxItems: 2 }],
    ['objects: patternProperties, propertyNames, additionalProperties schema, property counts', { type: 'object', patternProperties: { '^x': { type: 'integer' } }, propertyNames: { pattern: '^[a-z]+$' }, additionalProperties: { type: 'boolean' }, minProperties: 1, maxProperties: 3 }],
    ['object keywords without type', { properties: { a: { type: 'boolean' } }, required: ['a'] }],
    ['allOf of one', { allOf: [{ type: 'integer' }] }],
    // The shape zod's toJSONSchema and openai's zodResponseFormat produce.
    ['zod-style', { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } }, when: { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] } }, required: ['tags', 'when'], additionalProperties: false }],
  ])('%s', (_name, schemas) => {
    for (const s of Array.isArray(schemas) ? schemas : [schemas]) expect(() => checkJsonSchema(s, 'p')).not.toThrow();
  });
});

describe('checkJsonSchema refuses, naming keyword and pointer', () => {
  it.each<[string, unknown, string]>([
    ['not a schema', 'string', 'must be a JSON object or a boolean (at /)'],
    ['false', { type: 'object', properties: { a: false } }, 'accepts no value (at /properties/a)'],
    ['multipleOf', { type: 'object', properties: { n: { type: 'integer', multipleOf: 2 } } }, "'multipleOf' is not enforced by the grammar engine (at /properties/n/multipleOf)"],
    ['uniqueItems', { type: 'array', items: { type: 'string' }, uniqueItems: true }, "'uniqueItems' is not enforced by the grammar engine (at /uniqueItems)"],
    ['contains', { type: 'array', contains: { const: 1 } }, "'contains'"],
    ['not', { not: { type: 'string' } }, "'not'"],
    ['if/then/else', { type: 'object', if: { required: ['a'] }, then: { required: ['b'] } }, "'if'"],
    ['dependentRequired', { type: 'object', dependentRequired: { a: ['b'] } }, "'dependentRequired'"],
    ['oneOf', { oneOf: [{ type: 'integer' }, { type: 'number' }] }, 'use anyOf'],
    ['nullable (OpenAPI)', { type: 'string', nullable: true }, "'nullable'"],
    ['unknown keyword', { type: 'string', minLenght: 3 }, "'minLenght' is not a JSON Schema keyword"],
    ['a typed keyword without type', { type: 'object', properties: { s: { minLength: 3 } } }, "'minLength' needs a 'type' next to it: without one the grammar engine allows any value (at /properties/s/minLength)"],
    ['siblings of $ref', { $defs: { a: { type: 'string' } }, $ref: '#/$defs/a', maxLength: 3 }, "'maxLength' is ignored by the grammar engine next to '$ref'"],
    ['remote $ref', { $ref: 'https://example.com/s.json' }, 'local reference'],
    ['dangling $ref', { $ref: '#/$defs/missing' }, 'points at nothing'],
    ['siblings of enum', { type: 'string', enum: ['a', 'bb'], maxLength: 1 }, "'maxLength' is ignored by the grammar engine next to 'enum'"],
    ['empty enum', { enum: [] }, "'enum' must be a non-empty array"],
    ['enum value of the wrong type', { type: 'string', enum: ['a', 2] }, 'the value 2 is not of the schema\'s type "string" (at /enum/1)'],
    ['siblings of anyOf', { type: 'object', anyOf: [{ type: 'object' }] }, "'type' is ignored by the grammar engine next to 'anyOf'"],
    ['allOf of two', { allOf: [{ type: 'object' }, { required: ['a'] }] }, "'allOf' with more than one schema"],
    ['bad type', { type: 'date' }, "'type' must be one of"],
    ['unknown format', { type: 'string', format: 'color' }, "'format' \"color\" is not enforced"],
    ['pattern with lengths', { type: 'string', pattern: '[a-z]+', maxLength: 4 }, "'maxLength' is ignored by the grammar engine next to 'pattern'"],
    ['format with pattern', { type: 'string', format: 'email', pattern: '.*@x' }, "'pattern' is ignored by the grammar engine next to 'format'"],
    ['draft-4 exclusiveMinimum', { type: 'number', minimum: 0, exclusiveMinimum: true }, "'exclusiveMinimum' must be a number"],
    ['fractional integer bound', { type: 'integer', maximum: 2.5 }, 'must be a whole number'],
    ['inverted range', { type: 'integer', minimum: 5, maximum: 1 }, 'the lower bound 5 is greater than the upper bound 1'],
    ['minItems over maxItems', { type: 'array', minItems: 3, maxItems: 1 }, "'minItems' (3) is greater than maxItems (1)"],
    ['negative maxLength', { type: 'string', maxLength: -1 }, "'maxLength' must be a non-negative integer"],
    ['propertyNames of another type', { type: 'object', propertyNames: { type: 'integer' } }, "'propertyNames' must validate strings"],
    ['required not names', { type: 'object', required: [1] }, "'required' must be an array of property names"],
    ['pointer escapes', { type: 'object', properties: { 'a/b~c': { type: 'string', format: 'x' } } }, '(at /properties/a~1b~0c/format)'],
    ['deep inside arrays and defs', { $defs: { d: { type: 'array', items: { anyOf: [{ type: 'integer', multipleOf: 5 }] } } } }, '(at /$defs/d/items/anyOf/0/multipleOf)'],
  ])('%s', (_name, schema, text) => {
    expect(refusal(schema).message).toContain(text);
  });

  it(`bounds nesting at ${MAX_SCHEMA_DEPTH} levels`, () => {
    let ok: unknown = { type: 'string' };
    for (let i = 0; i < MAX_SCHEMA_DEPTH; i++) ok = { type: 'array', items: ok };
    expect(() => checkJsonSchema(ok, 'p')).not.toThrow();
    let deep: unknown = { type: 'string' };
    for (let i = 0; i <= MAX_SCHEMA_DEPTH; i++) deep = { type: 'array', items: deep };
    expect(refusal(deep).message).toContain(`deeper than ${MAX_SCHEMA_DEPTH} levels`);
  });
});
