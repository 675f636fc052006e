// What a chat prompt brings for the template (protocol ChatTemplateInputs), for chat completions and
// /tokenize alike (the same request renders the same prompt): the tools, the fallback conversation
// for a template that ignores tools (the sidecar picks it: it has the template), the request's
// template and kwargs. The fallback, documented in the README: the tools described in a system block
// (the parser's: the call format with them), earlier calls as the parser's markup at the end of their
// assistant turn, consecutive tool results as one user turn.

import { RESERVED_TEMPLATE_KWARGS, type ChatMessage, type ChatTemplateInputs, type ToolDefinition } from '../../protocol/engine-client.js';
import { badRequest } from '../errors.js';
import type { ChatRequest } from '../schemas.js';
import type { ToolCallParser } from './parser.js';
import { toolDefinitions } from './plan.js';

type Inputs = Pick<ChatRequest, 'tools' | 'chat_template' | 'chat_template_kwargs'>;

export function chatTemplateInputs(body: Inputs, messages: readonly ChatMessage[], parser: ToolCallParser): ChatTemplateInputs {
  const out: ChatTemplateInputs = {};
  const tools = toolDefinitions(body.tools);
  if (tools.length > 0) out.tools = tools;
  if (tools.length > 0 || messages.some((m) => m.role === 'tool' || m.tool_calls)) out.toolFallback = fallbackConversation(messages, tools, parser);
  if (body.chat_template != null) out.chatTemplate = body.chat_template;
  if (body.chat_template_kwargs != null) {
    const bad = Object.keys(body.chat_template_kwargs).find((k) => RESERVED_TEMPLATE_KWARGS.includes(k));
    if (bad !== undefined) throw badRequest(`chat_template_kwargs may not set '${bad}': the server sets it`, 'chat_template_kwargs');
    out.chatTemplateKwargs = body.chat_template_kwargs;
  }
  return out;
}

/** The conversation for a template that knows only system/user/assistant text (see the file note). */
export function fallbackConversation(messages: readonly ChatMessage[], tools: readonly ToolDefinition[], parser: ToolCallParser): ChatMessage[] {
  const out: ChatMessage[] = [];
  let results: string[] = [];
  const flushResults = () => {
    if (results.length > 0) out.push(parser.formatResults(results));
    results = [];
  };
  for (const m of messages) {
    if (m.role === 'tool') {
      results.push(m.content);
      continue;
    }
    flushResults();
    const plain: ChatMessage = m.name !== undefined ? { role: m.role, content: m.content, name: m.name } : { role: m.role, content: m.content };
    if (m.tool_calls?.length) {
      plain.content = [m.content, ...m.tool_calls.map((c) => parser.formatCall(c.function.name, c.function.arguments))].filter((s) => s.length > 0).join('\n');
    }
    out.push(plain);
  }
  flushResults();
  if (tools.length > 0) {
    const block = parser.systemPrompt(tools);
    const first = out[0];
    if (first?.role === 'system') out[0] = { ...first, content: first.content ? `${first.content}\n\n${block}` : block };
    else out.unshift({ role: 'system', content: block });
  }
  return out;
}
