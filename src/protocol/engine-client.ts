// The contract between the stateless gateway and the stateful engine sidecar.
//
// Runtime-agnostic: no node:* imports. Implementations: Unix-socket and TCP transports (framed
// protocol, see ./framing.ts), an in-process one (sidecar and gateway in one process) and a fake one
// for gateway tests. Every method is async; there are deliberately no sync twins.

/** Why a choice ended. `abort`: the client went away; `error`: see the accompanying EngineErrorCode. */
export type FinishReason = 'stop' | 'length' | 'abort' | 'error';

/** Error codes an engine reports as values. The gateway maps them to HTTP in exactly one place. */
export type EngineErrorCode =
  | 'INVALID_REQUEST' // bad parameters, prompt past max_model_len, unknown role …
  | 'QUEUE_FULL' //     waiting queue past --max-num-queued-reqs (HTTP 429 + Retry-After)
  | 'NOT_READY' //      model still loading, or draining (HTTP 503)
  | 'ENGINE_DEAD' //    the sidecar died or the connection broke (HTTP 503 / stream error event)
  | 'INTERNAL'; //      a bug: logged loudly (HTTP 500)

export class EngineError extends Error {
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    /** The offending request field, when there is one (OpenAI's `param`). */
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'developer' | 'tool';
  content: string;
  /** Passed to the chat template as `message.name` (whether it renders it is the template's choice). */
  name?: string;
  /** Assistant turns: the calls the assistant made (OpenAI's shape; the template sees them as given,
   * `function.arguments` parsed to an object where it is JSON, as vLLM passes them). */
  tool_calls?: ToolCall[];
  /** Tool turns: the id of the call this message answers. */
  tool_call_id?: string;
}

/** One function call of an assistant turn (OpenAI's `message.tool_calls[]`). */
export interface ToolCall {
  id: string;
  type: 'function';
  /** `arguments`: JSON text, as the model wrote it. */
  function: { name: string; arguments: string };
}

/** A function tool (OpenAI's `tools[]`), as the chat template's `tools` sees it. */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

/** Template variables the render sets itself: chat_template_kwargs may not override them. */
export const RESERVED_TEMPLATE_KWARGS: readonly string[] = ['messages', 'tools', 'documents', 'add_generation_prompt', 'continue_final_message', 'chat_template', 'raise_exception'];

/**
 * What a chat prompt brings for its template beyond the messages:
 * - tools: passed to the template as `tools` (templates that know tools render them);
 * - toolFallback: the same conversation for a template that ignores `tools` (it renders the same with and
 *   without them): the tools described in a system block, calls and results as the tool-call parser's
 *   markup. The gateway builds it (it owns the call format); the sidecar picks it when the template ignores tools;
 * - chatTemplate: the request's own template (only with --trust-request-chat-template);
 * - chatTemplateKwargs: extra template variables (reserved names such as messages are refused).
 */
export interface ChatTemplateInputs {
  tools?: ToolDefinition[];
  toolFallback?: ChatMessage[];
  chatTemplate?: string;
  chatTemplateKwargs?: Record<string, unknown>;
}

/** What to generate from. Token-id prompts are used exactly as given: nothing is prepended. */
export type Prompt =
  | { kind: 'text'; text: string }
  | { kind: 'tokens'; ids: number[] }
  | ({
      kind: 'chat';
      messages: ChatMessage[];
      addGenerationPrompt: boolean;
      /** Generation continues the final message (rendered without its end markers). */
      continueFinalMessage?: boolean;
    } & ChatTemplateInputs);

/** Sampling parameters, already validated and defaulted by the gateway (generation_config.json applied). */
export interface SamplingParams {
  maxTokens: number | null; // null: up to max_model_len
  temperature: number; // 0 = greedy
  topP: number; // 1 = off
  topK: number; // 0 or -1 = off
  minP: number; // 0 = off
  repetitionPenalty: number; // 1 = off
  frequencyPenalty: number; // 0 = off
  presencePenalty: number; // 0 = off
  logitBias: Record<number, number>;
  seed: number | null;
  stop: string[]; // stop strings: never sent to the client
  stopTokenIds: number[]; // in addition to the model's eos ids
  ignoreEos: boolean;
  /** vLLM's min_tokens: stop ids (eos included) and stop strings end no choice before this many tokens. Absent: 0. */
  minTokens?: number;
  logprobs: number | null; // null: none; N: the chosen token plus the top-N alternatives
  skipSpecialTokens: boolean;
  /** null / absent: none; k: each prompt token's logprob (from the 2nd), rank and top-k (vLLM's prompt_logprobs). */
  promptLogprobs?: number | null;
}

