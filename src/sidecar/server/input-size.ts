// Size checks on a request's text, made before anything is tokenized or rendered (issue #26: one
// client's megabytes must not cost the sidecar seconds only to end in a 400). Sizes are counted in
// UTF-16 code units (String#length: free to read, and never more than the UTF-8 bytes).
//
// - Message count: MAX_CHAT_MESSAGES (src/protocol/limits.ts).
// - Text: MAX_INPUT_CHARS for anything tokenized (/tokenize included).
// - Generation: a prompt that cannot fit max_model_len whatever the tokenizer does. No token covers
//   more than `maxTokenBytes` bytes, so a text of B bytes encodes to at least B / maxTokenBytes tokens.

import { EngineError, type ChatMessage, type Prompt } from '../../protocol/engine-client.js';
import { MAX_CHAT_MESSAGES, MAX_INPUT_CHARS } from '../../protocol/limits.js';
import type { Tokenizer } from '../tokenizer/types.js';

export interface TextSize {
  chars: number;
  messages: number; // 0 for a plain prompt
}

/** The text a prompt or a /tokenize body carries; non-string content counts as nothing here (checked later). */
export function textSize(p: { text?: string; messages?: readonly ChatMessage[] }): TextSize {
  if (p.messages) {
    let chars = 0;
    for (const m of p.messages) chars += typeof m?.content === 'string' ? m.content.length : 0;
    return { chars, messages: p.messages.length };
  }
  return { chars: typeof p.text === 'string' ? p.text.length : 0, messages: 0 };
}

export function promptSize(p: Prompt): TextSize {
  if (p.kind === 'chat') {
    // The tool fallback (tools described in a system block) is what gets tokenized when the template
    // ignores tools: the larger of the two conversations counts.
    const size = textSize({ messages: p.messages });
    const fallback = p.toolFallback ? textSize({ messages: p.toolFallback }) : size;
    return fallback.chars > size.chars ? { chars: fallback.chars, messages: size.messages } : size;
  }
  if (p.kind === 'text') return textSize({ text: p.text });
  return { chars: 0, messages: 0 };
}

/** Throws INVALID_REQUEST (HTTP 400) when the text is past the limits any tokenized input has. */
export function checkTextSize(size: TextSize, param: string): void {
  if (size.messages > MAX_CHAT_MESSAGES) {
    throw new EngineError('INVALID_REQUEST', `A chat may have at most ${MAX_CHAT_MESSAGES} messages; this one has ${size.messages}.`, 'messages');
  }
  if (size.chars > MAX_INPUT_CHARS) {
    throw new EngineError('INVALID_REQUEST', `The ${param} has ${size.chars} characters; at most ${MAX_INPUT_CHARS} are tokenized per request.`, param);
  }
}

/** Throws INVALID_REQUEST when a generation prompt of this size can never fit max_model_len. */
export function checkPromptFits(size: TextSize, param: string, maxModelLen: number, maxTokenBytes: number): void {
  const atLeast = Math.ceil(size.chars / maxTokenBytes);
  if (atLeast < maxModelLen) return;
  throw new EngineError(
    'INVALID_REQUEST',
    `This model's maximum context length is ${maxModelLen} tokens. However, the ${param} has ${size.chars} characters, ` +
      `which encode to at least ${atLeast} tokens (no token covers more than ${maxTokenBytes} bytes). Please reduce the length of the ${param}.`,
    param,
  );
}

/** The most bytes one token id decodes to (at least 1): the bound checkPromptFits relies on. */
export function maxTokenBytes(tokenizer: Tokenizer): number {
  let most = 1;
  for (let id = 0; id < tokenizer.size; id++) most = Math.max(most, tokenizer.tokenBytes(id).length);
  return most;
}
