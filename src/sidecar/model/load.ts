// Loads a checkpoint directory into the native engine: reads and checks the tensor table (TS),
// then maps the weights and sizes the paged KV cache (native, off the event loop).
import os from 'node:os';
import { native, type NativeLoadOptions, type NativeModel } from '../native.js';
import { readCheckpoint, type Checkpoint } from './checkpoint.js';
import { defaultCudaLibrary, resolveDevice, type DeviceChoice } from './device.js';

/**
 * What a caller chooses when loading. The native options (native.ts) it shares are optional here;
 * the rest is resolved by nativeLoadOptions(): the KV size from kvCacheMemory (default min(4 GiB,
 * 25% of free memory)) and the device from 'auto' ('cpu' is the default; 'auto' picks CUDA when
 * native/cuda is built and a GPU is present).
 */
export type LoadOptions = Partial<
  Pick<
    NativeLoadOptions,
    | 'threads' | 'blockSize' | 'kvBlocks' | 'isa' | 'precise' | 'cudaLibrary' | 'gpuMemoryUtilization'
    | 'enforceEager' | 'captureGraphs' | 'maxModelLen' | 'maxNumSeqs' | 'maxNumBatchedTokens' | 'kvCacheDtype'
  >
> & {
  kvCacheMemory?: number; // bytes for the KV cache
  device?: DeviceChoice;
};

export interface LoadedModel {
  model: NativeModel;
  checkpoint: Checkpoint;
  blockSize: number;
  kvBlocks: number;
  kvBlockBytes: number;
}

/** Bytes one KV block takes over all layers (K and V; fp32 unless the dtype says bfloat16). */
export function kvBlockBytes(ck: Checkpoint, blockSize: number, dtype: 'float32' | 'bfloat16' = 'float32'): number {
  const c = ck.config.native;
  return c.numLayers * 2 * c.numKvHeads * blockSize * c.headDim * (dtype === 'bfloat16' ? 2 : 4);
}

/**
 * The token budget per step when none is given (--max-num-batched-tokens, LoadOptions: the CUDA
 * graphs are sized by it). CPU 512: measured on this project's 2-core machine (.cache/dev/ttft.ts, bench:engine's 32-stream level: 64 requests,
 * closed loop), TTFT p50 1,510 / 1,746 / 2,268 ms and wall 67 / 69 / 77 s at 512 / 1,024 / 2,048
 * (fp32-grade), 965 / 1,043 / 1,732 ms at 41-42 s with bf16: a CPU step is compute-bound, so a
 * bigger budget only makes the steps that decoding streams wait behind longer. CUDA 2,048: a GPU
 * step of a few thousand rows costs little more than one of a few hundred.
 */
export function defaultBatchedTokens(device: 'cpu' | 'cuda'): number {
  return device === 'cuda' ? 2048 : 512;
}

/**
 * The context length when none is given (--max-model-len): the model's max_position_embeddings, capped
 * at DEFAULT_MAX_MODEL_LEN. NOTE: vLLM takes the full length; ERNIE-4.5-0.3B's (131,072) is more than
 * the default KV cache holds, so the longest requests could never run. The one definition: the sidecar,
 * the loader and --help use it; the native engine has no default of its own.
 */
export const DEFAULT_MAX_MODEL_LEN = 8192;
export function defaultMaxModelLen(maxPositionEmbeddings: number): number {
  return Math.min(maxPositionEmbeddings, DEFAULT_MAX_MODEL_LEN);
}

/** The native load options for a checkpoint (device, weights, KV sizing, kernels). */
export function nativeLoadOptions(checkpoint: Checkpoint, opts: LoadOptions = {}): NativeLoadOptions & { kvBlockBytes: number } {
  const blockSize = opts.blockSize ?? 16;
  if (!Number.isInteger(blockSize) || blockSize < 1 || blockSize > 1024) throw new RangeError('blockSize must be 1..1024');
  const kvCacheDtype = opts.kvCacheDtype ?? 'float32';
  const perBlock = kvBlockBytes(checkpoint, blockSize, kvCacheDtype);
  const cudaLibrary = opts.cudaLibrary ?? defaultCudaLibrary();
  const device = resolveDevice(opts.device ?? 'cpu', cudaLibrary, (lib) => native().cudaInfo(lib));
  let kvBlocks: number;
  if (opts.kvBlocks !== undefined) kvBlocks = opts.kvBlocks;
  else if (device === 'cuda' && opts.kvCacheMemory === undefined) kvBlocks = 0; // sized on the GPU by gpuMemoryUtilization
  else kvBlocks = Math.max(1, Math.floor((opts.kvCacheMemory ?? Math.min(4 * 2 ** 30, os.freemem() * 0.25)) / perBlock));
  return {
    config: checkpoint.config.native,
    tensors: checkpoint.tensors,
    threads: opts.threads ?? 0,
    kvBlocks,
    blockSize,
    isa: opts.isa ?? '',
    precise: opts.precise ?? true,
    device,
    cudaLibrary,
    gpuMemoryUtilization: opts.gpuMemoryUtilization ?? 0.9,
    enforceEager: opts.enforceEager ?? false,
    captureGraphs: opts.captureGraphs ?? false,
    kvCacheDtype,
    maxModelLen: opts.maxModelLen ?? defaultMaxModelLen(checkpoint.config.maxPositionEmbeddings),
    maxNumSeqs: opts.maxNumSeqs ?? 256,
    maxNumBatchedTokens: opts.maxNumBatchedTokens ?? defaultBatchedTokens(device),
    kvBlockBytes: perBlock,
  };
}

export async function loadModel(dir: string, opts: LoadOptions = {}): Promise<LoadedModel> {
  const checkpoint = await readCheckpoint(dir);
  const { kvBlockBytes: perBlock, ...lo } = nativeLoadOptions(checkpoint, opts);
  const model = await native().loadModel(lo);
  return { model, checkpoint, blockSize: lo.blockSize, kvBlocks: model.info().kvBlocks, kvBlockBytes: perBlock };
}