export interface SubmitRequest {
  /** Caller-chosen unique id (the gateway's request id); also the abort handle. */
  id: string;
  prompt: Prompt;
  sampling: SamplingParams;
  /** Number of choices; the engine forks them from one prefill sharing the prompt's blocks. */
  n: number;
  /** Return the prompt's token ids and text (for echo and usage). */
  echo: boolean;
  /** Structured output: every choice's tokens are constrained to this grammar (absent: unconstrained). */
  constraint?: Constraint;
}

/**
 * A grammar every generated token must keep valid (xgrammar compiles it in the sidecar). `param` names
 * the request field it came from, so a compile error becomes a 400 that says where.
 * - json_schema: `schema` is the JSON text of a JSON Schema; json_object: any JSON object;
 * - regex: a regular expression the whole output matches; choice: exactly one of the strings;
 * - grammar: EBNF (xgrammar's dialect, root rule `root`);
 * - structural_tag: the JSON text of xgrammar's structural tag format (free text with triggered,
 *   constrained tags: how tool calls under tool_choice auto are constrained).
 */
export type Constraint = { param: string } & (
  | { kind: 'json_schema'; schema: string }
  | { kind: 'json_object' }
  | { kind: 'regex'; pattern: string }
  | { kind: 'choice'; choices: string[] }
  | { kind: 'grammar'; ebnf: string }
  | { kind: 'structural_tag'; tag: string }
);

export interface TokenLogprob {
  tokenId: number;
  token: string; // the token's text (raw piece text for partial UTF-8, as OpenAI does)
  bytes: number[];
  logprob: number;
  top: { tokenId: number; token: string; bytes: number[]; logprob: number }[];
}

/** One prompt token with its logprob, rank (1 + the tokens more likely) and top-k; the first token
 * has none (nothing predicts it): logprob and rank null, top empty. */
export interface PromptLogprob {
  tokenId: number;
  token: string;
  bytes: number[];
  logprob: number | null;
  rank: number | null;
  top: TokenLogprob['top'];
}

/** A request's phases on the engine's clock (vLLM's intervals), seconds. */
export interface EngineTiming {
  queue: number; // submit → first scheduled
  prefill: number; // first scheduled → first token
  decode: number; // first → last token
  inference: number; // first scheduled → last token
  preemptions: number;
}

/** A Prometheus histogram's state: bucket bounds, cumulative counts, count and sum. */
export interface HistogramSnapshot {
  bounds: number[];
  counts: number[];
  count: number;
  sum: number;
}

/** One choice's progress in one engine step. Text is complete UTF-8 with stop strings withheld. */
export interface ChoiceDelta {
  index: number;
  text: string;
  tokenIds: number[];
  logprobs?: TokenLogprob[];
  finishReason?: FinishReason;
  /** The stop string or stop token id that ended the choice (vLLM's stop_reason). */
  stopReason?: string | number | null;
  error?: { code: EngineErrorCode; message: string };
}

/** Events of one request, in order: `accepted` first, then `delta`s, then exactly one `done`. */
export type EngineEvent =
  | { type: 'accepted'; promptTokens: number; promptTokenIds?: number[]; promptText?: string }
  | {
      type: 'delta';
      choices: ChoiceDelta[];
      /** Once, on the delta of the step that completed the prefill, when the request asked for
       * prompt logprobs: one entry per prompt token, the first null (nothing predicts it). */
      promptLogprobs?: PromptLogprob[];
    }
  | {
      type: 'done';
      usage: { promptTokens: number; completionTokens: number; cachedTokens: number };
      /** Engine-side timings, seconds. */
      timing: { queued: number; ttft: number | null; e2e: number; engine?: EngineTiming };
      /** The request's max_tokens as the engine ran it (vllm:request_params_max_tokens). */
      maxTokens?: number;
    };

