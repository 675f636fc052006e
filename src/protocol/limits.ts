// Per-request limits every layer enforces with the same value: the gateway's schemas (src/gateway/schemas.ts)
// answer 400 past them, and the sidecar hands them to the native engine (EngineLimits,
// src/sidecar/engine/native-engine.ts), which refuses a request past them with INVALID_REQUEST and has
// no values of its own.

/**
 * Choices per request (`n`; completions' `best_of`, which must equal it). Each choice is a whole engine
 * sequence holding its own KV blocks, so this bounds the sequences one request can hold (an
 * ARCHITECTURE.md invariant).
 * NOTE: 16, not OpenAI's 128 (vLLM has no ceiling): a single replica, often on a CPU, shares
 * --max-num-seqs (default 256) among all clients; one request taking half of it starves the rest.
 */
export const MAX_N = 16;

/**
 * Alternatives per token (chat's `top_logprobs`, completions' `logprobs`): OpenAI's documented ceiling
 * for `top_logprobs` and vLLM's default `--max-logprobs`.
 */
export const MAX_LOGPROBS = 20;

/**
 * Messages in one chat (chat completions, /tokenize): the gateway's schema answers 400 past it, and the
 * sidecar checks it again before rendering the template (engine-protocol clients need not come
 * through a gateway). Rendering cost grows with the count; large chats render off the sidecar's main
 * thread (src/sidecar/tokenizer/pool.ts).
 */
export const MAX_CHAT_MESSAGES = 4096;

/**
 * Characters (UTF-16 code units: a lower bound on UTF-8 bytes) of prompt or message text the sidecar
 * tokenizes for one request, checked before tokenizing. Above the gateway's default body limit on
 * purpose: the gateway's limit is the one a client meets; this one bounds what an engine-protocol peer
 * can make the sidecar tokenize.
 */
export const MAX_INPUT_CHARS = 16 * 1024 * 1024;
