// Request schemas (zod). Unknown fields are stripped (ignored), like OpenAI and vLLM. Ranges follow
// OpenAI's documented limits where it has them; the per-request limits the engine enforces too come from
// src/protocol/limits.ts; checks that need the model (vocab size, max_model_len) live in ./sampling.ts.

import { z } from 'zod';
import { MAX_CHAT_MESSAGES, MAX_LOGPROBS, MAX_N } from '../protocol/limits.js';
import { structuredOutputFields } from './structured-output.js';

const int = (min: number, max: number) => z.number().int().min(min).max(max);
const num = (min: number, max: number) => z.number().min(min).max(max);
const opt = <T extends z.ZodType>(t: T) => t.nullish();

export const MAX_PROMPTS = 32;
export const MAX_STOP_STRINGS = 16;
const MAX_TOKEN_ID = 2 ** 31 - 1;

/**
 * Fields of OpenAI's or vLLM's API that this server does not implement. Unknown fields are stripped,
 * so without these a client sending one would believe it got what it asked for: each is refused with
 * a 400 naming it, unless it carries its no-op value (null, or the default listed here).
 */
const NOT_IMPLEMENTED = {
  // vLLM's whitespace override for structured outputs (./structured-output.ts has the rest); OpenAI's legacy function calling
  guided_whitespace_pattern: null, functions: null, function_call: null,
  // vLLM sampling / prompt extras
  use_beam_search: false, length_penalty: null, include_stop_str_in_output: false, spaces_between_special_tokens: true,
  truncate_prompt_tokens: null, allowed_token_ids: null, bad_words: null, prompt_embeds: null, logits_processors: null,
  documents: null, mm_processor_kwargs: null, priority: 0,
  // OpenAI extras that change the output
  prediction: null, audio: null, modalities: null, reasoning_effort: null, web_search_options: null,
} as const;
const notImplemented = Object.fromEntries(
  Object.entries(NOT_IMPLEMENTED).map(([name, noop]) => [
    name,
    z
      .unknown()
      .refine((v) => v === null || v === noop || (name === 'modalities' && isTextOnly(v)), { message: `${name} is not supported by this server` })
      .optional(),
  ]),
) as { [K in keyof typeof NOT_IMPLEMENTED]: z.ZodOptional<z.ZodUnknown> };
function isTextOnly(v: unknown): boolean {
  return Array.isArray(v) && v.every((m) => m === 'text');
}
/** Field names refused by every generation route (the README's support table lists them). */
export const NOT_IMPLEMENTED_FIELDS: readonly string[] = Object.keys(NOT_IMPLEMENTED);

const streamOptions = z.object({
  include_usage: opt(z.boolean()),
  continuous_usage_stats: opt(z.boolean()),
});

/**
 * logit_bias: keys must be token ids, checked on the raw object: zod's record drops a `__proto__` key
 * without a word (its prototype-pollution guard), which accepted and ignored it. Ranges (value −100..100,
 * id < vocab size) are sampling.ts's.
 */
const logitBias = z.preprocess((v, ctx) => {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const bad = Object.keys(v).find((k) => !/^\d{1,10}$/.test(k));
    if (bad !== undefined) ctx.addIssue({ code: 'custom', message: `key '${bad.slice(0, 32)}' is not a token id (an integer ≥ 0)`, input: v });
  }
  return v;
}, z.record(z.string(), z.number()));

/** Fields shared by /v1/chat/completions and /v1/completions. */
const common = {
  model: opt(z.string().max(512)),
  n: opt(int(1, MAX_N)),
  // Below GREEDY_TEMPERATURE (1e-5, vLLM's) it means greedy, as 0 does (sampling.ts).
  temperature: opt(num(0, 2)),
  top_p: opt(z.number().gt(0).max(1)),
  top_k: opt(int(-1, MAX_TOKEN_ID)),
  min_p: opt(num(0, 1)),
  frequency_penalty: opt(num(-2, 2)),
  presence_penalty: opt(num(-2, 2)),
  repetition_penalty: opt(z.number().gt(0).max(10)),
  logit_bias: opt(logitBias),
  seed: opt(z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER)),
  stop: opt(z.union([z.string().max(1024), z.array(z.string().max(1024)).max(MAX_STOP_STRINGS)])),
  stop_token_ids: opt(z.array(int(0, MAX_TOKEN_ID)).max(64)),
  max_tokens: opt(int(1, MAX_TOKEN_ID)),
  stream: opt(z.boolean()),
  stream_options: opt(streamOptions),
  user: opt(z.string().max(1024)),
  // vLLM extensions
  ignore_eos: opt(z.boolean()),
  skip_special_tokens: opt(z.boolean()),
  return_tokens_as_token_ids: opt(z.boolean()),
  min_tokens: opt(int(0, MAX_TOKEN_ID)),
  prompt_logprobs: opt(int(0, MAX_LOGPROBS)),
  return_token_ids: opt(z.boolean()),
  // response_format, structured_outputs, guided_*: lowered to a grammar constraint by ./structured-output.ts
  ...structuredOutputFields,
  ...notImplemented,
};

/** The shared fields, for routes that take a subset of them (/v1/responses: ./responses/schema.ts). */
export const commonRequestFields = common;

