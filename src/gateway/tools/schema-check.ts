// Is a tool's `parameters` a JSON Schema? Checked in the gateway for the shape (an object whose
// keywords have the types JSON Schema gives them, down through every subschema), so a mistake is a 400
// naming the exact place. Whether the grammar engine supports every keyword is the sidecar's answer
// (its compile error carries the same param).

import { badRequest } from '../errors.js';

const TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);
const MAX_DEPTH = 64;
/** Keywords whose value is one schema, a map of schemas, or a list of schemas. */
const ONE = ['items', 'additionalProperties', 'not', 'contains', 'propertyNames', 'if', 'then', 'else', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems'];
const MAP = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Throws a 400 at `param` (e.g. tools[0].function.parameters.properties.city.type) when `schema` is not a JSON Schema. */
export function checkJsonSchema(schema: unknown, param: string, depth = 0): void {
  if (typeof schema === 'boolean' && depth > 0) return;
  if (!isObject(schema)) throw badRequest(`${param} must be a JSON Schema object`, param);
  if (depth > MAX_DEPTH) throw badRequest(`${param} nests deeper than ${MAX_DEPTH} levels`, param);
  const t = schema.type;
  if (t !== undefined) {
    const types = Array.isArray(t) ? t : [t];
    const bad = types.find((x) => typeof x !== 'string' || !TYPES.has(x));
    if (bad !== undefined || types.length === 0) throw badRequest(`${param}.type must be one of ${[...TYPES].join(', ')} (or a list of them), got ${JSON.stringify(t).slice(0, 64)}`, `${param}.type`);
  }
  if (schema.required !== undefined && !(Array.isArray(schema.required) && schema.required.every((r) => typeof r === 'string'))) {
    throw badRequest(`${param}.required must be a list of property names`, `${param}.required`);
  }
  if (schema.enum !== undefined && !Array.isArray(schema.enum)) throw badRequest(`${param}.enum must be a list`, `${param}.enum`);
  for (const k of ONE) {
    const v = schema[k];
    if (v === undefined) continue;
    if (k === 'items' && Array.isArray(v)) v.forEach((s, i) => checkJsonSchema(s, `${param}.items[${i}]`, depth + 1));
    else checkJsonSchema(v, `${param}.${k}`, depth + 1);
  }
  for (const k of MAP) {
    const v = schema[k];
    if (v === undefined) continue;
    if (!isObject(v)) throw badRequest(`${param}.${k} must be an object of schemas`, `${param}.${k}`);
    for (const [name, s] of Object.entries(v)) checkJsonSchema(s, `${param}.${k}.${name}`, depth + 1);
  }
  for (const k of LIST) {
    const v = schema[k];
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.length === 0) throw badRequest(`${param}.${k} must be a non-empty list of schemas`, `${param}.${k}`);
    v.forEach((s, i) => checkJsonSchema(s, `${param}.${k}[${i}]`, depth + 1));
  }
}
