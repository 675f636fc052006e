// Prompt → token ids, and the length checks that need them. Bad input is an INVALID_REQUEST EngineError
// naming the offending field (OpenAI's `param`), never an assert.
//
// text:   encoded with special-token strings parsed (as vLLM's completions), plus the tokenizer's
//         prompt wrap (none for ERNIE); chat: the chat template, injection-safe (TokenizerBundle.encodeChat);
// tokens: used exactly as given — only checked to lie inside the MODEL's vocabulary (config.json's
//         vocab_size, which may exceed the tokenizer's: such ids detokenize to '').

import { EngineError, type Prompt } from '../../protocol/engine-client.js';
import type { TokenizerBundle } from '../tokenizer/index.js';

export function promptParam(p: Prompt): string {
  return p.kind === 'chat' ? 'messages' : 'prompt';
}

export function promptIds(p: Prompt, bundle: TokenizerBundle, vocabSize: number): number[] {
  let ids: number[];
  try {
    if (p.kind === 'tokens') ids = p.ids;
    else if (p.kind === 'text') ids = bundle.encodePrompt(p.text);
    else {
      ids = bundle.encodeChat(p.messages, {
        addGenerationPrompt: p.addGenerationPrompt,
        continueFinalMessage: p.continueFinalMessage ?? false,
        tools: p.tools,
        toolFallback: p.toolFallback,
        chatTemplate: p.chatTemplate,
        chatTemplateKwargs: p.chatTemplateKwargs,
      });
    }
  } catch (err) {
    if (err instanceof EngineError) throw err;
    // Template failures (raise_exception in a template, content it rewrites) are the request's fault.
    throw new EngineError('INVALID_REQUEST', (err as Error).message, promptParam(p));
  }
  if (ids.length === 0) throw new EngineError('INVALID_REQUEST', `The ${promptParam(p)} is empty: it encodes to no tokens.`, promptParam(p));
  for (const id of ids) {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new EngineError('INVALID_REQUEST', `token id ${id} is out of vocabulary (size ${vocabSize})`, promptParam(p));
    }
  }
  return ids;
}

/**
 * The number of tokens to generate: maxTokens, or whatever room max_model_len leaves. Rejects prompts
 * that leave no room, with vLLM's message (clients and tests match on its wording).
 */
export function completionBudget(p: Prompt, promptTokens: number, maxTokens: number | null, maxModelLen: number): number {
  // 0: prefill only (the gateway allows it where the prompt's logprobs are the answer, as vLLM's echo).
  if (maxTokens !== null && (!Number.isInteger(maxTokens) || maxTokens < 0)) {
    throw new EngineError('INVALID_REQUEST', `max_tokens must not be negative, got ${maxTokens}`, 'max_tokens');
  }
  if (promptTokens >= maxModelLen || (maxTokens !== null && promptTokens + maxTokens > maxModelLen)) {
    const param = promptParam(p);
    throw new EngineError(
      'INVALID_REQUEST',
      `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${promptTokens + (maxTokens ?? 0)} tokens ` +
        `(${promptTokens} in the ${param}, ${maxTokens ?? 0} in the completion). Please reduce the length of the ${param} or completion.`,
      param,
    );
  }
  return maxTokens ?? maxModelLen - promptTokens;
}
