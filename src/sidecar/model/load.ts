// Loads a checkpoint directory into the native engine: reads and checks the tensor table (TS),
// then maps the weights and sizes the paged KV cache (native, off the event loop).
import os from 'node:os';
import { native, type NativeLoadOptions, type NativeModel } from '../native.js';
import { readCheckpoint, type Checkpoint } from './checkpoint.js';

export interface LoadOptions {
  threads?: number; // default: all cores
  blockSize?: number; // tokens per KV block (default 16)
  kvBlocks?: number; // exact number of KV blocks; else derived from kvCacheMemory
  kvCacheMemory?: number; // bytes for the KV cache (default: min(4 GiB, 25% of free memory))
  isa?: '' | 'avx512' | 'avx2';
  precise?: boolean;
}

export interface LoadedModel {
  model: NativeModel;
  checkpoint: Checkpoint;
  blockSize: number;
  kvBlocks: number;
  kvBlockBytes: number;
}

/** Bytes one KV block takes over all layers (K and V, fp32). */
export function kvBlockBytes(ck: Checkpoint, blockSize: number): number {
  const c = ck.config.native;
  return c.numLayers * 2 * c.numKvHeads * blockSize * c.headDim * 4;
}

/** The native load options for a checkpoint (weights, KV sizing, kernels). */
export function nativeLoadOptions(checkpoint: Checkpoint, opts: LoadOptions = {}): NativeLoadOptions & { kvBlockBytes: number } {
  const blockSize = opts.blockSize ?? 16;
  if (!Number.isInteger(blockSize) || blockSize < 1 || blockSize > 1024) throw new RangeError('blockSize must be 1..1024');
  const perBlock = kvBlockBytes(checkpoint, blockSize);
  const budget = opts.kvCacheMemory ?? Math.min(4 * 2 ** 30, os.freemem() * 0.25);
  const kvBlocks = opts.kvBlocks ?? Math.max(1, Math.floor(budget / perBlock));
  return {
    config: checkpoint.config.native,
    tensors: checkpoint.tensors,
    threads: opts.threads ?? 0,
    kvBlocks,
    blockSize,
    isa: opts.isa ?? '',
    precise: opts.precise ?? true,
    kvBlockBytes: perBlock,
  };
}

export async function loadModel(dir: string, opts: LoadOptions = {}): Promise<LoadedModel> {
  const checkpoint = await readCheckpoint(dir);
  const blockSize = opts.blockSize ?? 16;
  if (!Number.isInteger(blockSize) || blockSize < 1 || blockSize > 1024) throw new RangeError('blockSize must be 1..1024');
  const perBlock = kvBlockBytes(checkpoint, blockSize);
  const budget = opts.kvCacheMemory ?? Math.min(4 * 2 ** 30, os.freemem() * 0.25);
  const kvBlocks = opts.kvBlocks ?? Math.max(1, Math.floor(budget / perBlock));
  const model = await native().loadModel({
    config: checkpoint.config.native,
    tensors: checkpoint.tensors,
    threads: opts.threads ?? 0,
    kvBlocks,
    blockSize,
    isa: opts.isa ?? '',
    precise: opts.precise ?? true,
  });
  return { model, checkpoint, blockSize, kvBlocks, kvBlockBytes: perBlock };
}
