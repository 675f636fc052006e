// The engine plan: every sizing decision made before the weights load, in one pure function. Inputs:
// the checkpoint's config and weight bytes, what was asked (flags / LoadOptions), the device already
// resolved, and the free RAM sampled by the caller. Output: the KV cache (blocks, bytes per block),
// max_model_len, the per-step token budget and the addon's complete load options. No I/O, no addon,
// no clock: the caller reads the checkpoint, resolves the device and reads os.freemem().
//
// KV cache size, first rule that applies:
//   kvBlocks given (tests, benches)        exactly that
//   --kv-cache-memory B                    floor(B / block bytes), at least 1
//   CUDA otherwise                         0: the addon sizes it on the GPU to gpuMemoryUtilization (default 0.9)
//   CPU, --gpu-memory-utilization f        floor((f · free RAM − weight bytes) / block bytes); an error below one block
//   CPU otherwise                          min(4 GiB, 25% of free RAM) / block bytes, at least 1
// "Free RAM" is what this process may still take (../model/memory.ts: MemAvailable, and a cgroup v2
// limit's room). On the CPU the plan then refuses weights + KV cache above it, with the numbers: the
// KV pool is made resident at load (native/src/model/kv_cache.cc), so this is the memory the server
// will hold, and a limit is met at start-up rather than by an OOM kill at peak traffic.

import type { ModelConfigInfo } from '../model/config.js';
import type { NativeConfig, NativeLoadOptions } from '../native.js';

/**
 * max_model_len when none is asked for, capped by the model's max_position_embeddings. NOTE: vLLM takes
 * the full length; ERNIE-4.5-0.3B's (131,072) is more than the default KV cache holds, so the longest
 * requests could never run. The one definition: the sidecar, the loader and --help use it; the native
 * engine has no default of its own.
 */
export const DEFAULT_MAX_MODEL_LEN = 8192;
/** Tokens per KV block (vLLM's default): --block-size. */
export const DEFAULT_BLOCK_SIZE = 16;
const DEFAULT_CPU_KV_BYTES = 4 * 2 ** 30;
const DEFAULT_CPU_KV_FREE_FRACTION = 0.25;
const DEFAULT_GPU_MEMORY_UTILIZATION = 0.9;
/** Sequences per engine step (vLLM's default): --max-num-seqs. */
export const DEFAULT_MAX_NUM_SEQS = 256;

/**
 * Whether the LM head's GEMM input takes two activation planes. --lm-head-planes auto (undefined):
 * one for an int8 LM head (w8a8's usual form, still far closer to the reference than llama.cpp
 * Q8_0: bench/README, "LM head planes"), else as the layers (--dtype). The addon resolves its own
 * default the same way (native/src/binding/model_wrap.cc).
 */
export function resolveLmHeadPrecise(load: Pick<NativeLoadOptions, 'quantization' | 'lmHeadInt8' | 'precise' | 'lmHeadPrecise'>): boolean {
  if (load.lmHeadPrecise !== undefined) return load.lmHeadPrecise;
  const int8Head = load.quantization === 'int8' && load.lmHeadInt8 !== false;
  return load.precise !== false && !int8Head;
}

/**
 * The KV cache's element type where the caller left it to us: bf16 under int8 weights on a CPU whose
 * attention over a bf16 cache takes fast bf16 dot products (`bf16DotFast`: AVX512-BF16 kernels on a
 * host without AMX, bf16DotAttentionFast in ../model/load.ts), whose accuracy is then set by the
 * quantized GEMMs and which reads half the bytes; else fp32 (fp32-grade results, the reference's; on
 * the AMX Xeons measured, `vdpbf16ps` runs below their fp32 FMAs and an int8 prefill read 35% slower
 * over a bf16 cache: bench/README.md, "int8's default KV cache").
 */
export function resolveKvCacheDtype(load: Pick<NativeLoadOptions, 'quantization' | 'kvCacheDtype'>, bf16DotFast = false): 'float32' | 'bfloat16' {
  return load.kvCacheDtype ?? (load.quantization === 'int8' && bf16DotFast ? 'bfloat16' : 'float32');
}

/** What a caller may ask for; every field has a default. */
export type PlanOptions = Partial<
  Pick<
    NativeLoadOptions,
    | 'threads' | 'blockSize' | 'kvBlocks' | 'isa' | 'precise' | 'quantization' | 'lmHeadInt8' | 'lmHeadPrecise' | 'gpuMemoryUtilization'
    | 'enforceEager' | 'captureGraphs' | 'maxModelLen' | 'maxNumSeqs' | 'maxNumBatchedTokens' | 'kvCacheDtype'
  >
> & {
  kvCacheMemory?: number; // bytes for the KV cache
};

export interface PlanInput {
  config: ModelConfigInfo;
  /** The checkpoint's tensor bytes (0 when no weights are read). */
  weightBytes: number;
  device: 'cpu' | 'cuda';
  cudaLibrary: string;
  /** Memory this process may still take, in bytes (../model/memory.ts). */
  freeMemory: number;
  /** What bounded freeMemory, for the error message (default "free memory"). */
  freeMemorySource?: string;
  /** The CPU's bf16 dot-product attention is its fast one (resolveKvCacheDtype); absent: no. */
  bf16DotFast?: boolean;
  options: PlanOptions;
}

