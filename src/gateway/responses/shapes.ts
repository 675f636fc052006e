// The Response object and its pieces, in OpenAI's shape and key order (openai-node's
// resources/responses: Response, ResponseOutputMessage, ResponseOutputText, ResponseUsage).
// `output_text` is not sent: the SDKs compute it from `output`.

import type { TokenLogprob } from '../../protocol/engine-client.js';
import { chatLogprobContent } from '../openai-shapes.js';
import type { Usage } from '../progress.js';
import type { ResponsesRequest } from './schema.js';

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** Fixed for the life of one response: what the request asked for, as echoed in every snapshot. */
export interface ResponseHead {
  id: string;
  createdAt: number;
  model: string;
  messageId: string;
  req: ResponsesRequest;
  /** The sampling actually used (defaults applied). */
  temperature: number;
  topP: number;
  store: boolean;
  logprobs: boolean;
}

export type OutputLogprob = ReturnType<typeof chatLogprobContent>[number];

export interface OutputText {
  type: 'output_text';
  annotations: never[];
  logprobs: OutputLogprob[];
  text: string;
}

export interface OutputMessage {
  id: string;
  type: 'message';
  status: 'in_progress' | 'completed' | 'incomplete';
  content: OutputText[];
  role: 'assistant';
}

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export type ResponseObject = ReturnType<typeof responseObject>;

export function outputText(text: string, logprobs: OutputLogprob[]): OutputText {
  return { type: 'output_text', annotations: [], logprobs, text };
}

export function outputMessage(head: ResponseHead, status: OutputMessage['status'], content: OutputText[]): OutputMessage {
  return { id: head.messageId, type: 'message', status, content, role: 'assistant' };
}

export function toLogprobs(lps: TokenLogprob[]): OutputLogprob[] {
  return chatLogprobContent(lps, false);
}

export function responseUsage(u: Usage): ResponseUsage {
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: { cached_tokens: u.prompt_tokens_details.cached_tokens },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.total_tokens,
  };
}

export interface ResponseState {
  status: ResponseStatus;
  output: OutputMessage[];
  usage: ResponseUsage | null;
  error?: { code: string; message: string } | null;
  completedAt?: number | null;
}

export function responseObject(head: ResponseHead, s: ResponseState) {
  const r = head.req;
  return {
    id: head.id,
    object: 'response' as const,
    created_at: head.createdAt,
    status: s.status,
    background: false,
    completed_at: s.completedAt ?? null,
    error: s.error ?? null,
    incomplete_details: s.status === 'incomplete' ? { reason: 'max_output_tokens' as const } : null,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    max_tool_calls: null,
    model: head.model,
    output: s.output,
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: r.previous_response_id ?? null,
    prompt_cache_key: r.prompt_cache_key ?? null,
    reasoning: { effort: null, summary: null },
    safety_identifier: r.safety_identifier ?? null,
    service_tier: 'default' as const,
    store: head.store,
    temperature: head.temperature,
    text: { format: r.text?.format ?? { type: 'text' as const }, verbosity: 'medium' as const },
    tool_choice: r.tool_choice ?? 'auto',
    tools: [] as never[],
    top_logprobs: r.top_logprobs ?? 0,
    top_p: head.topP,
    truncation: 'disabled' as const,
    usage: s.usage,
    user: r.user ?? null,
    metadata: r.metadata ?? {},
  };
}
