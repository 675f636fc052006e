// Responses input → the engine's chat messages, and what the store keeps to continue a conversation.
//
// A request's prompt is: its `instructions` as a system message (not carried over from a previous
// response, as OpenAI documents), then the stored conversation of `previous_response_id` (its input
// turns and its output), then this request's input. `developer` becomes `system` (chat-messages.ts).

import type { ChatMessage } from '../../protocol/engine-client.js';
import { engineRole } from '../chat-messages.js';
import { badRequest } from '../errors.js';
import type { MessageItem, ResponsesRequest } from './schema.js';
import type { ResponseObject } from './shapes.js';

/** What the sidecar's store holds per response id (as JSON). */
export interface StoredResponse {
  response: ResponseObject;
  /** The turns this response answered (previous conversation + its input), without instructions. */
  input: ChatMessage[];
  /** Its output text: the assistant turn a follow-up continues from. */
  outputText: string;
}

export function inputMessages(input: ResponsesRequest['input']): ChatMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  return input.map(toMessage);
}

function toMessage(m: MessageItem): ChatMessage {
  const content = typeof m.content === 'string' ? m.content : m.content.map((p) => (p.type === 'refusal' ? p.refusal : p.text)).join('');
  return { role: engineRole(m.role), content };
}

/** The turns before this request's own input: the previous response's conversation and answer. */
export function history(previous: StoredResponse | null): ChatMessage[] {
  if (!previous) return [];
  return [...previous.input, { role: 'assistant', content: previous.outputText }];
}

/**
 * Items that are not messages (function calls, item references, reasoning) and content that is not
 * text (images, files, audio) get a 400 naming what was sent, before the schema's generic message.
 */
export function checkInputKinds(body: unknown): void {
  const input = (body as { input?: unknown } | null)?.input;
  if (!Array.isArray(input)) return;
  input.forEach((item: unknown, i) => {
    const type = (item as { type?: unknown } | null)?.type;
    if (typeof type === 'string' && type !== 'message') {
      throw badRequest(`input items of type '${type.slice(0, 64)}' are not supported by this server (messages only)`, `input[${i}].type`);
    }
    const content = (item as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) return;
    content.forEach((part: unknown, j) => {
      const t = (part as { type?: unknown } | null)?.type;
      if (typeof t === 'string' && !['input_text', 'output_text', 'refusal'].includes(t)) {
        throw badRequest(`content of type '${t.slice(0, 64)}' is not supported: this model reads text only`, `input[${i}].content[${j}].type`);
      }
    });
  });
}
