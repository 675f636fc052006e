// The structured-output request surface of chat and completions, and its lowering to the protocol's
// Constraint (src/protocol/engine-client.ts) that the sidecar compiles with xgrammar:
//  - OpenAI's response_format: text | json_object | json_schema {name, description, schema, strict};
//  - vLLM's structured_outputs: exactly one of json, regex, choice, grammar, json_object, structural_tag;
//  - vLLM's older top-level guided_json, guided_regex, guided_choice, guided_grammar (+ guided_decoding_backend).
// At most one source per request (a 400 otherwise). `param` names the field the constraint came from,
// so a compile error in the sidecar becomes a 400 that says where. What the grammar engine would not
// enforce (keywords, number bounds, unsafe patterns: src/protocol/json-schema-check.ts) the sidecar's
// compile refuses whatever the route; the gateway checks the same first, so such a request is a 400
// before it reaches the engine. The sidecar alone rewrites length-bounded strings for the engine.
// response_format's name, description and strict are labels: the schema is always enforced exactly
// and nothing is added to the prompt (as vLLM).

import { z } from 'zod';
import type { Constraint } from '../protocol/engine-client.js';
import { checkJsonSchema } from '../protocol/json-schema-check.js';
import { badRequest } from './errors.js';

/** Characters of a schema's JSON text, a structural tag, a grammar: bounds what one request makes the sidecar compile. */
export const MAX_SCHEMA_CHARS = 64 * 1024;
export const MAX_REGEX_CHARS = 4 * 1024;
export const MAX_CHOICES = 1024;
const MAX_CHOICE_CHARS = 1024;

const opt = <T extends z.ZodType>(t: T) => t.nullish();
const choice = z
  .array(z.string().max(MAX_CHOICE_CHARS))
  .min(1, 'choice must list at least one string')
  .max(MAX_CHOICES, `choice may list at most ${MAX_CHOICES} strings`);
const regex = z.string().min(1, 'the regex must not be empty').max(MAX_REGEX_CHARS, `the regex may be at most ${MAX_REGEX_CHARS} characters`);
const grammar = z.string().min(1, 'the grammar must not be empty').max(MAX_SCHEMA_CHARS, `the grammar may be at most ${MAX_SCHEMA_CHARS} characters`);
/** Option fields of vLLM's StructuredOutputsParams this server does not implement: refused unless off. */
const off = (name: string) => opt(z.literal(false, { error: `${name} is not supported by this server` }));

const responseFormat = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      json_schema: z.object({
        name: z.string().min(1).max(256),
        description: opt(z.string()),
        schema: z.unknown().refine((s) => s !== undefined && s !== null, 'schema is required'),
        strict: opt(z.boolean()),
      }),
    }),
  ],
  { error: 'response_format.type must be one of text, json_object, json_schema' },
);

const structuredOutputs = z.strictObject(
  {
    json: opt(z.unknown()),
    regex: opt(regex),
    choice: opt(choice),
    grammar: opt(grammar),
    json_object: opt(z.boolean()),
    structural_tag: opt(z.string().max(MAX_SCHEMA_CHARS, `structural_tag may be at most ${MAX_SCHEMA_CHARS} characters`)),
    // Honoured: xgrammar is the only backend, so there is never a fallback to disable.
    disable_fallback: opt(z.boolean()),
    disable_any_whitespace: off('structured_outputs.disable_any_whitespace'),
    disable_additional_properties: off('structured_outputs.disable_additional_properties'),
    whitespace_pattern: opt(z.null({ error: 'structured_outputs.whitespace_pattern is not supported by this server' })),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `unsupported key(s) ${issue.keys.join(', ')}` : undefined) },
);

/** The request fields (spread into the chat and completions schemas). */
export const structuredOutputFields = {
  response_format: opt(responseFormat),
  structured_outputs: opt(structuredOutputs),
  guided_json: opt(z.unknown()),
  guided_regex: opt(regex),
  guided_choice: opt(choice),
  guided_grammar: opt(grammar),
  // Honoured: xgrammar is the backend ('auto' picks it too); others are refused rather than ignored.
  guided_decoding_backend: opt(z.enum(['xgrammar', 'auto'], { error: "guided_decoding_backend: this server's only backend is 'xgrammar'" })),
};

type Fields = { [K in keyof typeof structuredOutputFields]?: z.infer<(typeof structuredOutputFields)[K]> };

/** The request's other fields that decide whether a constraint can be honoured. */
type Others = { ignore_eos?: boolean | null; min_tokens?: number | null };

/** A JSON Schema given as an object/boolean or as its JSON text (vLLM accepts both): checked, then JSON text. */
function jsonSchema(value: unknown, param: string): Constraint {
  let schema = value;
  if (typeof value === 'string') {
    if (value.length > MAX_SCHEMA_CHARS) throw badRequest(`${param}: the schema is ${value.length} characters; the limit is ${MAX_SCHEMA_CHARS}`, param);
    try {
      schema = JSON.parse(value) as unknown;
    } catch {
      throw badRequest(`${param}: not valid JSON`, param);
    }
  }
  const text = JSON.stringify(schema) ?? '';
  if (text.length > MAX_SCHEMA_CHARS) throw badRequest(`${param}: the schema is ${text.length} characters of JSON; the limit is ${MAX_SCHEMA_CHARS}`, param);
  checkJsonSchema(schema, param);
  return { kind: 'json_schema', schema: text, param };
}

