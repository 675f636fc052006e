// Checks a request's JSON Schema against what the grammar engine (xgrammar's JSON-schema converter,
// json_schema_converter.cc in xgrammar 0.1.27) actually enforces: the contract of a json_schema
// Constraint. The sidecar's grammar compile applies it to every schema whatever the route
// (src/sidecar/grammar/source.ts, tool tags included); the gateway applies it too, so that a bad
// schema is a 400 before anything reaches the engine. The
// converter logs and skips what it does not support (multipleOf, uniqueItems, not, if/then/else, …),
// turns a typeless {minLength: 3} into "any value", fuses allOf of several schemas into {} and treats
// oneOf as anyOf: a client would get output its schema rejects. Each such case is an INVALID_REQUEST
// (a 400 from the gateway) naming the keyword and its JSON pointer, with the request field as `param`,
// as are the compile errors the converter does report (a bad regex, an unsatisfiable range).
//
// The walk mirrors the converter's dispatch (VisitSchema): the first of $ref, const, enum, anyOf,
// allOf, type, object keywords, array keywords picks how a node is compiled, and only that visitor's
// keywords take effect. Keywords of another instance type are vacuous for the node's type (JSON Schema
// applies `minLength` to strings only) and are accepted.

import { EngineError } from './engine-client.js';
import { jsonUnsafeConstruct } from './json-pattern-check.js';

/** Nesting limit of a schema (objects and arrays of the JSON text), so the walk and the converter stay shallow. */
export const MAX_SCHEMA_DEPTH = 64;

// Annotations: no effect on validation (draft 2020-12 makes the content* keywords annotations too).
const ANNOTATIONS = new Set([
  'title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly', '$comment', '$schema',
  'contentEncoding', 'contentMediaType', 'contentSchema',
]);
const DEFINITIONS = ['$defs', 'definitions'] as const;

const NUMERIC = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];
const TYPE_KEYWORDS: Record<string, readonly string[]> = {
  integer: NUMERIC,
  number: NUMERIC,
  string: ['minLength', 'maxLength', 'pattern', 'format'],
  boolean: [],
  null: [],
  array: ['items', 'prefixItems', 'unevaluatedItems', 'minItems', 'maxItems'],
  object: ['properties', 'required', 'additionalProperties', 'unevaluatedProperties', 'patternProperties', 'propertyNames', 'minProperties', 'maxProperties'],
};
const TYPED = new Set(Object.values(TYPE_KEYWORDS).flat());
const DISPATCH = ['$ref', 'const', 'enum', 'anyOf', 'allOf', 'type'];

/** Keywords the converter skips (with a warning at most), and what to use instead where there is something. */
const UNENFORCED: Record<string, string> = {
  oneOf: 'the grammar engine treats oneOf as anyOf (its branches are not made exclusive); use anyOf',
  multipleOf: '',
  uniqueItems: '',
  contains: '',
  minContains: '',
  maxContains: '',
  not: '',
  if: '',
  then: '',
  else: '',
  dependentRequired: '',
  dependentSchemas: '',
  dependencies: '',
  $dynamicRef: '',
  $recursiveRef: '',
  $id: '',
  $anchor: '',
  $dynamicAnchor: '',
  nullable: 'use type: [..., "null"] or anyOf with {"type": "null"}',
};

/** String formats with a grammar in the converter (ParseStringSchema); others would be ignored. */
const FORMATS = new Set([
  'email', 'date', 'time', 'date-time', 'duration', 'ipv4', 'ipv6', 'hostname', 'uuid', 'uri', 'uri-reference',
  'uri-template', 'json-pointer', 'relative-json-pointer',
]);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSchema = (v: unknown): boolean => isObj(v) || typeof v === 'boolean';
const escape = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

class Walk {
  constructor(
    private readonly root: unknown,
    private readonly param: string,
  ) {}

  fail(pointer: string, message: string): never {
    throw new EngineError('INVALID_REQUEST', `${this.param}: ${message} (at ${pointer === '' ? '/' : pointer})`, this.param);
  }

