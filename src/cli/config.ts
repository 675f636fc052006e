// Parsed flags → the typed configuration of each role, with the checks that need more than one flag.
// Defaults live here (and in --help), nowhere else; the two that need the model or its device are the
// sidecar's, resolved once those are known: max_model_len and the token budget (planEngine, sidecar/engine/plan.ts,
// which also holds the engine-sizing defaults this file reads).

import { DEFAULT_STREAM_STALL_TIMEOUT_MS } from '../gateway/app.js';
import { DEFAULT_TOOL_CALL_PARSER, TOOL_CALL_PARSERS } from '../gateway/tools/parser.js';
import { DEFAULT_BLOCK_SIZE, DEFAULT_MAX_NUM_SEQS } from '../sidecar/engine/plan.js';
import type { SidecarOptions } from '../sidecar/main.js';
import { UsageError, type ParsedArgs } from './args.js';
import { defaultApiServerCount } from './cpu-budget.js';
import { DEFAULT_WARMUP_REQUESTS } from './http-warm-up.js';
import { MAX_SECRET_BYTES } from '../protocol/serve-engine.js';
import { FLAGS } from './flags.js';
import type { ConnectionLimits } from './http-connections.js';

export type EngineAddress = { kind: 'unix'; path: string } | { kind: 'tcp'; host: string; port: number };
export type Role = 'serve' | 'sidecar' | 'gateway';

export interface GatewayConfig {
  listen: { host: string; port: number } | { path: string };
  apiKey?: string;
  allowedOrigins?: string[] | '*';
  servedModelName?: string;
  drainTimeoutMs: number;
  /** Lame-duck period before draining (node-server.ts drainDelayMs). */
  drainDelayMs: number;
  /** Gateway processes on the one port (./cluster.ts); 1: the gateway runs in this process. */
  apiServerCount: number;
  /** --stream-stall-timeout (createApp's streamStallTimeoutMs). */
  streamStallTimeoutMs: number;
  /** --api-server-warmup-requests: each gateway process's warm-up through its own path (./http-warm-up.ts); 0: none. */
  warmupRequests: number;
  /** HTTP connection limits given on the command line; the rest take their defaults (http-connections.ts). */
  limits: Partial<ConnectionLimits>;
  /** --tool-call-parser (createApp's toolCallParser). */
  toolCallParser: string;
  /** --enable-auto-tool-choice. */
  enableAutoToolChoice: boolean;
}

/** The sidecar's options as the CLI reads them; where it listens is `Config.engines`. */
export type SidecarConfig = Omit<SidecarOptions, 'listen' | 'secret'> & { drainTimeoutMs: number };

export interface Config {
  role: Role;
  engines: EngineAddress[];
  engineSecret?: string;
  gateway: GatewayConfig;
  sidecar: SidecarConfig;
  logLevel: string;
  /** One line per vLLM-compatibility flag that was accepted and does nothing here. */
  notes: string[];
}

export function parseEngineAddress(s: string): EngineAddress {
  if (s.startsWith('unix:')) {
    const path = s.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new UsageError(`--engine ${s}: empty socket path`);
    return { kind: 'unix', path };
  }
  const m = /^tcp:\/\/(\[[^\]]+\]|[^:/]+):(\d{1,5})\/?$/.exec(s);
  if (m && Number(m[2]) <= 65535) return { kind: 'tcp', host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
  throw new UsageError(`--engine ${s}: expected unix:/path/to/engine.sock or tcp://host:port`);
}

export function formatEngineAddress(a: EngineAddress): string {
  return a.kind === 'unix' ? `unix:${a.path}` : `tcp://${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`;
}

function device(v: string | undefined): 'auto' | 'cpu' | 'cuda' {
  if (v === undefined) return 'auto';
  if (v === 'auto' || v === 'cpu' || v === 'cuda') return v;
  throw new UsageError(`--device must be auto, cpu or cuda, got ${v}`);
}

/** --dtype / --kv-cache-dtype: float32 or bfloat16, or undefined for auto. `why`: appended to the refusal. */
function dtypeOrAuto(flag: string, v: string | undefined, why = ''): 'float32' | 'bfloat16' | undefined {
  if (v === undefined || v === 'auto') return undefined;
  if (v === 'float32' || v === 'bfloat16') return v;
  throw new UsageError(`--${flag} must be auto, float32 or bfloat16, got ${v}${why}`);
}

/**
 * --kv-cache-dtype: vLLM users bring fp8 (llama.cpp users q8_0), so an 8-bit name is told why there is
 * none (an int8 cache measured on formula-0.3b: bench/README.md, "Why the Zen 5 wave stays at 2x").
 */
