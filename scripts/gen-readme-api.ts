// Writes README.md's API support table, generated from the gateway's request schemas
// (src/gateway/schemas.ts): one row per field any route accepts, what each route takes for it (type
// and range, read from the zod schema itself), and fields refused with a 400 (NOT_IMPLEMENTED_FIELDS).
// Only the lines between the marker comments are replaced; test/gateway/readme-api.test.ts fails
// while README.md is stale. Run by `npm run docs`.

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { z } from 'zod';
import { chatRequestSchema, completionRequestSchema, detokenizeRequestSchema, NOT_IMPLEMENTED_FIELDS, tokenizeRequestSchema } from '../src/gateway/schemas.js';

export const README_FILE = fileURLToPath(new URL('../README.md', import.meta.url));
export const START_MARKER = '<!-- api:start: generated from src/gateway/schemas.ts by `npm run docs`; edit there -->';
export const END_MARKER = '<!-- api:end -->';

type Shape = Record<string, z.ZodType>;
const tokenizeShapes = tokenizeRequestSchema.options.map((o) => o.shape as Shape);
/** The routes, in the table's column order; /tokenize's two forms (prompt, messages) are one column. */
const ROUTES: { name: string; shape: Shape }[] = [
  { name: '/v1/chat/completions', shape: chatRequestSchema.shape as Shape },
  { name: '/v1/completions', shape: completionRequestSchema.shape as Shape },
  { name: '/tokenize', shape: Object.assign({}, ...tokenizeShapes) as Shape },
  { name: '/detokenize', shape: detokenizeRequestSchema.shape as Shape },
];

/** What the schema lets through, where it is more than its type, and behaviour a type cannot say. */
const NOTES: Record<string, string> = {
  model: 'must name the served model when given',
  n: 'choices forked from one prefill',
  max_tokens: 'completions: 0 only with `echo` (the prompt and its logprobs, as vLLM)',
  logprobs: 'chat: boolean (with `top_logprobs`); completions: the top-k, the sampled token always among them',
  top_logprobs: 'requires `logprobs: true`',
  stream_options: '`include_usage`; `continuous_usage_stats` (usage on every chunk, only with `include_usage`)',
  echo: 'completions: the prompt (with its logprobs when `logprobs` is set); chat: the last message when it has the reply role (vLLM)',
  prompt_logprobs: 'vLLM: every prompt token\'s logprob, rank and top-k, from the prefill; not with `stream`',
  return_token_ids: 'vLLM: `prompt_token_ids` and `token_ids`',
  return_tokens_as_token_ids: 'vLLM: tokens in logprobs as `token_id:N`',
  continue_final_message: 'vLLM: the reply continues the final message (not with `add_generation_prompt: true`)',
  return_token_strs: 'vLLM: the tokenizer\'s pieces as `token_strs`',
  min_tokens: 'EOS and stop ids banned, stop strings unmatched, until this many tokens (vLLM); at most `max_tokens`',
  best_of: 'must equal `n`',
  logit_bias: 'keys are token ids in [0, vocab), values in [-100, 100]',
  temperature: 'below 1e-5 means greedy (vLLM\'s epsilon)',
  suffix: 'only empty',
  tools: 'function tools; `parameters` must be a JSON Schema (calls are constrained to it); chat: rendered into the prompt (see Tool calling)',
  tool_choice: '`auto` (the default with tools; needs `--enable-auto-tool-choice`), `required`, a named function: calls constrained to be valid; `none`',
  parallel_tool_calls: 'false: at most one call',
  chat_template: "vLLM: the request's own template; refused unless `--trust-request-chat-template`",
  chat_template_kwargs: 'vLLM: extra template variables; not `messages`, `tools`, `add_generation_prompt` or special tokens',
  user: 'accepted as metadata (no effect on the output, as OpenAI)',
  stop: 'never included in the output',
  seed: 'reproducible per seed, alone or batched',
  messages: '`name` is passed to the chat template (ERNIE\'s does not render it, as with vLLM); text parts are joined; assistant `tool_calls` and `tool` messages (`tool_call_id`) are accepted; the legacy `function_call` and role `function` are refused (400)',
  response_format: '`text`, `json_object`, or `json_schema` (enforced exactly, `strict` or not; `name` and `description` are labels); one constraint per request',
  structured_outputs: 'vLLM: exactly one of `json`, `regex`, `choice`, `grammar` (xgrammar EBNF), `json_object`, `structural_tag`; `disable_fallback` accepted (no fallback exists); whitespace options refused',
  guided_json: 'vLLM (older): a JSON Schema, object or JSON text',
  guided_regex: 'vLLM (older): the whole output matches the regex',
  guided_choice: 'vLLM (older): the output is one of the strings',
  guided_grammar: 'vLLM (older): an xgrammar EBNF grammar (root rule `root`)',
  guided_decoding_backend: 'vLLM (older): `xgrammar` or `auto`, the only backend',
};

