// The flag table of `ernie-edge serve` (vLLM's names where they make sense), the one source for the
// parser, --help, README.md's configuration table (scripts/gen-readme-flags.ts, `npm run docs`) and
// what `serve` forwards to its sidecar child. Help texts say what a flag means, its default and why;
// measured figures live in bench/results/, never here. `scope` says who reads a flag:
// 'engine' flags are forwarded to the sidecar, 'gateway' flags stay in the gateway, 'both' go to both.

import { DEFAULT_BLOCK_SIZE, DEFAULT_MAX_MODEL_LEN, DEFAULT_MAX_NUM_SEQS } from '../sidecar/engine/plan.js';

export type FlagKind = 'string' | 'int' | 'number' | 'bool' | 'bytes';

export interface FlagSpec {
  name: string; // without the leading --
  kind: FlagKind;
  scope: 'engine' | 'gateway' | 'both';
  help?: string;
  arg?: string; // placeholder in --help
  env?: string; // read when the flag is absent
  repeatable?: boolean;
  /** Also accepted as --no-<name> (false). */
  negatable?: boolean;
  /** Accepted for vLLM compatibility: logged once with this explanation, otherwise ignored. */
  compat?: string;
}

export const FLAGS: readonly FlagSpec[] = [
  { name: 'role', kind: 'string', scope: 'gateway', arg: 'serve|sidecar|gateway', help: 'serve (default): sidecar and gateway in one command; sidecar or gateway: that half alone, e.g. one container each' },
  { name: 'model', kind: 'string', scope: 'engine', arg: 'DIR|REPO', help: "checkpoint directory, Hugging Face cache folder, or repo id in the local HF cache; never downloads. Default: the embedded placeholder, ERNIE-4.5-0.3B's shape with formula weights (meaningless outputs), so a fresh checkout serves without a download" },
  { name: 'served-model-name', kind: 'string', scope: 'engine', arg: 'NAME', help: 'the model name clients send and /v1/models lists (default: --model as given; ernie-edge-default for the placeholder)' },
  { name: 'host', kind: 'string', scope: 'gateway', arg: 'HOST', help: 'HTTP bind address (default 127.0.0.1, reachable from this host only; use 0.0.0.0 in containers)' },
  { name: 'port', kind: 'int', scope: 'gateway', arg: 'PORT', help: 'HTTP port (default 8000, as vLLM; 0 = any free port)' },
  { name: 'uds', kind: 'string', scope: 'gateway', arg: 'PATH', help: 'serve HTTP on this Unix socket instead of --host/--port' },
  { name: 'api-key', kind: 'string', scope: 'gateway', arg: 'KEY', env: 'ERNIE_EDGE_API_KEY', help: 'require `Authorization: Bearer KEY` on the API routes; /health, /ready and /metrics stay open for probes (default: no key; env ERNIE_EDGE_API_KEY)' },
  { name: 'allowed-origins', kind: 'string', scope: 'gateway', arg: 'LIST', help: "CORS origins: '*', a comma-separated list or a JSON list (default: no CORS, so browsers on other origins cannot call the API)" },
  { name: 'max-model-len', kind: 'int', scope: 'engine', arg: 'N', help: `context length in tokens, prompt plus output (default: min(max_position_embeddings, ${DEFAULT_MAX_MODEL_LEN}), which bounds the KV cache one sequence can take)` },
  { name: 'block-size', kind: 'int', scope: 'engine', arg: 'N', help: `tokens per KV-cache block, the unit of allocation and prefix sharing (default ${DEFAULT_BLOCK_SIZE}, as vLLM)` },
  { name: 'max-num-seqs', kind: 'int', scope: 'engine', arg: 'N', help: `most sequences in one engine step (default ${DEFAULT_MAX_NUM_SEQS}, as vLLM)` },
  { name: 'max-num-batched-tokens', kind: 'int', scope: 'engine', arg: 'N', help: "token budget of one engine step; longer prompts are prefilled in chunks beside the decodes (default 512 on CPU, where a step's time grows with its tokens and decodes would wait behind large chunks; 2048 on CUDA, where a step's time grows slowly)" },
  { name: 'prefill-batch', kind: 'int', scope: 'engine', arg: 'N', help: 'while a quarter of --max-num-seqs decode, new prompts wait until N are queued (or --prefill-max-wait steps) to be prefilled together (default 1: off, because the wait raises time to first token for a small throughput gain, measured on a GPU: bench/README.md)' },
  { name: 'prefill-max-wait', kind: 'int', scope: 'engine', arg: 'N', help: 'steps a new prompt waits at most for --prefill-batch (default 8)' },
  { name: 'kv-cache-memory', kind: 'bytes', scope: 'engine', arg: 'BYTES', help: "KV cache size, e.g. 2GiB, 512M or bytes (default: min(4 GiB, 25% of free RAM), leaving the rest of the host's memory alone)" },
  { name: 'gpu-memory-utilization', kind: 'number', scope: 'engine', arg: 'F', help: 'instead of --kv-cache-memory: this fraction (0..1] of GPU memory (CUDA; default 0.9, as vLLM) or of free RAM (CPU) for weights + KV cache' },
  { name: 'device', kind: 'string', scope: 'engine', arg: 'auto|cpu|cuda', help: 'where the model runs (default auto: CUDA when native/cuda is built and a GPU is present, else the CPU)' },
  { name: 'enable-prefix-caching', kind: 'bool', scope: 'engine', negatable: true, help: 'reuse KV blocks of shared prompt prefixes such as system prompts and chat history (default on; --no-enable-prefix-caching to turn off)' },
  { name: 'seed', kind: 'int', scope: 'engine', arg: 'N', help: 'engine RNG seed for requests without one (default 0, so sampled outputs are reproducible)' },
  { name: 'max-num-queued-reqs', kind: 'int', scope: 'engine', arg: 'N', help: 'past this many waiting requests, new ones get 429 with Retry-After (default 1024; bounds what clients can make the server hold)' },
  { name: 'tokenizer-pool-size', kind: 'int', scope: 'engine', arg: 'N', help: "worker threads that tokenize large prompts and chats (over 16 Ki characters or 64 messages) off the sidecar's main thread, each held to a third of a core while requests are generating and no core is free, so they never stall other streams (default 1; 0: everything inline)" },
  { name: 'threads', kind: 'int', scope: 'engine', arg: 'N', help: 'engine threads (default: all cores)' },
  { name: 'engine', kind: 'string', scope: 'both', arg: 'ADDR', repeatable: true, help: 'unix:/path or tcp://host:port; gateway: where the sidecar is; sidecar: where to listen (repeatable)' },
  { name: 'engine-secret', kind: 'string', scope: 'both', arg: 'SECRET', env: 'ERNIE_EDGE_ENGINE_SECRET', help: 'shared secret of tcp:// engine connections, required for them since a TCP port is reachable by anyone who can route to it (env ERNIE_EDGE_ENGINE_SECRET)' },
  { name: 'api-server-count', kind: 'int', scope: 'gateway', arg: 'N', help: "gateway processes serving the one HTTP port, all connected to the one sidecar (as vLLM's flag): the stateless HTTP half scales over cores while the engine stays one. Default: one per 4 CPU cores available to the process (its affinity mask, capped by the cgroup's cpu.max quota), at least 1, at most 8; the other cores stay with the sidecar. With more than 1: Node's cluster module, one SO_REUSEPORT socket per process where Node has it (22.12+), else the cluster's round-robin; a process that dies is restarted; /metrics sums every process's series" },
  { name: 'api-server-warmup-requests', kind: 'int', scope: 'gateway', arg: 'N', help: "requests each gateway process sends through its own whole path (HTTP, app, engine socket, SSE; one token each, prompts shorter than a KV block) once the engine is ready, before /ready turns 200, so the first users do not pay for a process whose code is not yet compiled (default 200, at most 3 s; 0: none). They leave no metric, log line or prefix-cache entry; the engine's token totals count them" },
  { name: 'engine-handshake-timeout', kind: 'number', scope: 'engine', arg: 'SECONDS', help: 'sidecar: disconnect an engine-protocol peer that has not authenticated (HELLO with the secret) this long after connecting; until then its frames are capped at 4 KiB (default 5)' },
  { name: 'drain-timeout', kind: 'number', scope: 'both', arg: 'SECONDS', help: 'on SIGTERM, how long in-flight requests (streams included) may finish before they are cut (default 30)' },
  { name: 'stream-stall-timeout', kind: 'number', scope: 'gateway', arg: 'SECONDS', help: "abort a streamed response whose client has read nothing for this long (its engine request is paused as soon as its small per-stream buffer is full, keeping its KV cache; this returns the cache and closes the connection), logged with the reason (default 60, nginx's send_timeout; 0 = never)" },
  { name: 'drain-delay', kind: 'number', scope: 'gateway', arg: 'SECONDS', help: 'on SIGTERM, keep serving this long with /ready 503 before refusing connections, so load balancers probing /ready move away first (default 0)' },
  { name: 'timeout-keep-alive', kind: 'number', scope: 'gateway', arg: 'SECONDS', help: "close an HTTP connection idle this long between requests (default 5, as uvicorn's and vLLM's)" },
  { name: 'timeout-headers', kind: 'number', scope: 'gateway', arg: 'SECONDS', help: 'answer 408 and close an HTTP connection whose request head (request line and headers) is not complete this long after it opened or went idle, so silent or trickling connections cannot pile up (default 10)' },
  { name: 'limit-concurrency', kind: 'int', scope: 'gateway', arg: 'N', help: "most open HTTP connections; past it a new one gets 503 and is closed (uvicorn's --limit-concurrency; default: no cap). Each connection also has at most 4 requests in progress: later pipelined ones wait unread" },
  { name: 'tool-call-parser', kind: 'string', scope: 'gateway', arg: 'NAME', help: 'how tool calls are written and read back (vLLM\'s flag): hermes (default), `<tool_call>{"name": …, "arguments": …}</tool_call>`; every tool_choice but none is constrained to valid calls in this format' },
  { name: 'enable-auto-tool-choice', kind: 'bool', scope: 'gateway', help: 'serve tool_choice auto, the default when a request has tools: the model writes text or calls, a call constrained to be valid once it starts (default off, as vLLM: auto is then a 400; required and named calls work without it)' },
  { name: 'chat-template', kind: 'string', scope: 'engine', arg: 'FILE|TEMPLATE', help: "a Jinja chat template (a file, or the template itself) instead of the checkpoint's; a template that does not render `tools` gets them as a system block (README: Tool calling)" },
  { name: 'trust-request-chat-template', kind: 'bool', scope: 'engine', help: "let requests bring their own chat_template (default off, as vLLM: a template runs on the sidecar, so only trusted clients should send one)" },
  { name: 'log-level', kind: 'string', scope: 'both', arg: 'LEVEL', help: 'pino level: debug, info (default), warn, error' },
  { name: 'dtype', kind: 'string', scope: 'engine', arg: 'auto|float32|bfloat16', help: 'activation precision; weights stay as stored (bf16). auto = float32 (default): GEMM inputs as two bf16 planes, fp32-grade logits that match an fp32 reference; bfloat16: plain bf16 activations as vLLM/HF in bf16, faster, logits no longer fp32-grade' },
  { name: 'quantization', kind: 'string', scope: 'engine', arg: 'none|int8|w8a8', help: "CPU weights: int8 (w8a8, vLLM's name for int8 weights and activations, is the same) quantizes every matrix at load from the bf16 checkpoint (symmetric, one scale per output row) and each GEMM input per token at run time, on VNNI / AMX-INT8 kernels; with --dtype auto (the default) the input keeps a second int8 plane for its residual (fp32-grade-like accuracy, closer to the reference than llama.cpp Q8_0), with --dtype bfloat16 one plane (faster prefill and batched steps, but further from the reference than Q8_0: README, CPU section). Default none: bf16 weights" },
  { name: 'lm-head-dtype', kind: 'string', scope: 'engine', arg: 'auto|bfloat16', help: 'with --quantization int8: auto (default) quantizes the LM head too; bfloat16 keeps it in bf16' },
  { name: 'lm-head-planes', kind: 'string', scope: 'engine', arg: 'auto|1|2', help: "CPU: the LM head GEMM's activation planes apart from the layers' (default auto: 1 for an int8 LM head, else as --dtype: 2 planes with auto/float32, 1 with bfloat16). One plane drops the LM head's residual plane: about half its multiply-adds (a few percent of a batched step), int8 still closer to the reference than llama.cpp Q8_0; 2 gives int8 its most accurate LM head (bench/README, LM head planes)" },
  { name: 'kv-cache-dtype', kind: 'string', scope: 'engine', arg: 'auto|float32|bfloat16', help: 'KV cache element type (default auto: bfloat16 with --quantization int8 on AVX512-BF16 CPUs without AMX, else float32 for fp32-grade results); bfloat16 halves KV memory and attention reads' },
  { name: 'enforce-eager', kind: 'bool', scope: 'engine', help: 'CUDA: run every step without CUDA graphs (default off: graphs, all captured at startup before /ready, save the launch cost of every kernel; the CPU backend always runs eagerly)' },
  { name: 'tensor-parallel-size', kind: 'int', scope: 'engine', arg: '1', compat: '--tensor-parallel-size 1: accepted; one engine serves one device (run more replicas to scale)', help: 'accepted for vLLM compatibility and must be 1: one engine serves one device; run more replicas to scale' },
  { name: 'swap-space', kind: 'number', scope: 'engine', arg: 'GIB', compat: '--swap-space: accepted and ignored; preemption here recomputes, it never swaps KV blocks to host memory' },
  { name: 'trust-remote-code', kind: 'bool', scope: 'engine', compat: '--trust-remote-code: accepted and ignored; no model code is ever loaded, ERNIE-4.5 is implemented natively' },
  { name: 'help', kind: 'bool', scope: 'gateway', help: 'show this help' },
  { name: 'version', kind: 'bool', scope: 'gateway', help: 'print the version' },
];