const textPart = z.object({ type: z.literal('text'), text: z.string() });
/** Tool names as OpenAI allows them, plus '.' and ':' (namespaced MCP tools); the name lands in call markup JSON-quoted. */
const toolName = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1 to 64 letters, digits, _ . : or -');
export const MAX_TOOLS = 128;
const chatTools = opt(
  z
    .array(
      z.object({
        type: z.literal('function'),
        function: z.object({ name: toolName, description: opt(z.string().max(16_384)), parameters: opt(z.record(z.string(), z.unknown())), strict: opt(z.boolean()) }),
      }),
    )
    .max(MAX_TOOLS),
);
const toolCallIn = z.object({
  id: z.string().max(256),
  type: z.literal('function'),
  function: z.object({ name: z.string().max(256), arguments: z.string() }),
});
export const chatMessageSchema = z
  .object({
    role: z.enum(['system', 'user', 'assistant', 'developer', 'tool'], {
      error: (iss) => (iss.input === 'function' ? "role 'function' (OpenAI's legacy function calling) is not supported: send role 'tool' with tool_call_id" : undefined),
    }),
    // null is allowed for assistant turns (OpenAI sends it alongside tool_calls); absent only with tool_calls.
    content: z.union([z.string(), z.array(textPart).max(1024)]).nullish(),
    name: opt(z.string().max(256)),
    tool_calls: opt(z.array(toolCallIn).max(MAX_TOOLS)),
    tool_call_id: opt(z.string().max(256)),
    // The legacy assistant turn: stripped as an unknown field, the call would vanish from the history.
    function_call: z
      .unknown()
      .refine((v) => v === null, { message: "function_call (OpenAI's legacy function calling) is not supported: send tool_calls" })
      .optional(),
  })
  .refine((m) => m.content !== undefined || (m.role === 'assistant' && m.tool_calls != null), { message: 'content is required', path: ['content'] });
export type ChatMessageIn = z.infer<typeof chatMessageSchema>;

export const chatRequestSchema = z.object({
  ...common,
  messages: z.array(chatMessageSchema).min(1).max(MAX_CHAT_MESSAGES),
  max_completion_tokens: opt(int(1, MAX_TOKEN_ID)),
  logprobs: opt(z.boolean()),
  top_logprobs: opt(int(0, MAX_LOGPROBS)),
  tools: chatTools,
  tool_choice: opt(z.union([z.enum(['none', 'auto', 'required']), z.object({ type: z.literal('function'), function: z.object({ name: z.string().max(256) }) })])),
  parallel_tool_calls: opt(z.boolean()),
  // vLLM: the request's own template (with --trust-request-chat-template) and extra template variables.
  chat_template: opt(z.string().max(262_144)),
  chat_template_kwargs: opt(z.record(z.string(), z.unknown())),
  add_generation_prompt: opt(z.boolean()),
  // vLLM extensions
  echo: opt(z.boolean()),
  continue_final_message: opt(z.boolean()),
});
export type ChatRequest = z.infer<typeof chatRequestSchema>;

/** A non-empty list of integers in [0, 2^31). */
export const isTokenIdList = (v: unknown): v is number[] => {
  if (!Array.isArray(v) || v.length === 0) return false;
  for (const x of v) if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x > MAX_TOKEN_ID) return false;
  return true;
};
// NOTE: one loop instead of z.array(int(…)): zod parses each element as its own schema, which made a
// token-id prompt cost about a hundred times more to validate than to JSON-parse, on every request's
// way to its first token. The description is what the README's API table shows (scripts/gen-readme-api.ts).
const tokenIds = z.custom<number[]>(isTokenIdList, { message: 'expected a non-empty list of token ids (integers in [0, 2^31))' }).describe('list of integer ≥ 0');
export const completionRequestSchema = z.object({
  ...common,
  // NOTE: the token-id forms before the list of strings: a union tries its options in order and takes
  // the first that passes, and a list of strings tried on a token-id prompt failed each id as its own
  // issue (hundreds of issue objects) on the way to the first token, several times the cost of the
  // rest of the body's validation. The id lists fail a list of strings at its first element.
  prompt: z.union([
    z.string(),
    tokenIds,
    z.array(tokenIds).min(1).max(MAX_PROMPTS),
    z.array(z.string()).min(1).max(MAX_PROMPTS),
  ]),
  // 0 only with echo (the prompt and its logprobs: what evaluation harnesses score), as vLLM.
  max_tokens: opt(int(0, MAX_TOKEN_ID)),
  echo: opt(z.boolean()),
  logprobs: opt(int(0, MAX_LOGPROBS)),
  suffix: opt(z.string().max(0, 'suffix is not supported by this server')),
  best_of: opt(int(1, MAX_N)),
});
export type CompletionRequest = z.infer<typeof completionRequestSchema>;

export const tokenizeRequestSchema = z.union([
  z.object({
    model: opt(z.string().max(512)),
    prompt: z.string(),
    add_special_tokens: opt(z.boolean()),
    return_token_strs: opt(z.boolean()),
  }),
  z.object({
    model: opt(z.string().max(512)),
    messages: z.array(chatMessageSchema).min(1).max(MAX_CHAT_MESSAGES),
    add_special_tokens: opt(z.boolean()),
    add_generation_prompt: opt(z.boolean()),
    return_token_strs: opt(z.boolean()),
    // As chat completions render them (vLLM's /tokenize takes the same).
    tools: chatTools,
    chat_template: opt(z.string().max(262_144)),
    chat_template_kwargs: opt(z.record(z.string(), z.unknown())),
  }),
]);
export type TokenizeBody = z.infer<typeof tokenizeRequestSchema>;

export const detokenizeRequestSchema = z.object({
  model: opt(z.string().max(512)),
  tokens: z.array(int(0, MAX_TOKEN_ID)).max(1_000_000),
});
