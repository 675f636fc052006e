// The sidecar's one dependency on an engine implementation: a factory from (checkpoint, options) to a
// NativeEngine. `nativeEngineFactory` is the C++ engine (native/src/engine), the only one the shipped
// CLI uses; tests inject a double (test/doubles/fake-native-engine-factory.ts) through startSidecar's
// deps or the CLI's main() deps.

import { readCheckpoint, type Checkpoint } from '../model/checkpoint.js';
import { nativeLoadOptions, type LoadOptions } from '../model/load.js';
import { native } from '../native.js';
import type { TokenizerBundle } from '../tokenizer/index.js';
import type { EngineOptions, NativeEngine, StepCallback } from './native-engine.js';

export interface EnginePlan {
  checkpoint: Checkpoint;
  kvBlocks: number;
  blockSize: number;
  kvBlockBytes: number;
  weightBytes: number;
  device: 'cpu' | 'cuda';
}

export interface EngineFactory {
  /** 'native', or 'fake' for a test double: for the start-up log. */
  readonly kind: 'native' | 'fake';
  /** Reads what the engine needs from the model directory and sizes the KV cache (no weights loaded). */
  plan(dir: string, load: LoadOptions): Promise<EnginePlan>;
  create(plan: EnginePlan, load: LoadOptions, engine: EngineOptions, bundle: TokenizerBundle, onStep: StepCallback): Promise<NativeEngine>;
}

export const nativeEngineFactory: EngineFactory = {
  kind: 'native',
  async plan(dir, load) {
    const checkpoint = await readCheckpoint(dir);
    const o = nativeLoadOptions(checkpoint, load);
    const weightBytes = checkpoint.tensors.reduce((n, t) => n + t.nbytes, 0);
    return { checkpoint, kvBlocks: o.kvBlocks, blockSize: o.blockSize, kvBlockBytes: o.kvBlockBytes, weightBytes, device: o.device ?? 'cpu' };
  },
  async create(plan, load, engine, _bundle, onStep) {
    const { kvBlockBytes: _perBlock, ...opts } = nativeLoadOptions(plan.checkpoint, { ...load, kvBlocks: plan.kvBlocks });
    return native().createEngine(opts, engine, onStep);
  },
};
