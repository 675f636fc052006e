// The sidecar process's body: listen first (so the gateway sees NOT_READY rather than nothing), then
// load: resolve the model directory → plan the engine (./engine/plan.ts) → tokenizer → engine → the
// start-up lines (what was loaded, like vLLM's) → one warm-up request; then serve the EngineHost.
// The CLI (src/cli/sidecar-role.ts) owns signals and exit codes.

import os from 'node:os';
import { EngineError, type ModelInfo } from '../protocol/engine-client.js';
import type { Logger } from '../protocol/logger.js';
import { listenTcp, listenUnix, type EngineSocketServer } from '../protocol/node-socket.js';
import type { Tracer } from '../protocol/trace.js';
import type { FrameCodec } from '../protocol/frame-codec.js';
import type { EngineFactory } from './engine/factory.js';
import type { EnginePlan } from './engine/plan.js';
import { resolveModelDir, type Checkpoint } from './model/checkpoint.js';
import { DEFAULT_MODEL_NAME, ensureDefaultModelDir } from './model/default-bundle.js';
import { kernelNames, planCheckpoint } from './model/load.js';
import { native } from './native.js';
import { defaultGrammarWorkers, startGrammarPool } from './grammar/start.js';
import { EngineHost } from './server/engine-host.js';
import { readGenerationDefaults } from './server/generation-defaults.js';
import { LoadingBackend } from './server/loading-backend.js';
import { warmUp } from './server/warm-up.js';
import { TokenizePool } from './server/tokenize-pool.js';
import { loadTokenizerBundle } from './tokenizer/index.js';
import { readChatTemplateArg } from './tokenizer/template-arg.js';
import type { EngineOptions } from './engine/native-engine.js';

export type ListenAddress = { kind: 'unix'; path: string } | { kind: 'tcp'; host: string; port: number };

export interface SidecarOptions {
  /** --model as given; undefined: the embedded default (formula weights, meaningless outputs). */
  model?: string;
  servedModelName?: string;
  maxModelLen?: number;
  /** maxNumBatchedTokens undefined: defaultBatchedTokens(the device the model loads on), ./engine/plan.ts. */
  engine: Omit<EngineOptions, 'maxModelLen' | 'maxNumBatchedTokens'> & { maxNumBatchedTokens?: number };
  blockSize: number;
  threads?: number;
  kvCacheMemory?: number;
  /** --gpu-memory-utilization: fraction of GPU memory (CUDA) or of free RAM (CPU) for weights + KV. */
  memoryUtilization?: number;
  /** --device; undefined = auto. */
  device?: 'auto' | 'cpu' | 'cuda';
  enforceEager?: boolean;
  /** --dtype: false = plain bf16 activations (default true: two bf16 planes, fp32-grade). */
  precise?: boolean;
  /** --kv-cache-dtype. */
  kvCacheDtype?: 'float32' | 'bfloat16';
  /** --quantization (CPU): int8 weights quantized at load. */
  quantization?: 'none' | 'int8';
  /** --lm-head-dtype: false keeps the LM head bf16 under int8. */
  lmHeadInt8?: boolean;
  /** --lm-head-planes: the LM head's activation planes apart from the layers' (undefined: as --dtype). */
  lmHeadPrecise?: boolean;
  maxNumQueuedReqs: number;
  /** --tokenizer-pool-size: worker threads for large inputs (0: inline); default 1. */
  tokenizerPoolSize?: number;
  /** --chat-template: a file, or the template itself (./tokenizer/template-arg.ts). */
  chatTemplate?: string;
  /** --trust-request-chat-template: requests may bring their own chat_template. */
  trustRequestChatTemplate?: boolean;
  listen: ListenAddress[];
  secret?: string;
  /** Time a connecting peer has to authenticate (HELLO) before it is disconnected; default serve-engine.ts's. */
  handshakeTimeoutMs?: number;
}

export interface SidecarDeps {
  logger: Logger;
  factory: EngineFactory;
  /** Progress of weight generation (bytes done, total); the CLI draws a bar. */
  onProgress?: (label: string, done: number, total: number) => void;
  /** Stage marks of requests (bench:serve's latency breakdown); default none. */
  tracer?: Tracer;
  /** Decodes large frames off the event loop (src/protocol/frame-codec.ts); default: on it. */
  codec?: FrameCodec;
}

export interface RunningSidecar {
  readonly addresses: EngineSocketServer['address'][];
  /** Resolves with the host once the model is loaded; rejects when loading failed. */
  readonly loaded: Promise<EngineHost>;
  /** Drains (up to drainMs), stops the engine and closes the sockets. */
  close(drainMs: number): Promise<void>;
}

