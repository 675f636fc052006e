// POST /tokenize and POST /detokenize — vLLM's shapes:
//   {model?, prompt | messages, add_special_tokens?, add_generation_prompt?, return_token_strs?,
//    tools?, chat_template?, chat_template_kwargs? (messages: rendered as chat completions render them)}
//     → {count, max_model_len, tokens, token_strs (the tokenizer's pieces; only when asked)}
//     (more than SLICE ids: the same JSON, written in slices: ../json-slices.ts)
//   {model?, tokens} → {prompt}

import { readValidBody } from '../body.js';
import { toEngineMessage } from '../chat-messages.js';
import { resolveModel, type AppContext, type RouteDeps } from '../deps.js';
import { badRequest } from '../errors.js';
import { SLICE, slicedJsonBody, type SlicedArray } from '../json-slices.js';
import { checkTools, toolDefinitions } from '../tools/plan.js';
import { chatTemplateInputs } from '../tools/prompt.js';

export function tokenizeHandler(deps: RouteDeps) {
  return async (c: AppContext) => {
    const body = await readValidBody(c.req.raw, deps.maxBodyBytes, 'tokenize', deps.parseLargeBody);
    await resolveModel(c.var.engine, deps, body.model);
    const chat = 'messages' in body;
    const returnTokenStrs = body.return_token_strs === true;
    const messages = chat ? body.messages.map(toEngineMessage) : undefined;
    if (chat) checkTools(toolDefinitions(body.tools)); // the same checks of tools as chat completions
    const { tokens, maxModelLen, tokenStrs } = await c.var.engine.tokenize({
      prompt: chat ? undefined : body.prompt,
      messages,
      ...(chat ? chatTemplateInputs(body, messages!, deps.tools.parser) : {}),
      addSpecialTokens: body.add_special_tokens ?? true,
      addGenerationPrompt: chat ? (body.add_generation_prompt ?? true) : false,
      ...(returnTokenStrs ? { returnTokenStrs } : {}),
    });
    if (returnTokenStrs && tokenStrs?.length !== tokens.length) throw new Error('the engine returned no token strings');
    const head = { count: tokens.length, max_model_len: maxModelLen };
    if (tokens.length <= SLICE) return c.json({ ...head, tokens: Array.from(tokens), ...(returnTokenStrs ? { token_strs: tokenStrs } : {}) });
    // Millions of ids: written in slices between other requests' I/O (./json-slices.ts).
    const arrays: SlicedArray[] = [{ key: 'tokens', ids: tokens }];
    if (returnTokenStrs) arrays.push({ key: 'token_strs', strings: tokenStrs! });
    return c.body(slicedJsonBody(head, arrays), 200, { 'content-type': 'application/json' });
  };
}

export function detokenizeHandler(deps: RouteDeps) {
  return async (c: AppContext) => {
    const body = await readValidBody(c.req.raw, deps.maxBodyBytes, 'detokenize', deps.parseLargeBody);
    const { info } = await resolveModel(c.var.engine, deps, body.model);
    const bad = body.tokens.find((t) => t >= info.vocabSize);
    if (bad !== undefined) {
      throw badRequest(`token id ${bad} is out of vocabulary (size ${info.vocabSize})`, 'tokens');
    }
    return c.json(await c.var.engine.detokenize(body.tokens));
  };
}
