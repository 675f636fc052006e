// What a GrammarSource (./source.ts) becomes before xgrammar compiles it: the same language, in the
// form xgrammar 0.1.27 handles correctly. Runs on the worker's throwaway checker instance (a bad source
// aborts inside WebAssembly; ./worker.ts). Throws with the reason on a source that does not convert.
//  - json_schema: xgrammar's own conversion to EBNF, printed, with enum/const/anyOf-of-literal rules
//    as tries (./literal-tries.ts) and the tails of length-bounded strings given the lookahead that
//    keeps their masks cheap (./string-tail-lookahead.ts), compiled as EBNF;
//  - ebnf (choices, grammars): parsed and printed by xgrammar, literal rules as tries;
//  - structural_tag: a regex (the regex constraint) becomes its printed EBNF, literal rules as tries;
//    otherwise its `json_schema` contents become `grammar` contents holding the compact, strict
//    EBNF of their schema, literal rules as tries (xgrammar's own json_schema format inside a tag
//    allows any whitespace; source.ts's NOTE says why output is compact). Other contents as given.
import type { Grammar } from '@mlc-ai/web-xgrammar';
import { literalTries } from './literal-tries.js';
import { stringTailLookaheads } from './string-tail-lookahead.js';
import { parseTag, SEPARATORS, strict, type GrammarSource } from './source.js';
import type { XgrammarModule } from './xgrammar.js';

/** The printed EBNF of a parsed grammar, literal rules as tries, string tails with lookaheads; disposes of it. */
function printed(g: Grammar): string {
  try {
    return stringTailLookaheads(literalTries(g.toString()));
  } finally {
    g.dispose();
  }
}

export async function lowerSource(xg: XgrammarModule, s: GrammarSource): Promise<GrammarSource> {
  switch (s.kind) {
    case 'json_schema':
      return { kind: 'ebnf', text: printed(await xg.Grammar.fromJSONSchema(s.text, false, -1, SEPARATORS, strict(s))) };
    case 'ebnf':
      return { kind: 'ebnf', text: printed(await xg.Grammar.fromEBNF(s.text)) };
    case 'structural_tag':
      return compactTagSource(xg, s);
  }
}

async function compactTagSource(xg: XgrammarModule, s: GrammarSource): Promise<GrammarSource> {
  const tag = parseTag(s.text);
  const format = tag.format as Record<string, unknown> | undefined;
  // A regex constraint (source.ts): xgrammar's conversion, printed, its literal alternations as tries
  // (`(abcd|abd)` let abccd through).
  if (format?.type === 'regex') return { kind: 'ebnf', text: printed(await xg.Grammar.fromStructuralTag(tag)) };
  if (!s.text.includes('"json_schema"')) return s;
  const rewrite = async (v: unknown): Promise<unknown> => {
    if (Array.isArray(v)) return Promise.all(v.map(rewrite));
    if (typeof v !== 'object' || v === null) return v;
    const o = v as Record<string, unknown>;
    if (o.type === 'json_schema' && 'json_schema' in o) {
      return { type: 'grammar', grammar: printed(await xg.Grammar.fromJSONSchema(JSON.stringify(o.json_schema), false, -1, SEPARATORS, true)) };
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) out[k] = await rewrite(x);
    return out;
  };
  return { kind: 'structural_tag', text: JSON.stringify(await rewrite(tag)) };
}
