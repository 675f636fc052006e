// A Constraint (src/protocol/engine-client.ts) as the grammar xgrammar compiles: the call and its text.
// Its `key` names the compiled grammar in the caches (the same source compiles to the same grammar).
// - json_schema: compact JSON (no whitespace between tokens, one line), properties and items limited
//   to the schema's (xgrammar's strict mode, as OpenAI's strict structured outputs);
// - json_object: any JSON object (the schema {"type": "object"} without strict mode);
// - regex: xgrammar's regex format, inside a structural tag (the web build has no regex entry point);
// - choice: an EBNF alternation of the choices as JSON-escaped string literals (xgrammar's EBNF
//   literals take JSON's escapes);
// - grammar: the EBNF as given (root rule `root`); structural_tag: the tag's JSON as given.
// Before it is compiled, a source goes through ./compile-lowering.ts (what xgrammar gets wrong is
// lowered into what it gets right).
// NOTE: compact JSON, not vLLM's default any-whitespace: a model free to emit whitespace between
// tokens can fill max_tokens with it (a sampled model does), and the output no longer parses.
import { EngineError, type Constraint } from '../../protocol/engine-client.js';
import type { CompiledGrammar as Compiled, Grammar, GrammarCompiler as Compiler } from '@mlc-ai/web-xgrammar';
import { checkJsonSchema } from '../../protocol/json-schema-check.js';
import { jsonSafeStrings } from './schema-strings.js';
import type { XgrammarModule } from './xgrammar.js';

export type GrammarSource =
  | { kind: 'json_schema'; text: string }
  | { kind: 'ebnf'; text: string }
  | { kind: 'structural_tag'; text: string };

export const SEPARATORS: [string, string] = [',', ':'];

/**
 * The source of a constraint. Throws EngineError INVALID_REQUEST naming `c.param` for a JSON Schema
 * (alone or inside a structural tag) that xgrammar would not enforce (./schema-check.ts); its
 * length-bounded strings become JSON-safe patterns (./schema-strings.ts).
 */
export function grammarSource(c: Constraint): GrammarSource {
  switch (c.kind) {
    case 'json_schema':
      return { kind: 'json_schema', text: refusedAs('the JSON schema', () => enforcedSchema(c.schema, c.param)) };
    case 'json_object':
      return { kind: 'json_schema', text: '{"type":"object"}' };
    case 'regex':
      return { kind: 'structural_tag', text: JSON.stringify({ type: 'structural_tag', format: { type: 'regex', pattern: c.pattern } }) };
    case 'choice':
      return { kind: 'ebnf', text: `root ::= ${c.choices.map((s) => JSON.stringify(s)).join(' | ')}` };
    case 'grammar':
      return { kind: 'ebnf', text: c.ebnf };
    case 'structural_tag':
      return { kind: 'structural_tag', text: refusedAs('the structural tag', () => enforcedTag(c.tag, c.param)) };
  }
}

/** A refusal worded as the pool words a compile error ("the JSON schema does not compile: …"). */
function refusedAs<T>(what: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof EngineError) throw new EngineError(e.code, `${what} does not compile: ${e.message}`, e.param);
    throw e;
  }
}

/** A schema's JSON text, checked and with JSON-safe strings. */
function enforcedSchema(text: string, param: string): string {
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch {
    throw new EngineError('INVALID_REQUEST', `${param}: the schema is not valid JSON`, param);
  }
  checkJsonSchema(schema, param);
  return JSON.stringify(jsonSafeStrings(schema));
}

/**
 * A structural tag's JSON text with each schema in it checked and with JSON-safe strings: contents
 * {"type": "json_schema", "json_schema": …} (format API) and {"begin", "schema", "end"} (legacy).
 * Text that is not JSON is returned as is: compiling it reports why.
 */
function enforcedTag(text: string, param: string): string {
  let tag: unknown;
  try {
    tag = JSON.parse(text);
  } catch {
    return text;
  }
  const visit = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(visit);
    if (typeof v !== 'object' || v === null) return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      try {
        out[k] = visit(x);
      } catch (e) {
        // Say which tag's content was refused (a tool call's tag begins with the tool's name).
        if (e instanceof EngineError && typeof out.begin === 'string' && k === 'content') throw new EngineError(e.code, `${e.message}, in the tag that begins ${JSON.stringify(out.begin)}`, e.param);
        throw e;
      }
    }
    const schemaKey = out.type === 'json_schema' && 'json_schema' in out ? 'json_schema' : 'begin' in out && 'schema' in out ? 'schema' : null;
    if (schemaKey) {
      checkJsonSchema(out[schemaKey], param);
      out[schemaKey] = jsonSafeStrings(out[schemaKey]);
    }
    return out;
  };
  return JSON.stringify(visit(tag));
}

export function sourceKey(s: GrammarSource): string {
  return `${s.kind}\u0000${s.text}`;
}

/** Strict mode (no properties or items beyond the schema's) for a schema, not for json_object. */
export function strict(s: GrammarSource): boolean {
  return s.text !== '{"type":"object"}';
}

/** Compiles against a compiler's tokenizer (the expensive part: the token mask caches). Throws on a bad source. */
export function compileSource(compiler: Compiler, s: GrammarSource): Promise<Compiled> {
  switch (s.kind) {
    case 'json_schema':
      return compiler.compileJSONSchema(s.text, false, -1, SEPARATORS, strict(s));
    case 'ebnf':
      return compiler.compileGrammar(s.text);
    case 'structural_tag':
      return compiler.compileStructuralTag(parseTag(s.text));
  }
}

/** Parses the source into a grammar only (no tokenizer, cheap): how a bad source is found. Throws. */
export async function parseSource(xg: XgrammarModule, s: GrammarSource): Promise<void> {
  let g: Grammar;
  switch (s.kind) {
    case 'json_schema':
      g = await xg.Grammar.fromJSONSchema(s.text, false, -1, SEPARATORS, strict(s));
      break;
    case 'ebnf':
      g = await xg.Grammar.fromEBNF(s.text);
      break;
    case 'structural_tag':
      g = await xg.Grammar.fromStructuralTag(parseTag(s.text));
      break;
  }
  g.dispose();
}

export function parseTag(text: string): Record<string, unknown> {
  let tag: unknown;
  try {
    tag = JSON.parse(text);
  } catch (e) {
    throw new Error(`the structural tag is not JSON: ${(e as Error).message}`);
  }
  if (typeof tag !== 'object' || tag === null || Array.isArray(tag)) throw new Error('the structural tag must be a JSON object');
  return tag as Record<string, unknown>;
}
