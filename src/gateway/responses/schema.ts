// POST /v1/responses request schema (OpenAI's ResponseCreateParams, text in and text out) plus vLLM's
// sampling extensions shared with chat (top_k, min_p, repetition_penalty, seed, stop, min_tokens, …).
// text.format json_schema / json_object constrain the output as chat's response_format does.
// Unknown fields are stripped as elsewhere; OpenAI fields this server cannot honour are listed in
// REFUSED and answered with a 400 when they carry a value (never accepted and silently ignored).

import { z } from 'zod';
import { MAX_LOGPROBS } from '../../protocol/limits.js';
import { commonRequestFields as c } from '../schemas.js';

const opt = <T extends z.ZodType>(t: T) => t.nullish();
const MAX_ITEMS = 4096;

const inputText = z.object({ type: z.literal('input_text'), text: z.string() });
// Assistant turns sent back (a previous output item, or the AI SDK's history): annotations and
// logprobs are part of the shape and carry nothing the prompt needs.
const outputText = z.object({ type: z.literal('output_text'), text: z.string(), annotations: opt(z.array(z.unknown())), logprobs: opt(z.array(z.unknown())) });
const refusal = z.object({ type: z.literal('refusal'), refusal: z.string() });
const contentPart = z.discriminatedUnion('type', [inputText, outputText, refusal]);

/** EasyInputMessage, ResponseInputItem.Message and ResponseOutputMessage: one shape for all three. */
export const messageItemSchema = z.object({
  type: opt(z.literal('message')),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(contentPart).max(1024)]),
  id: opt(z.string().max(256)),
  status: opt(z.enum(['in_progress', 'completed', 'incomplete'])),
});
export type MessageItem = z.infer<typeof messageItemSchema>;

const metadata = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, 'metadata may have at most 16 keys');

/** text.format: text, or structured output lowered to a grammar constraint (../structured-output.ts). */
const textFormat = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      name: z.string().min(1).max(256),
      description: opt(z.string()),
      schema: z.unknown().refine((s) => s !== undefined && s !== null, 'schema is required'),
      strict: opt(z.boolean()),
    }),
  ],
  { error: 'text.format.type must be one of text, json_object, json_schema' },
);
export type TextFormat = z.infer<typeof textFormat>;

export const LOGPROBS_INCLUDE = 'message.output_text.logprobs';

export const responsesRequestSchema = z.object({
  model: c.model,
  input: z.union([z.string(), z.array(messageItemSchema).min(1).max(MAX_ITEMS)]),
  instructions: opt(z.string()),
  previous_response_id: opt(z.string().max(256)),
  store: opt(z.boolean()),
  stream: opt(z.boolean()),
  stream_options: opt(z.object({ include_obfuscation: opt(z.literal(false)) })),
  max_output_tokens: c.max_tokens,
  temperature: c.temperature,
  top_p: c.top_p,
  top_logprobs: opt(z.number().int().min(0).max(MAX_LOGPROBS)),
  include: opt(z.array(z.literal(LOGPROBS_INCLUDE)).max(8)),
  metadata: opt(metadata),
  user: c.user,
  safety_identifier: opt(z.string().max(1024)),
  prompt_cache_key: opt(z.string().max(1024)),
  // Trivially honoured without tools (the only tools this server has are none).
  tools: opt(z.array(z.unknown()).max(0, 'tools / function calling are not supported by this server')),
  tool_choice: opt(z.enum(['none', 'auto'])),
  parallel_tool_calls: opt(z.boolean()),
  text: opt(
    z.object({
      format: opt(textFormat),
      verbosity: opt(z.never({ error: 'text.verbosity is not supported by this server' })),
    }),
  ),
  truncation: opt(z.literal('disabled', { error: "truncation: only 'disabled' is supported by this server" })),
  service_tier: opt(z.enum(['auto', 'default'])),
  background: opt(z.literal(false, { error: 'background responses are not supported by this server' })),
  // vLLM's extensions, as in chat.
  top_k: c.top_k,
  min_p: c.min_p,
  frequency_penalty: c.frequency_penalty,
  presence_penalty: c.presence_penalty,
  repetition_penalty: c.repetition_penalty,
  logit_bias: c.logit_bias,
  seed: c.seed,
  stop: c.stop,
  stop_token_ids: c.stop_token_ids,
  ignore_eos: c.ignore_eos,
  skip_special_tokens: c.skip_special_tokens,
  min_tokens: c.min_tokens,
});
export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;

/** OpenAI fields with no honest meaning here: a 400 naming the field when they carry a value. */
export const REFUSED: Record<string, string> = {
  reasoning: 'reasoning is not supported by this model',
  prompt: 'prompt templates are not supported by this server',
  conversation: 'conversations are not supported by this server; use previous_response_id',
  context_management: 'context_management is not supported by this server',
  max_tool_calls: 'tools / function calling are not supported by this server',
  prompt_cache_retention: 'prompt_cache_retention is not supported by this server',
  prompt_cache_options: 'prompt_cache_options is not supported by this server',
};
