// One streamed reply: builds the OpenAI request from a conversation and fills the reply message as
// chunks arrive, measuring what is shown under it (TTFT, tokens/s, token counts).
// Contract: streamReply never throws; failures end up in reply.error, a user stop in reply.stopped.

import { ApiError, type Api, type ChatBody } from './api.js';
import type { Attachment, Conversation, Message } from './store.js';

/** A user message as the model sees it: each attached file in a fence longer than any backtick run inside it. */
export function messageText(m: Message): string {
  const files = (m.files ?? []).map(fileBlock);
  return [...files, m.content].filter((s) => s.length > 0).join('\n\n');
}

function fileBlock(f: Attachment): string {
  const longest = Math.max(2, ...[...f.text.matchAll(/`+/g)].map((r) => r[0].length));
  const fence = '`'.repeat(longest + 1);
  const lang = /\.([A-Za-z0-9]{1,10})$/.exec(f.name)?.[1]?.toLowerCase() ?? '';
  return `File: ${f.name}\n${fence}${lang}\n${f.text}\n${fence}`;
}

/** The request for `reply` (which must be the conversation's last message): everything before it. */
export function chatBody(c: Conversation, reply: Message): ChatBody {
  const history = c.messages.slice(0, c.messages.indexOf(reply));
  const messages: ChatBody['messages'] = c.system.trim() ? [{ role: 'system', content: c.system }] : [];
  for (const m of history) {
    // Failed replies with no text are not part of the dialogue the model should continue.
    if (m.role === 'assistant' && !m.content) continue;
    messages.push({ role: m.role, content: m.role === 'user' ? messageText(m) : m.content });
  }
  const body: ChatBody = { messages };
  if (c.params.temperature !== null) body.temperature = c.params.temperature;
  if (c.params.top_p !== null) body.top_p = c.params.top_p;
  if (c.params.max_tokens !== null) body.max_tokens = c.params.max_tokens;
  return body;
}

export interface StreamHooks {
  /** New text arrived in reply.content. */
  onText(): void;
  /** The server answered 401: the key is missing or wrong. */
  onUnauthorized(): void;
}

export async function streamReply(api: Api, c: Conversation, reply: Message, signal: AbortSignal, hooks: StreamHooks, now = () => performance.now()): Promise<void> {
  const t0 = now();
  let tFirst: number | null = null;
  let usage: { prompt_tokens: number; completion_tokens: number } | null = null;
  reply.pending = true;
  try {
    for await (const chunk of api.chat(chatBody(c, reply), signal)) {
      if (chunk.error) {
        reply.error = chunk.error.message;
        break;
      }
      const text = chunk.choices?.[0]?.delta?.content ?? '';
      if (text) {
        tFirst ??= now();
        reply.content += text;
        hooks.onText();
      }
      if (chunk.usage) usage = chunk.usage;
      // Breaking out cancels the body (closing the connection) even where a read would not reject.
      if (signal.aborted) {
        reply.stopped = true;
        break;
      }
    }
  } catch (err) {
    if (signal.aborted) reply.stopped = true;
    else if (err instanceof ApiError) {
      reply.error = err.message;
      if (err.status === 401) hooks.onUnauthorized();
    } else reply.error = (err as Error).message || String(err);
  } finally {
    reply.pending = false;
  }
  const tEnd = now();
  const n = usage?.completion_tokens ?? null;
  reply.stats = {
    ttftMs: tFirst === null ? null : Math.round(tFirst - t0),
    // Decode speed: tokens after the first over the time after the first.
    tokensPerSec: n !== null && n > 1 && tFirst !== null && tEnd > tFirst ? ((n - 1) * 1000) / (tEnd - tFirst) : null,
    promptTokens: usage?.prompt_tokens ?? null,
    completionTokens: n,
  };
}