export interface EngineStats {
  running: number;
  waiting: number;
  kvBlocksTotal: number;
  kvBlocksFree: number;
  kvUsage: number; // 0..1
  preemptions: number;
  prefixCacheQueries: number; // tokens
  prefixCacheHits: number; // tokens
  promptTokens: number; // totals since start
  generationTokens: number;
  stepTimeMs: number; // last engine step
  /** Peaks since start, kept by the engine at every step and submit (not sampled): limits hold. */
  maxRunning: number; // never above ModelInfo.maxNumSeqs
  maxWaiting: number; // never above --max-num-queued-reqs
  fairPreemptions: number; // preemptions that seated a request under its fair share of the sequences
  /** Requests paused because their client's window is full (src/protocol/flow.ts); absent: not tracked. */
  paused?: number;
  /** Tokens computed per engine step (vllm:iteration_tokens_total). */
  iterationTokens?: HistogramSnapshot;
  /** vllm:cache_config_info's labels (block_size, num_gpu_blocks, cache_dtype, enable_prefix_caching). */
  cacheConfig?: Record<string, string>;
}

export interface ModelInfo {
  id: string; // served model name
  root: string; // where it was loaded from
  maxModelLen: number;
  /** --max-num-seqs: sequences (prompts x n) the engine runs at once; a request needing more is refused. */
  maxNumSeqs: number;
  vocabSize: number;
  createdAt: number; // unix seconds
  /** generation_config.json defaults, already parsed. */
  generationDefaults: Partial<Pick<SamplingParams, 'temperature' | 'topP' | 'topK' | 'repetitionPenalty'>>;
  /** True when serving the embedded formula-weight default: outputs are meaningless. */
  placeholder: boolean;
}

export interface Health {
  ready: boolean; // model loaded and accepting requests
  loading: boolean;
  draining: boolean;
  message?: string;
}

export interface TokenizeRequest extends ChatTemplateInputs {
  prompt?: string;
  messages?: ChatMessage[];
  addSpecialTokens: boolean;
  addGenerationPrompt: boolean;
  /** Also return each token's piece (vLLM's return_token_strs). */
  returnTokenStrs?: boolean;
}

export interface TokenizeResult {
  /**
   * The ids. An Int32Array where they came packed (the engine protocol's REPLY_IDS) or from the
   * sidecar's tokenizer pool: millions of them are never turned into a JS array on the way.
   */
  tokens: number[] | Int32Array;
  maxModelLen: number;
  tokenStrs?: string[];
}

/**
 * The sidecar's bounded store of Responses API responses (`store`, `previous_response_id`, GET/DELETE
 * /v1/responses/{id}): opaque JSON strings by response id, least recently used dropped first past its
 * count or byte limit. Every gateway of one sidecar shares it; replicas do not share each other's.
 */
export interface ResponseStore {
  put(id: string, value: string): Promise<void>;
  /** null: never stored, deleted, or dropped by the limits. */
  get(id: string): Promise<string | null>;
  /** false: there was nothing to delete. */
  delete(id: string): Promise<boolean>;
}

export interface StreamOptions {
  /**
   * The consumer accepts merged deltas: when it falls behind, the deltas queued for it arrive as one
   * (text concatenated, token ids and logprobs appended, in order; src/protocol/flow.ts), so it does
   * its per-event work once per catch-up. Default false: one delta per engine step.
   */
  coalesce?: boolean;
}

export interface EngineClient {
  /** Starts a request; the iterator yields its events and ends after `done`. Rejects/throws EngineError. */
  stream(req: SubmitRequest, signal?: AbortSignal, opts?: StreamOptions): AsyncIterable<EngineEvent>;
  /** Aborts a request by id; its KV blocks return to the pool in the next engine step. Idempotent. */
  abort(id: string): Promise<void>;
  health(): Promise<Health>;
  stats(): Promise<EngineStats>;
  model(): Promise<ModelInfo>;
  tokenize(req: TokenizeRequest): Promise<TokenizeResult>;
  detokenize(tokens: number[]): Promise<{ prompt: string }>;
  /** Absent where the engine keeps no responses (then `store` / `previous_response_id` are refused). */
  readonly responses?: ResponseStore;
  /** Ends the client; open streams end with ENGINE_DEAD carrying `reason` (default: "engine client closed"). */
  close(reason?: string): Promise<void>;
}
