// A chat request's tools → what the route does with them: the constraint the engine decodes under
// (xgrammar structural tags built from the parser's call markup) and whether the output is read back
// as calls. Every mode generates the parser's markup, so one parser reads all of them:
//   auto      free text; once the model writes the parser's start (the trigger) only a valid call of
//             one of the tools (triggered_tags); needs --enable-auto-tool-choice, as vLLM;
//   required  one or more valid calls and nothing else (tags_with_separator, at_least_one);
//   named     exactly one valid call of that tool;
//   none      no constraint, no parsing: tools only reach the prompt.
// parallel_tool_calls false: at most one call (stop_after_first).

import type { Constraint, ToolDefinition } from '../../protocol/engine-client.js';
import { badRequest } from '../errors.js';
import type { ChatRequest } from '../schemas.js';
import type { TagFormat, ToolCallParser } from './parser.js';
import { checkJsonSchema as checkEnforceable } from '../../protocol/json-schema-check.js';
import { checkJsonSchema } from './schema-check.js';

export interface ToolConfig {
  parser: ToolCallParser;
  /** --enable-auto-tool-choice */
  autoToolChoice: boolean;
}

export interface ToolPlan {
  parser: ToolCallParser;
  constraint: Constraint;
}

/** A function without parameters takes none: the empty object. */
const NO_PARAMETERS = { type: 'object', properties: {}, additionalProperties: false };

/** Checks the request's tools and tool_choice; null when no calls can come (no tools, or tool_choice none). */
export function toolPlan(body: Pick<ChatRequest, 'tools' | 'tool_choice' | 'parallel_tool_calls' | 'response_format'>, cfg: ToolConfig): ToolPlan | null {
  const tools = checkTools(toolDefinitions(body.tools));
  const choice = body.tool_choice ?? (tools.length > 0 ? 'auto' : 'none');
  if (choice === 'none' || (choice === 'auto' && tools.length === 0)) return null;
  if (tools.length === 0) throw badRequest('tool_choice requires tools: none were given', 'tool_choice');
  const parallel = body.parallel_tool_calls ?? true;
  // The sidecar checks the parameters again inside the tag and rewrites their length-bounded strings
  // JSON-safe (src/sidecar/grammar/source.ts).
  const tag = (t: ToolDefinition) => cfg.parser.callTag(t.function.name, t.function.parameters ?? NO_PARAMETERS);
  let format: Record<string, unknown>;
  let param = 'tools';
  if (choice === 'auto') {
    if (!cfg.autoToolChoice) {
      throw badRequest('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', 'tool_choice');
    }
    format = { type: 'triggered_tags', triggers: [cfg.parser.start], tags: tools.map(tag), at_least_one: false, stop_after_first: !parallel };
  } else if (choice === 'required') {
    format = onlyCalls(tools.map(tag), cfg.parser.separator, !parallel);
  } else {
    const i = tools.findIndex((t) => t.function.name === choice.function.name);
    if (i < 0) throw badRequest(`tool_choice names the function '${choice.function.name.slice(0, 64)}', which is not in tools`, 'tool_choice.function.name');
    format = onlyCalls([tag(tools[i]!)], cfg.parser.separator, true);
    param = `tools[${i}].function.parameters`;
  }
  const rf = (body.response_format as { type?: string } | null | undefined)?.type;
  if (rf !== undefined && rf !== 'text') {
    throw badRequest('response_format cannot be combined with tool calls (tools with tool_choice other than none): both would constrain the output', 'response_format');
  }
  return { parser: cfg.parser, constraint: { kind: 'structural_tag', param, tag: JSON.stringify({ type: 'structural_tag', format }) } };
}

function onlyCalls(tags: TagFormat[], separator: string, single: boolean): Record<string, unknown> {
  return { type: 'tags_with_separator', tags, separator, at_least_one: true, stop_after_first: single };
}

/** The request's tools as the protocol carries them (nulls, which the schema allows, left out). */
export function toolDefinitions(tools: ChatRequest['tools']): ToolDefinition[] {
  return (tools ?? []).map(({ function: f }) => ({
    type: 'function',
    function: {
      name: f.name,
      ...(f.description != null ? { description: f.description } : {}),
      ...(f.parameters != null ? { parameters: f.parameters } : {}),
      ...(f.strict != null ? { strict: f.strict } : {}),
    },
  }));
}

/** Unique names, parameters that are JSON Schemas: a 400 naming the place otherwise. */
export function checkTools(tools: readonly ToolDefinition[]): ToolDefinition[] {
  const seen = new Map<string, number>();
  tools.forEach((t, i) => {
    const first = seen.get(t.function.name);
    if (first !== undefined) throw badRequest(`tools[${i}] has the same name as tools[${first}]: '${t.function.name}'`, `tools[${i}].function.name`);
    seen.set(t.function.name, i);
    if (t.function.parameters !== undefined) {
      const param = `tools[${i}].function.parameters`;
      checkJsonSchema(t.function.parameters, param); // the shape, naming the exact place
      checkEnforceable(t.function.parameters, param); // every keyword one the grammar engine enforces
    }
  });
  return [...tools];
}