/** xgrammar's structural tag is JSON text; JSON Schemas inside it are checked like any other. */
function structuralTag(tag: string, param: string): Constraint {
  let parsed: unknown;
  try {
    parsed = JSON.parse(tag) as unknown;
  } catch {
    throw badRequest(`${param}: not valid JSON`, param);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badRequest(`${param}: must be the JSON text of an object`, param);
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(visit);
    if (typeof v !== 'object' || v === null) return;
    const o = v as Record<string, unknown>;
    // {"type": "json_schema", "json_schema": …} (format API) and {"begin", "schema", "end"} (legacy structures)
    if (o.type === 'json_schema' && 'json_schema' in o) checkJsonSchema(o.json_schema, param);
    if ('begin' in o && 'schema' in o) checkJsonSchema(o.schema, param);
    Object.values(o).forEach(visit);
  };
  visit(parsed);
  return { kind: 'structural_tag', tag, param };
}

type Source = { field: string; lower: () => Constraint };

function sources(body: Fields): Source[] {
  const out: Source[] = [];
  const rf = body.response_format;
  if (rf?.type === 'json_object') out.push({ field: 'response_format', lower: () => ({ kind: 'json_object', param: 'response_format' }) });
  if (rf?.type === 'json_schema') {
    out.push({ field: 'response_format', lower: () => jsonSchema(rf.json_schema.schema, 'response_format.json_schema.schema') });
  }
  const so = body.structured_outputs;
  if (so) {
    const kinds: Source[] = [];
    if (so.json != null) kinds.push({ field: 'structured_outputs.json', lower: () => jsonSchema(so.json, 'structured_outputs.json') });
    if (so.regex != null) kinds.push({ field: 'structured_outputs.regex', lower: () => ({ kind: 'regex', pattern: so.regex!, param: 'structured_outputs.regex' }) });
    if (so.choice != null) kinds.push({ field: 'structured_outputs.choice', lower: () => ({ kind: 'choice', choices: so.choice!, param: 'structured_outputs.choice' }) });
    if (so.grammar != null) kinds.push({ field: 'structured_outputs.grammar', lower: () => ({ kind: 'grammar', ebnf: so.grammar!, param: 'structured_outputs.grammar' }) });
    if (so.json_object === true) kinds.push({ field: 'structured_outputs.json_object', lower: () => ({ kind: 'json_object', param: 'structured_outputs.json_object' }) });
    if (so.structural_tag != null) kinds.push({ field: 'structured_outputs.structural_tag', lower: () => structuralTag(so.structural_tag!, 'structured_outputs.structural_tag') });
    if (kinds.length === 0) {
      throw badRequest('structured_outputs: give one of json, regex, choice, grammar, json_object, structural_tag', 'structured_outputs');
    }
    out.push(...kinds);
  }
  if (body.guided_json != null) out.push({ field: 'guided_json', lower: () => jsonSchema(body.guided_json, 'guided_json') });
  if (body.guided_regex != null) out.push({ field: 'guided_regex', lower: () => ({ kind: 'regex', pattern: body.guided_regex!, param: 'guided_regex' }) });
  if (body.guided_choice != null) out.push({ field: 'guided_choice', lower: () => ({ kind: 'choice', choices: body.guided_choice!, param: 'guided_choice' }) });
  if (body.guided_grammar != null) out.push({ field: 'guided_grammar', lower: () => ({ kind: 'grammar', ebnf: body.guided_grammar!, param: 'guided_grammar' }) });
  return out;
}

/**
 * The request's structured-output constraint, or undefined when it asks for none. Throws a 400 for two
 * sources at once, a schema the engine would not enforce, or a combination it cannot honour.
 * `toolsActive`: tools given with tool_choice other than none; their constraint (the tools helper's)
 * wins, so a second one is refused.
 */
export function structuredConstraint(body: Fields & Others, toolsActive = false): Constraint | undefined {
  const found = sources(body);
  if (found.length === 0) return undefined;
  if (found.length > 1) {
    throw badRequest(`only one structured-output constraint per request; got ${found.map((s) => s.field).join(' and ')}`, found[1]!.field);
  }
  const constraint = found[0]!.lower();
  if (toolsActive) {
    throw badRequest(`${found[0]!.field} cannot be combined with tool calls (tools with tool_choice other than none)`, found[0]!.field);
  }
  refuseConflicts(body);
  return constraint;
}

/** After the grammar completes only end-of-sequence is allowed, which these would forbid. */
function refuseConflicts(others: Others): void {
  if (others.ignore_eos === true) throw badRequest('ignore_eos cannot be combined with a structured-output constraint', 'ignore_eos');
  if ((others.min_tokens ?? 0) > 0) throw badRequest('min_tokens cannot be combined with a structured-output constraint', 'min_tokens');
}

/** /v1/responses' text.format (name, description, strict: labels, as response_format's). */
export function textFormatConstraint(
  format: { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; schema: unknown } | null | undefined,
  others: Others,
): Constraint | undefined {
  if (!format || format.type === 'text') return undefined;
  const constraint: Constraint = format.type === 'json_object' ? { kind: 'json_object', param: 'text.format' } : jsonSchema(format.schema, 'text.format.schema');
  refuseConflicts(others);
  return constraint;
}