/** The addon's load options less the checkpoint's own part (config, tensors), every field set. */
export type PlannedLoad = Required<Omit<NativeLoadOptions, 'config' | 'tensors'>>;

export interface EnginePlan {
  device: 'cpu' | 'cuda';
  blockSize: number;
  /** 0 on CUDA without --kv-cache-memory: sized on the GPU while loading. */
  kvBlocks: number;
  kvBlockBytes: number;
  weightBytes: number;
  maxModelLen: number;
  maxNumBatchedTokens: number;
  load: PlannedLoad;
}

/** Bytes one KV block takes over all layers (K and V; fp32 unless the dtype says bfloat16). */
export function kvBlockBytes(c: NativeConfig, blockSize: number, dtype: 'float32' | 'bfloat16' = 'float32'): number {
  return c.numLayers * 2 * c.numKvHeads * blockSize * c.headDim * (dtype === 'bfloat16' ? 2 : 4);
}

/**
 * The token budget per step when none is given (--max-num-batched-tokens; the CUDA graphs are sized by
 * it). CPU 512: a CPU step is compute-bound, so a bigger budget only makes the steps that decoding
 * streams wait behind longer (time to first token measured at 512 / 1,024 / 2,048: bench/README.md).
 * CUDA 2,048: a GPU step of a few thousand rows costs little more than one of a few hundred.
 */
export function defaultBatchedTokens(device: 'cpu' | 'cuda'): number {
  return device === 'cuda' ? 2048 : 512;
}

export function planEngine(input: PlanInput): EnginePlan {
  const { config, device, options: o } = input;
  const blockSize = o.blockSize ?? DEFAULT_BLOCK_SIZE;
  if (!Number.isInteger(blockSize) || blockSize < 1 || blockSize > 1024) throw new RangeError('blockSize must be 1..1024');
  const kvCacheDtype = resolveKvCacheDtype(o, device === 'cpu' && input.bf16DotFast === true);
  const perBlock = kvBlockBytes(config.native, blockSize, kvCacheDtype);
  const kvBlocks = planKvBlocks(input, perBlock);
  const maxModelLen = o.maxModelLen ?? Math.min(config.maxPositionEmbeddings, DEFAULT_MAX_MODEL_LEN);
  if (maxModelLen > config.maxPositionEmbeddings) {
    throw new Error(`--max-model-len ${maxModelLen} exceeds the model's max_position_embeddings (${config.maxPositionEmbeddings})`);
  }
  const maxNumBatchedTokens = o.maxNumBatchedTokens ?? defaultBatchedTokens(device);
  if (device === 'cpu') checkFits(input, kvBlocks * perBlock);
  return {
    device,
    blockSize,
    kvBlocks,
    kvBlockBytes: perBlock,
    weightBytes: input.weightBytes,
    maxModelLen,
    maxNumBatchedTokens,
    load: {
      threads: o.threads ?? 0,
      kvBlocks,
      blockSize,
      isa: o.isa ?? '',
      precise: o.precise ?? true,
      quantization: o.quantization ?? 'none',
      lmHeadInt8: o.lmHeadInt8 ?? true,
      lmHeadPrecise: resolveLmHeadPrecise(o),
      device,
      cudaLibrary: input.cudaLibrary,
      gpuMemoryUtilization: o.gpuMemoryUtilization ?? DEFAULT_GPU_MEMORY_UTILIZATION,
      enforceEager: o.enforceEager ?? false,
      captureGraphs: o.captureGraphs ?? false,
      kvCacheDtype,
      maxModelLen,
      maxNumSeqs: o.maxNumSeqs ?? DEFAULT_MAX_NUM_SEQS,
      maxNumBatchedTokens,
    },
  };
}

function checkFits(input: PlanInput, kvBytes: number): void {
  const need = input.weightBytes + kvBytes;
  if (need <= input.freeMemory) return;
  const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;
  throw new Error(
    `not enough memory: the weights (${gib(input.weightBytes)}) and the KV cache (${gib(kvBytes)}) need ${gib(need)}, ` +
      `but this process can take only ${gib(input.freeMemory)} (${input.freeMemorySource ?? 'free memory'}); lower --kv-cache-memory`,
  );
}

/** The KV block count, by the rules in the header. */
function planKvBlocks(input: PlanInput, perBlock: number): number {
  const o = input.options;
  if (o.kvBlocks !== undefined) return o.kvBlocks;
  if (o.kvCacheMemory !== undefined) return Math.max(1, Math.floor(o.kvCacheMemory / perBlock));
  if (input.device === 'cuda') return 0;
  if (o.gpuMemoryUtilization !== undefined) {
    const budget = o.gpuMemoryUtilization * input.freeMemory - input.weightBytes;
    if (budget < perBlock) {
      throw new Error(`--gpu-memory-utilization ${o.gpuMemoryUtilization} leaves no memory for the KV cache after the weights (${input.weightBytes} bytes)`);
    }
    return Math.floor(budget / perBlock);
  }
  return Math.max(1, Math.floor(Math.min(DEFAULT_CPU_KV_BYTES, input.freeMemory * DEFAULT_CPU_KV_FREE_FRACTION) / perBlock));
}