export async function startSidecar(opts: SidecarOptions, deps: SidecarDeps): Promise<RunningSidecar> {
  const { logger } = deps;
  const backend = new LoadingBackend();
  const servers: EngineSocketServer[] = [];
  const onError = (err: unknown) => logger.warn({ err: String(err) }, 'engine connection error');
  const { tracer, codec } = deps;
  try {
    for (const a of opts.listen) {
      servers.push(
        a.kind === 'unix'
          ? await listenUnix(a.path, backend, { onError, tracer, codec, handshakeTimeoutMs: opts.handshakeTimeoutMs })
          : await listenTcp(a.host, a.port, backend, { secret: opts.secret ?? '', onError, tracer, codec, handshakeTimeoutMs: opts.handshakeTimeoutMs }),
      );
    }
  } catch (err) {
    await Promise.all(servers.map((s) => s.close()));
    throw err;
  }
  for (const s of servers) logger.info({ address: s.address }, 'engine protocol listening (model loading: clients get NOT_READY)');
  const loaded = load(opts, deps, backend).then(
    (host) => {
      backend.ready(host);
      return host;
    },
    (err: unknown) => {
      backend.failed(err);
      throw err;
    },
  );
  return {
    addresses: servers.map((s) => s.address),
    loaded,
    async close(drainMs) {
      const host = await loaded.catch(() => null);
      if (host) {
        const drained = await host.drain(drainMs, (ms) => new Promise((r) => setTimeout(r, ms)));
        if (!drained) logger.warn({ open: host.liveRequests }, 'drain timeout: aborting the requests still running');
        await host.close();
      }
      await Promise.all(servers.map((s) => s.close()));
    },
  };
}

async function load(opts: SidecarOptions, deps: SidecarDeps, backend: LoadingBackend): Promise<EngineHost> {
  const { logger, factory } = deps;
  const t0 = performance.now();
  const placeholder = opts.model === undefined;
  const dir = await modelDir(opts, deps, backend);
  logger.info({ model: opts.model ?? DEFAULT_MODEL_NAME, dir, engine: factory.kind }, 'loading model');
  const checkpoint = await factory.readCheckpoint(dir);
  const plan = planCheckpoint(
    checkpoint,
    {
      device: opts.device ?? 'auto',
      threads: opts.threads,
      blockSize: opts.blockSize,
      kvCacheMemory: opts.kvCacheMemory,
      gpuMemoryUtilization: opts.memoryUtilization,
      enforceEager: opts.enforceEager,
      captureGraphs: true, // the server captures its CUDA graphs at startup, before /ready turns 200
      precise: opts.precise,
      kvCacheDtype: opts.kvCacheDtype,
      quantization: opts.quantization,
      lmHeadInt8: opts.lmHeadInt8,
      lmHeadPrecise: opts.lmHeadPrecise,
      maxModelLen: opts.maxModelLen,
      maxNumSeqs: opts.engine.maxNumSeqs,
      maxNumBatchedTokens: opts.engine.maxNumBatchedTokens,
    },
    factory.resolveDevice,
  );
  const textOptions = {
    maxModelLen: plan.maxModelLen,
    ...(opts.chatTemplate !== undefined ? { chatTemplate: await readChatTemplateArg(opts.chatTemplate) } : {}),
    trustRequestChatTemplate: opts.trustRequestChatTemplate ?? false,
  };
  const bundle = await loadTokenizerBundle(dir, textOptions);
  logger.info({ tokenizer: bundle.source }, 'tokenizer loaded');
  const model: ModelInfo = {
    id: opts.servedModelName ?? opts.model ?? DEFAULT_MODEL_NAME,
    root: dir,
    maxModelLen: plan.maxModelLen,
    maxNumSeqs: opts.engine.maxNumSeqs,
    vocabSize: checkpoint.config.native.vocabSize,
    createdAt: Math.floor(Date.now() / 1000),
    generationDefaults: await readGenerationDefaults(dir),
    placeholder,
  };
  backend.setStatus('loading weights');
  const engineOptions: EngineOptions = { ...opts.engine, maxNumBatchedTokens: plan.maxNumBatchedTokens, maxModelLen: plan.maxModelLen };
  const cacheConfig = {
    block_size: String(plan.blockSize),
    num_gpu_blocks: String(plan.kvBlocks),
    cache_dtype: plan.load.kvCacheDtype,
    enable_prefix_caching: String(opts.engine.enablePrefixCaching ?? true),
  };
  const poolSize = opts.tokenizerPoolSize ?? 1;
  const tokenizePool = poolSize > 0 ? await TokenizePool.start({ dir, options: textOptions, vocabSize: model.vocabSize }, poolSize) : undefined;
  if (tokenizePool) logger.info({ workers: poolSize, priority: tokenizePool.priority }, 'tokenizer pool started');
  const grammar = await startGrammarPool(bundle, model.vocabSize, defaultGrammarWorkers(plan.device)).catch(async (e: unknown) => {
    await tokenizePool?.close();
    throw e;
  });
  const host = await EngineHost.start({ bundle, model, maxNumQueuedReqs: opts.maxNumQueuedReqs, tokenizePool, tracer: deps.tracer, cacheConfig, grammar }, (onStep) =>
    factory.create(checkpoint, plan, engineOptions, bundle, onStep),
  ).catch(async (e: unknown) => {
    await tokenizePool?.close();
    await grammar.stop();
    throw e;
  });
  logLoaded(logger, opts, factory, checkpoint, plan, (performance.now() - t0) / 1000);
  await warmUpOrClose(host, backend, logger);
  logger.info({ generationDefaults: model.generationDefaults, servedModelName: model.id }, 'ready');
  if (placeholder) {
    logger.warn(
      { dir },
      'SERVING THE EMBEDDED DEFAULT: formula weights with ERNIE-4.5-0.3B\'s shape and a test tokenizer. ' +
        'Outputs are MEANINGLESS until --model names a real checkpoint (e.g. --model /path/to/ERNIE-4.5-0.3B-PT).',
    );
  }
  return host;
}

