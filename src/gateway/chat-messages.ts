// OpenAI chat messages → the engine's ChatMessage, in one place for /v1/chat/completions, /tokenize and
// /v1/responses. `developer` (OpenAI's newer name for system instructions) becomes `system`, as vLLM and
// llama.cpp map it: chat templates (ERNIE's among them) know system/user/assistant only and would drop
// a developer turn without a word. Text parts are joined without a separator (OpenAI's reading).

import type { ChatMessage } from '../protocol/engine-client.js';
import type { ChatMessageIn } from './schemas.js';

export function engineRole(role: ChatMessage['role']): ChatMessage['role'] {
  return role === 'developer' ? 'system' : role;
}

export function toEngineMessage(m: ChatMessageIn): ChatMessage {
  const content = m.content == null ? '' : typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('');
  const out: ChatMessage = m.name != null ? { role: engineRole(m.role), content, name: m.name } : { role: engineRole(m.role), content };
  // Tool history (assistant calls, tool results): passed on for the template (and the tool fallback).
  if (m.tool_calls?.length) out.tool_calls = m.tool_calls;
  if (m.tool_call_id != null) out.tool_call_id = m.tool_call_id;
  return out;
}
