// Tool-call parsers: how a model writes a function call in text, named by --tool-call-parser (vLLM's
// flag and names). A parser knows its call markup in both directions: the structural tag that
// constrains generation to valid calls (./lowering.ts), the incremental scanner that reads calls back
// out of generated text (./call-stream.ts), and how a template that ignores tools is told about them
// and shown earlier calls and results (./prompt.ts). Add one: implement ToolCallParser, register it below.

import type { ChatMessage, ToolDefinition } from '../../protocol/engine-client.js';
import { hermesParser } from './hermes.js';

/** One step of a call body scanner: the call's name once known, argument text as it comes, the end. */
export type BodyEvent = { type: 'name'; name: string } | { type: 'arguments'; text: string } | { type: 'end' } | { type: 'invalid' };

/** Reads one call's body (the text between `start` and `end`), a character at a time. */
export interface CallBodyScanner {
  /** Events for `ch`; after `end` or `invalid` it is not fed again. */
  push(ch: string): BodyEvent[];
}

/** xgrammar's structural-tag `tag` format (its structural_tag.d.ts): begin, constrained content, end. */
export interface TagFormat {
  type: 'tag';
  begin: string;
  content: { type: 'json_schema'; json_schema: Record<string, unknown> };
  end: string;
}

export interface ToolCallParser {
  readonly name: string;
  /** Opens a call; xgrammar's trigger for tool_choice auto. Text before it is content. */
  readonly start: string;
  /** Closes a call. */
  readonly end: string;
  /** The tag one call of `name` with arguments valid against `parameters` must match (begins with `start`). */
  callTag(name: string, parameters: Record<string, unknown>): TagFormat;
  /** What separates calls when only calls are allowed (tool_choice required). */
  readonly separator: string;
  newBodyScanner(): CallBodyScanner;
  /** The markup of one call, as the model would write it (earlier calls in the fallback history). */
  formatCall(name: string, args: string): string;
  /** One turn with the results of consecutive tool messages (the fallback history). */
  formatResults(results: string[]): ChatMessage;
  /** The system block that describes the tools and the call format (the fallback's). */
  systemPrompt(tools: readonly ToolDefinition[]): string;
}

const PARSERS: ReadonlyMap<string, ToolCallParser> = new Map([[hermesParser.name, hermesParser]]);

export const TOOL_CALL_PARSERS: readonly string[] = [...PARSERS.keys()];
export const DEFAULT_TOOL_CALL_PARSER = hermesParser.name;

/** The parser called `name`, or undefined. */
export function toolCallParser(name: string): ToolCallParser | undefined {
  return PARSERS.get(name);
}
