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
import type { Constraint } from '../../protocol/engine-client.js';
import type { CompiledGrammar as Compiled, Grammar, GrammarCompiler as Compiler } from '@mlc-ai/web-xgrammar';
import type { XgrammarModule } from './xgrammar.js';

export type GrammarSource =
  | { kind: 'json_schema'; text: string }
  | { kind: 'ebnf'; text: string }
  | { kind: 'structural_tag'; text: string };

export const SEPARATORS: [string, string] = [',', ':'];

export function grammarSource(c: Constraint): GrammarSource {
  switch (c.kind) {
    case 'json_schema':
      return { kind: 'json_schema', text: c.schema };
    case 'json_object':
      return { kind: 'json_schema', text: '{"type":"object"}' };
    case 'regex':
      return { kind: 'structural_tag', text: JSON.stringify({ type: 'structural_tag', format: { type: 'regex', pattern: c.pattern } }) };
    case 'choice':
      return { kind: 'ebnf', text: `root ::= ${c.choices.map((s) => JSON.stringify(s)).join(' | ')}` };
    case 'grammar':
      return { kind: 'ebnf', text: c.ebnf };
    case 'structural_tag':
      return { kind: 'structural_tag', text: c.tag };
  }
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