/** A flag as --help and the README show it: `--[no-]name ARG`. */
export function flagUsage(f: FlagSpec): string {
  return `--${f.negatable ? `[no-]${f.name}` : f.name}${f.arg ? ` ${f.arg}` : ''}`;
}

/** What a flag means (for a compat flag without help, the note logged when it is given). */
export function flagHelp(f: FlagSpec): string {
  return f.help ?? f.compat ?? '';
}

export function helpText(version: string): string {
  const rows = FLAGS.map((f) => `  ${flagUsage(f).padEnd(38)} ${flagHelp(f)}`);
  return [
    `ernie-edge ${version}: an OpenAI-compatible server for ERNIE-4.5 (Hono gateway + native engine sidecar)`,
    '',
    'Usage:',
    '  ernie-edge serve [--model DIR|REPO] [--host H] [--port P] [flags]     sidecar + gateway',
    '  ernie-edge serve --role sidecar --model DIR --engine unix:/run/ernie/engine.sock',
    '  ernie-edge serve --role gateway --engine unix:/run/ernie/engine.sock --port 8000',
    '  ernie-edge monitor --url http://127.0.0.1:8000 [--once] [--max-waiting N] [--max-latency S]   (monitor --help)',
    '  ernie-edge bench serve --base-url http://127.0.0.1:8000 [--max-concurrency 1,64,256] [--save-result]   (bench serve --help)',
    '',
    'Flags (underscores work too: --max_model_len):',
    ...rows,
  ].join('\n');
}