  failKeyword(pointer: string, keyword: string, why: string): never {
    this.fail(`${pointer}/${escape(keyword)}`, `the keyword '${keyword}' ${why}`);
  }

  schema(node: unknown, pointer: string, depth: number): void {
    if (depth > MAX_SCHEMA_DEPTH) this.fail(pointer, `the schema nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
    if (typeof node === 'boolean') {
      if (!node) this.fail(pointer, 'the schema false accepts no value');
      return;
    }
    if (!isObj(node)) this.fail(pointer, 'a JSON Schema must be a JSON object or a boolean');
    for (const key of Object.keys(node)) {
      if (ANNOTATIONS.has(key) || key.startsWith('x-') || DEFINITIONS.includes(key as never)) continue;
      if (key in UNENFORCED) this.failKeyword(pointer, key, `is not enforced by the grammar engine${UNENFORCED[key] ? `: ${UNENFORCED[key]}` : ''}`);
      if (!TYPED.has(key) && !DISPATCH.includes(key)) this.failKeyword(pointer, key, 'is not a JSON Schema keyword this server enforces');
    }
    for (const defs of DEFINITIONS) {
      if (!(defs in node)) continue;
      const map = node[defs];
      if (!isObj(map)) this.failKeyword(pointer, defs, 'must be an object of schemas');
      for (const [name, sub] of Object.entries(map)) this.schema(sub, `${pointer}/${defs}/${escape(name)}`, depth + 2);
    }
    const has = (k: string) => k in node;
    if (has('$ref')) return this.ref(node, pointer);
    if (has('const') || has('enum')) return this.literal(node, pointer);
    if (has('anyOf') || has('allOf')) return this.combination(node, pointer, depth);
    if (has('type')) return this.typed(node, pointer, depth);
    if (['properties', 'additionalProperties', 'unevaluatedProperties'].some(has)) return this.object(node, pointer, depth);
    if (['items', 'prefixItems', 'unevaluatedItems'].some(has)) return this.array(node, pointer, depth);
    const typed = Object.keys(node).find((k) => TYPED.has(k));
    if (typed) this.failKeyword(pointer, typed, `needs a 'type' next to it: without one the grammar engine allows any value`);
  }

  /** Keywords other than annotations and definitions next to a node's deciding keyword are ignored by the converter. */
  private onlyWith(node: Obj, pointer: string, deciding: string, allowed: readonly string[]): void {
    for (const key of Object.keys(node)) {
      if (key === deciding || allowed.includes(key) || ANNOTATIONS.has(key) || key.startsWith('x-') || DEFINITIONS.includes(key as never)) continue;
      this.failKeyword(pointer, key, `is ignored by the grammar engine next to '${deciding}'`);
    }
  }

  private ref(node: Obj, pointer: string): void {
    this.onlyWith(node, pointer, '$ref', []);
    const ref = node.$ref;
    if (typeof ref !== 'string' || !(ref === '#' || ref.startsWith('#/'))) {
      this.failKeyword(pointer, '$ref', "must be a local reference ('#' or '#/…'); remote references are not supported");
    }
    // The converter walks the reference by plain '/'-separated names, without ~0/~1 or %-decoding.
    let target: unknown = this.root;
    for (const part of ref.slice(2).split('/').filter((p) => p !== '')) {
      if (!isObj(target) || !(part in target)) this.failKeyword(pointer, '$ref', `points at nothing: ${ref}`);
      target = target[part];
    }
  }

  private literal(node: Obj, pointer: string): void {
    const deciding = 'const' in node ? 'const' : 'enum';
    this.onlyWith(node, pointer, deciding, ['type']);
    const values = deciding === 'const' ? [node.const] : node.enum;
    if (!Array.isArray(values) || values.length === 0) this.failKeyword(pointer, 'enum', 'must be a non-empty array');
    if ('type' in node) {
      const types = this.types(node, pointer);
      values.forEach((v, i) => {
        if (!types.some((t) => matchesType(v, t))) {
          this.fail(`${pointer}/${deciding}${deciding === 'enum' ? `/${i}` : ''}`, `the value ${JSON.stringify(v).slice(0, 64)} is not of the schema's type ${JSON.stringify(node.type)}`);
        }
      });
    }
  }

  private combination(node: Obj, pointer: string, depth: number): void {
    const deciding = 'anyOf' in node ? 'anyOf' : 'allOf';
    this.onlyWith(node, pointer, deciding, []);
    const branches = node[deciding];
    if (!Array.isArray(branches) || branches.length === 0) this.failKeyword(pointer, deciding, 'must be a non-empty array of schemas');
    if (deciding === 'allOf' && branches.length > 1) {
      this.failKeyword(pointer, 'allOf', 'with more than one schema is not enforced by the grammar engine; merge them into one schema');
    }
    branches.forEach((b, i) => this.schema(b, `${pointer}/${deciding}/${i}`, depth + 2));
  }

  private types(node: Obj, pointer: string): string[] {
    const t = node.type;
    const list = typeof t === 'string' ? [t] : t;
    if (!Array.isArray(list) || list.length === 0 || list.some((x) => typeof x !== 'string' || !(x in TYPE_KEYWORDS)) || new Set(list).size !== list.length) {
      this.failKeyword(pointer, 'type', `must be one of ${Object.keys(TYPE_KEYWORDS).join(', ')} or a non-empty array of distinct ones, got ${JSON.stringify(node.type).slice(0, 64)}`);
    }
    return list as string[];
  }

  private typed(node: Obj, pointer: string, depth: number): void {
    // Each listed type is compiled from the same node with that one type (VisitTypeArray), so every
    // keyword is either enforced for the type or belongs to another type (vacuous for this one).
    for (const t of this.types(node, pointer)) {
      if (t === 'integer' || t === 'number') this.numeric(node, pointer, t === 'integer');
      else if (t === 'string') this.string(node, pointer);
      else if (t === 'array') this.array(node, pointer, depth);
      else if (t === 'object') this.object(node, pointer, depth);
    }
  }

  private count(node: Obj, pointer: string, key: string): number | undefined {
    if (!(key in node)) return undefined;
    const v = node[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) this.failKeyword(pointer, key, 'must be a non-negative integer');
    return v;
  }

  private range(node: Obj, pointer: string, lo: string, hi: string): void {
    const min = this.count(node, pointer, lo);
    const max = this.count(node, pointer, hi);
    if (min !== undefined && max !== undefined && min > max) this.failKeyword(pointer, lo, `(${min}) is greater than ${hi} (${max})`);
  }

  private numeric(node: Obj, pointer: string, integer: boolean): void {
    for (const key of NUMERIC) {
      if (!(key in node)) continue;
      const v = node[key];
      // draft-4's boolean exclusiveMinimum/exclusiveMaximum is not supported: 2020-12 takes the bound itself.
      if (typeof v !== 'number' || !Number.isFinite(v)) this.failKeyword(pointer, key, 'must be a number');
      if (integer && !Number.isSafeInteger(v)) this.failKeyword(pointer, key, 'must be a whole number (within ±2^53) for an integer');
    }
    if (!integer) {
      // Measured on xgrammar 0.1.27's float ranges (test/sidecar/grammar/schema-check.test.ts): with
      // bounds it lets through "-", "-.5", values past the bounds and exclusive bounds themselves.
      const bound = NUMERIC.find((k) => k in node);
      if (bound) this.failKeyword(pointer, bound, 'is not enforced for type number by the grammar engine (its number ranges let out-of-range and malformed numbers through); use type integer, or no bound');
    }
    const low = (node.minimum ?? node.exclusiveMinimum) as number | undefined;
    const high = (node.maximum ?? node.exclusiveMaximum) as number | undefined;
    if (low !== undefined && high !== undefined && low > high) this.fail(pointer, `the lower bound ${low} is greater than the upper bound ${high}`);
  }

  private string(node: Obj, pointer: string): void {
    this.range(node, pointer, 'minLength', 'maxLength');
    if ('format' in node) {
      if (typeof node.format !== 'string' || !FORMATS.has(node.format)) {
        this.failKeyword(pointer, 'format', `${JSON.stringify(node.format).slice(0, 64)} is not enforced by the grammar engine; supported: ${[...FORMATS].join(', ')}`);
      }
      const other = ['pattern', 'minLength', 'maxLength'].find((k) => k in node);
      if (other) this.failKeyword(pointer, other, "is ignored by the grammar engine next to 'format'");
    }
    if ('pattern' in node) {
      if (typeof node.pattern !== 'string') this.failKeyword(pointer, 'pattern', 'must be a string');
      this.jsonSafe(node.pattern, pointer, 'pattern');
      const other = ['minLength', 'maxLength'].find((k) => k in node);
      if (other) this.failKeyword(pointer, other, "is ignored by the grammar engine next to 'pattern'; bound the length in the pattern instead");
    }
  }

  /** A pattern whose matches the engine writes into JSON strings unescaped (./json-pattern-check.ts). */
  private jsonSafe(pattern: string, pointer: string, keyword: string): void {
    const unsafe = jsonUnsafeConstruct(pattern);
    if (unsafe !== null) {
      this.failKeyword(pointer, keyword, `can match '"', '\\' or a control character through ${JSON.stringify(unsafe)}, which the grammar engine writes into the JSON string unescaped; exclude them (e.g. [^"\\\\\\x00-\\x1f] instead of .)`);
    }
  }

  /** Keywords whose value is one schema (an object or a boolean; `false` allows nothing more). */
  private subSchemas(node: Obj, pointer: string, depth: number, keys: readonly string[]): void {
    for (const key of keys) {
      if (!(key in node)) continue;
      if (!isSchema(node[key])) this.failKeyword(pointer, key, 'must be a schema (an object or a boolean)');
      if (node[key] !== false) this.schema(node[key], `${pointer}/${key}`, depth + 1);
    }
  }

  private array(node: Obj, pointer: string, depth: number): void {
    this.range(node, pointer, 'minItems', 'maxItems');
    this.subSchemas(node, pointer, depth, ['items', 'unevaluatedItems']);
    if ('prefixItems' in node) {
      const items = node.prefixItems;
      if (!Array.isArray(items)) this.failKeyword(pointer, 'prefixItems', 'must be an array of schemas');
      items.forEach((s, i) => this.schema(s, `${pointer}/prefixItems/${i}`, depth + 2));
    }
  }

  private object(node: Obj, pointer: string, depth: number): void {
    this.range(node, pointer, 'minProperties', 'maxProperties');
    for (const key of ['properties', 'patternProperties']) {
      if (!(key in node)) continue;
      const map = node[key];
      if (!isObj(map)) this.failKeyword(pointer, key, 'must be an object of schemas');
      for (const [name, sub] of Object.entries(map)) {
        if (key === 'patternProperties') this.jsonSafe(name, `${pointer}/patternProperties`, name);
        this.schema(sub, `${pointer}/${key}/${escape(name)}`, depth + 2);
      }
    }
    if ('required' in node && (!Array.isArray(node.required) || node.required.some((r) => typeof r !== 'string'))) {
      this.failKeyword(pointer, 'required', 'must be an array of property names');
    }
    this.subSchemas(node, pointer, depth, ['additionalProperties', 'unevaluatedProperties']);
    if ('propertyNames' in node) {
      const names = node.propertyNames;
      if (!isObj(names)) this.failKeyword(pointer, 'propertyNames', 'must be a schema object');
      if (names.type !== undefined && names.type !== 'string') this.failKeyword(pointer, 'propertyNames', 'must validate strings (property names are strings)');
      // The converter compiles it with type string added (ParseObjectSchema).
      this.schema({ ...names, type: 'string' }, `${pointer}/propertyNames`, depth + 1);
    }
  }
}

function matchesType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'boolean':
      return typeof value === 'boolean';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'string':
      return typeof value === 'string';
    case 'array':
      return Array.isArray(value);
    default:
      return isObj(value);
  }
}

/**
 * Throws EngineError INVALID_REQUEST (param: `param`, the message naming keyword and JSON pointer) unless `schema` is a JSON
 * Schema whose every keyword the grammar engine enforces.
 */
export function checkJsonSchema(schema: unknown, param: string): void {
  new Walk(schema, param).schema(schema, '', 0);
}