function kvCacheDtype(v: string | undefined): 'float32' | 'bfloat16' | undefined {
  const eightBit = v !== undefined && /^(fp8|int8|q8)/i.test(v);
  return dtypeOrAuto('kv-cache-dtype', v, eightBit ? " (no 8-bit KV cache: on ERNIE-4.5 it leaves the reference's greedy tokens within a few steps; bfloat16 halves the cache instead)" : '');
}

/** --quantization: none, or int8 under its own name or vLLM's w8a8. */
function quantization(v: string | undefined): 'none' | 'int8' {
  if (v === undefined || v === 'none') return 'none';
  if (v === 'int8' || v === 'w8a8') return 'int8';
  throw new UsageError(`--quantization must be none, int8 or w8a8, got ${v}`);
}

/** --lm-head-dtype: auto follows --quantization; bfloat16 keeps the LM head bf16. */
function lmHeadInt8(v: string | undefined): boolean {
  if (v === undefined || v === 'auto') return true;
  if (v === 'bfloat16') return false;
  throw new UsageError(`--lm-head-dtype must be auto or bfloat16, got ${v}`);
}

/** --lm-head-planes: auto follows --dtype; 1 or 2 activation planes for the LM head alone. */
function lmHeadPrecise(v: string | undefined): boolean | undefined {
  if (v === undefined || v === 'auto') return undefined;
  if (v === '1' || v === '2') return v === '2';
  throw new UsageError(`--lm-head-planes must be auto, 1 or 2, got ${v}`);
}

function origins(v: string | undefined): string[] | '*' | undefined {
  if (v === undefined) return undefined;
  const t = v.trim();
  let list: unknown = null;
  if (t.startsWith('[')) {
    try {
      list = JSON.parse(t);
    } catch {
      /* reported below */
    }
    if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) throw new UsageError(`--allowed-origins: '${v}' is not a JSON list of strings`);
  } else list = t.split(',').map((x) => x.trim()).filter(Boolean);
  const arr = list as string[];
  return arr.includes('*') ? '*' : arr;
}