/** --model's directory, or the embedded default's (generated once per cache; no weights for a double). */
async function modelDir(opts: SidecarOptions, deps: SidecarDeps, backend: LoadingBackend): Promise<string> {
  if (opts.model !== undefined) return resolveModelDir(opts.model);
  backend.setStatus('preparing the embedded default model');
  const r = await ensureDefaultModelDir({
    weights: deps.factory.kind === 'native',
    onProgress: (done, total) => deps.onProgress?.('generating default weights', done, total),
  });
  if (r.generated) deps.logger.info({ dir: r.dir }, 'generated the embedded default model (formula weights, once per cache)');
  return r.dir;
}

/** The start-up lines that say what was loaded and how the KV cache and scheduler are sized. */
function logLoaded(logger: Logger, opts: SidecarOptions, factory: EngineFactory, checkpoint: Checkpoint, plan: EnginePlan, loadSeconds: number): void {
  const cfg = checkpoint.config;
  logger.info(
    {
      architecture: cfg.architecture,
      layers: cfg.native.numLayers,
      hidden: cfg.native.hiddenSize,
      vocab: cfg.native.vocabSize,
      weightsGiB: +(plan.weightBytes / 2 ** 30).toFixed(3),
      device: plan.device,
      isa: factory.kind === 'native' ? native().cpuInfo().best : 'fake',
      kernels: factory.kind === 'native' ? kernelNames(plan.load, native().cpuInfo()) : 'fake',
      threads: opts.threads ?? os.availableParallelism(),
      loadSeconds: +loadSeconds.toFixed(2),
    },
    'model loaded',
  );
  const kvTokens = plan.kvBlocks * plan.blockSize;
  const { maxModelLen, maxNumBatchedTokens } = plan;
  logger.info(
    {
      kvBlocks: plan.kvBlocks,
      blockSize: plan.blockSize,
      kvCacheGiB: +((plan.kvBlocks * plan.kvBlockBytes) / 2 ** 30).toFixed(3),
      kvCacheTokens: kvTokens,
      maxModelLen,
      maxConcurrency: +(kvTokens / maxModelLen).toFixed(2), // vLLM's "Maximum concurrency for N tokens per request"
      ...opts.engine,
      maxNumBatchedTokens,
    },
    'KV cache and scheduler',
  );
  if (kvTokens < maxModelLen) {
    logger.warn({ kvCacheTokens: kvTokens, maxModelLen }, 'the KV cache holds fewer tokens than --max-model-len: the longest requests can never run; raise --kv-cache-memory or lower --max-model-len');
  }
}

/**
 * One request through the sidecar before it reports ready (./server/warm-up.ts), so the first user
 * request does not pay the cold start. A request this model cannot take (a tiny --max-model-len) skips
 * it with a warning; any other failure fails the load (and stops the engine).
 */
async function warmUpOrClose(host: EngineHost, backend: LoadingBackend, logger: Logger): Promise<void> {
  backend.setStatus('warming up: one request through the template, tokenizer and engine');
  try {
    const w = await warmUp(host);
    logger.info(
      { warmUpMs: Math.round(w.ms), promptTokens: w.promptTokens, outputTokens: w.outputTokens },
      'warm-up request done (compiled code, engine buffers): the first user request is not a cold one',
    );
  } catch (err) {
    if (err instanceof EngineError && err.code === 'INVALID_REQUEST') {
      logger.warn({ err: err.message }, 'warm-up skipped: the model cannot take the warm-up request; the first request will be slower');
      return;
    }
    await host.close();
    throw new Error(`the warm-up request failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}