/** A zod type as a table cell: type and range. */
export function describe(t: z.ZodType): string {
  let s = t as z.ZodType & { def: { type: string }; unwrap?: () => z.ZodType };
  while (s.def.type === 'optional' || s.def.type === 'nullable') s = s.unwrap!() as typeof s;
  const def = s.def as Record<string, unknown> & { type: string; checks?: { _zod: { def: Record<string, unknown> } }[] };
  const checks = (def.checks ?? []).map((c) => c._zod.def);
  switch (def.type) {
    case 'number': {
      const int = checks.some((c) => c.check === 'number_format');
      const lo = checks.find((c) => c.check === 'greater_than');
      const hi = checks.find((c) => c.check === 'less_than');
      const big = (v: unknown) => typeof v === 'number' && v >= 2 ** 31 - 1;
      const range: string[] = [];
      if (lo && !big(-(lo.value as number))) range.push(`${lo.inclusive ? '≥' : '>'} ${String(lo.value)}`);
      if (hi && !big(hi.value)) range.push(`${hi.inclusive ? '≤' : '<'} ${String(hi.value)}`);
      return `${int ? 'integer' : 'number'}${range.length ? ' ' + range.join(', ') : ''}`;
    }
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    case 'literal':
      return (def.values as unknown[]).map((v) => JSON.stringify(v)).join(' or ');
    case 'enum':
      return Object.values(def.entries as Record<string, string>).join(', ');
    case 'record':
      return 'object';
    case 'object': {
      // A variant of a union tagged by a literal `type` shows its tag: {type: "json_schema", json_schema}.
      const shape = (s as unknown as z.ZodObject).shape as Shape;
      const tag = shape.type?.def.type === 'literal' ? `type: ${describe(shape.type)}` : null;
      return `{${Object.keys(shape).map((k) => (k === 'type' && tag ? tag : k)).join(', ')}}`;
    }
    case 'unknown':
      return 'any JSON';
    case 'array': {
      const max = checks.find((c) => c.check === 'max_length');
      if (max?.maximum === 0) return 'empty list';
      return `list of ${describe(def.element as z.ZodType)}`;
    }
    case 'union':
      return [...new Set((def.options as z.ZodType[]).map(describe))].join(' or ');
    case 'custom':
      return s.description ?? 'custom';
    default:
      return def.type;
  }
}

const cell = (text: string) => text.replaceAll('|', '\\|');

export function renderApiTable(): string {
  const refused = new Set(NOT_IMPLEMENTED_FIELDS);
  const fields = [...new Set(ROUTES.flatMap((r) => Object.keys(r.shape)))].filter((f) => !refused.has(f));
  const head = `| field | ${ROUTES.map((r) => `\`${r.name}\``).join(' | ')} | notes |`;
  const rows = fields.map((f) => {
    const cols = ROUTES.map((r) => (r.shape[f] ? describe(r.shape[f]) : '—'));
    return `| \`${f}\` | ${cols.map(cell).join(' | ')} | ${cell(NOTES[f] ?? '')} |`;
  });
  const refusedRow = `| ${[...refused].map((f) => `\`${f}\``).join(', ')} | ${ROUTES.slice(0, 2).map(() => '400').join(' | ')} | — | — | accepted by OpenAI or vLLM, not implemented here: refused with a 400 naming the field rather than ignored |`;
  return [head, `| --- | ${ROUTES.map(() => '---').join(' | ')} | --- |`, ...rows, refusedRow].join('\n');
}

/** `readme` with the text between the markers replaced by the generated table. */
export function withApiTable(readme: string): string {
  const start = readme.indexOf(START_MARKER);
  const end = readme.indexOf(END_MARKER);
  if (start < 0 || end < start) throw new Error(`README.md lacks the markers ${START_MARKER} … ${END_MARKER}`);
  return `${readme.slice(0, start + START_MARKER.length)}\n${renderApiTable()}\n${readme.slice(end)}`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const before = readFileSync(README_FILE, 'utf8');
  const after = withApiTable(before);
  if (after !== before) writeFileSync(README_FILE, after);
  console.log(after === before ? `${README_FILE}: API table already up to date` : `wrote the API table into ${README_FILE}`);
}