export function buildConfig(args: ParsedArgs): Config {
  const f = args.flags;
  const str = (k: string) => f[k] as string | undefined;
  const num = (k: string) => f[k] as number | undefined;
  const positive = (k: string, dflt: number, min = 1): number => {
    const v = num(k) ?? dflt;
    if (!Number.isInteger(v) || v < min) throw new UsageError(`--${k} must be an integer ≥ ${min}, got ${v}`);
    return v;
  };
  const role = (str('role') ?? 'serve') as Role;
  if (!['serve', 'sidecar', 'gateway'].includes(role)) throw new UsageError(`--role must be serve, sidecar or gateway, got '${role}'`);
  const tp = num('tensor-parallel-size');
  if (tp !== undefined && tp !== 1) {
    throw new UsageError(`--tensor-parallel-size ${tp}: tensor parallelism is not supported; ERNIE-4.5-0.3B fits one device — run one replica per device behind a load balancer`);
  }
  const util = num('gpu-memory-utilization');
  if (util !== undefined && !(util > 0 && util <= 1)) throw new UsageError(`--gpu-memory-utilization must be in (0, 1], got ${util}`);
  if (util !== undefined && f['kv-cache-memory'] !== undefined) throw new UsageError('give --kv-cache-memory or --gpu-memory-utilization, not both');
  const drain = num('drain-timeout') ?? 30;
  if (!(drain >= 0)) throw new UsageError(`--drain-timeout must be ≥ 0 seconds, got ${drain}`);
  const stall = num('stream-stall-timeout') ?? DEFAULT_STREAM_STALL_TIMEOUT_MS / 1000;
  if (!(stall >= 0)) throw new UsageError(`--stream-stall-timeout must be ≥ 0 seconds, got ${stall}`);
  const drainDelay = num('drain-delay') ?? 0;
  if (!(drainDelay >= 0)) throw new UsageError(`--drain-delay must be ≥ 0 seconds, got ${drainDelay}`);
  const seconds = (k: string): number | undefined => {
    const v = num(k);
    if (v !== undefined && !(v > 0)) throw new UsageError(`--${k} must be > 0 seconds, got ${v}`);
    return v === undefined ? undefined : v * 1000;
  };
  const limitConcurrency = num('limit-concurrency');
  if (limitConcurrency !== undefined) positive('limit-concurrency', limitConcurrency);
  const port = num('port') ?? 8000;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0..65535, got ${port}`);
  const engines = ((f.engine as string[] | undefined) ?? []).map(parseEngineAddress);
  if (role === 'gateway' && engines.length !== 1) throw new UsageError('--role gateway needs exactly one --engine unix:/path or tcp://host:port');
  if (role === 'sidecar' && engines.length === 0) throw new UsageError('--role sidecar needs --engine unix:/path (and/or tcp://host:port) to listen on');
  const secret = str('engine-secret');
  if (secret && new TextEncoder().encode(secret).length > MAX_SECRET_BYTES) {
    throw new UsageError(`--engine-secret is longer than ${MAX_SECRET_BYTES} bytes: the engine protocol reads at most 4 KiB from a peer before it has authenticated`);
  }
  if (engines.some((e) => e.kind === 'tcp') && !secret) {
    throw new UsageError('a tcp:// engine address needs --engine-secret (or ERNIE_EDGE_ENGINE_SECRET): the port is reachable by anyone who can route to it');
  }
  const uds = str('uds');
  const maxModelLen = num('max-model-len');
  if (maxModelLen !== undefined) positive('max-model-len', maxModelLen);
  const notes = FLAGS.filter((s) => s.compat && f[s.name] !== undefined).map((s) => s.compat!);
  const toolParser = str('tool-call-parser') ?? DEFAULT_TOOL_CALL_PARSER;
  if (!TOOL_CALL_PARSERS.includes(toolParser)) throw new UsageError(`--tool-call-parser must be one of ${TOOL_CALL_PARSERS.join(', ')}, got '${toolParser}'`);
  return {
    role,
    engines,
    engineSecret: secret,
    logLevel: str('log-level') ?? 'info',
    notes,
    gateway: {
      listen: uds ? { path: uds } : { host: str('host') ?? '127.0.0.1', port },
      apiKey: str('api-key') || undefined,
      allowedOrigins: origins(str('allowed-origins')),
      servedModelName: str('served-model-name'),
      drainTimeoutMs: drain * 1000,
      drainDelayMs: drainDelay * 1000,
      apiServerCount: num('api-server-count') === undefined ? defaultApiServerCount() : positive('api-server-count', 1),
      streamStallTimeoutMs: stall * 1000,
      warmupRequests: positive('api-server-warmup-requests', DEFAULT_WARMUP_REQUESTS, 0),
      limits: {
        keepAliveTimeoutMs: seconds('timeout-keep-alive'),
        headersTimeoutMs: seconds('timeout-headers'),
        maxConnections: limitConcurrency,
      },
      toolCallParser: toolParser,
      enableAutoToolChoice: (f['enable-auto-tool-choice'] as boolean | undefined) ?? false,
    },
    sidecar: {
      model: str('model'),
      servedModelName: str('served-model-name'),
      maxModelLen,
      engine: {
        maxNumSeqs: positive('max-num-seqs', DEFAULT_MAX_NUM_SEQS),
        // Absent: 512 on CPU, 2048 on CUDA, once the device is known (defaultBatchedTokens, sidecar/engine/plan.ts).
        maxNumBatchedTokens: num('max-num-batched-tokens') === undefined ? undefined : positive('max-num-batched-tokens', 0),
        enablePrefixCaching: (f['enable-prefix-caching'] as boolean | undefined) ?? true,
        seed: positive('seed', 0, 0),
        prefillBatch: positive('prefill-batch', 1),
        prefillMaxWait: positive('prefill-max-wait', 8, 0),
      },
      blockSize: positive('block-size', DEFAULT_BLOCK_SIZE),
      threads: num('threads') === undefined ? undefined : positive('threads', 1),
      kvCacheMemory: num('kv-cache-memory'),
      memoryUtilization: util,
      device: device(str('device')),
      enforceEager: (f['enforce-eager'] as boolean | undefined) ?? false,
      // --dtype auto is float32 (fp32-grade results, the reference's).
      precise: dtypeOrAuto('dtype', str('dtype')) !== 'bfloat16',
      // --kv-cache-dtype auto is the plan's choice (resolveKvCacheDtype, sidecar/engine/plan.ts).
      kvCacheDtype: kvCacheDtype(str('kv-cache-dtype')),
      quantization: quantization(str('quantization')),
      lmHeadInt8: lmHeadInt8(str('lm-head-dtype')),
      lmHeadPrecise: lmHeadPrecise(str('lm-head-planes')),
      maxNumQueuedReqs: positive('max-num-queued-reqs', 1024),
      tokenizerPoolSize: positive('tokenizer-pool-size', 1, 0),
      chatTemplate: str('chat-template'),
      trustRequestChatTemplate: (f['trust-request-chat-template'] as boolean | undefined) ?? false,
      handshakeTimeoutMs: seconds('engine-handshake-timeout'),
      drainTimeoutMs: drain * 1000,
    },
  };
}
