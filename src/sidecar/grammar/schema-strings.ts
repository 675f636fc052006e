// Length-bounded strings as xgrammar must see them for its output to stay JSON. xgrammar 0.1.27 compiles
// {type: string, minLength/maxLength} to a repetition of [^"\\\r\n]: raw tabs and other control
// characters, which JSON strings may not contain, get through (with random logits they do). The same
// bounds as a pattern over JSON's unescaped characters, [^"\\\x00-\x1f]{min,max}, give only valid JSON
// strings of the same lengths (code points, as JSON Schema counts). A string without bounds compiles
// to xgrammar's JSON string rule, which is right already; patterns and formats are the user's.
// The walk visits schema positions only (never const, enum, default or examples values).

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const SUBSCHEMA = ['additionalProperties', 'unevaluatedProperties', 'propertyNames', 'items', 'unevaluatedItems'];
const SUBSCHEMA_LISTS = ['prefixItems', 'anyOf', 'allOf'];
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions'];

function isStringType(node: Obj): boolean {
  return node.type === 'string' || (Array.isArray(node.type) && node.type.includes('string'));
}

/** A copy of `schema` with every length-bounded string (no pattern, no format) as the equivalent JSON-safe pattern. */
export function jsonSafeStrings(schema: unknown): unknown {
  if (!isObj(schema)) return schema;
  const out: Obj = { ...schema };
  for (const key of SUBSCHEMA) if (key in out) out[key] = jsonSafeStrings(out[key]);
  for (const key of SUBSCHEMA_LISTS) if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).map(jsonSafeStrings);
  for (const key of SUBSCHEMA_MAPS) {
    const map = out[key];
    if (isObj(map)) out[key] = Object.fromEntries(Object.entries(map).map(([k, v]) => [k, jsonSafeStrings(v)]));
  }
  const bounded = 'minLength' in out || 'maxLength' in out;
  if (isStringType(out) && bounded && !('pattern' in out) && !('format' in out) && !('const' in out) && !('enum' in out)) {
    const min = typeof out.minLength === 'number' ? out.minLength : 0;
    const max = typeof out.maxLength === 'number' ? String(out.maxLength) : '';
    delete out.minLength;
    delete out.maxLength;
    out.pattern = `[^"\\\\\\x00-\\x1f]{${min},${max}}`;
  }
  return out;
}
