// The sidecar's one dependency on an engine implementation: how to read a model directory, which
// device a --device choice resolves to, and how to start an engine from the plan (./plan.ts).
// `nativeEngineFactory` is the C++ engine (native/src/engine), the only one the shipped CLI uses;
// tests inject a double (test/doubles/fake-native-engine-factory.ts) through startSidecar's deps or
// the CLI's main() deps.

import { readCheckpoint, type Checkpoint } from '../model/checkpoint.js';
import type { DeviceChoice } from '../model/device.js';
import { resolveNativeDevice } from '../model/load.js';
import { createNativeEngine } from '../native.js';
import type { TokenizerBundle } from '../tokenizer/index.js';
import type { EngineOptions, NativeEngine, StepCallback } from './native-engine.js';
import type { EnginePlan } from './plan.js';

export interface EngineFactory {
  /** 'native', or 'fake' for a test double: for the start-up log. */
  readonly kind: 'native' | 'fake';
  /** config.json and the tensor table (no weights read; a double may list no tensors). */
  readCheckpoint(dir: string): Promise<Checkpoint>;
  /** The device `choice` loads on here; an error that says why when 'cuda' cannot run. */
  resolveDevice(choice: DeviceChoice, cudaLibrary: string): 'cpu' | 'cuda';
  /** Loads the weights and starts the engine as planned. */
  create(checkpoint: Checkpoint, plan: EnginePlan, engine: EngineOptions, bundle: TokenizerBundle, onStep: StepCallback): Promise<NativeEngine>;
}

export const nativeEngineFactory: EngineFactory = {
  kind: 'native',
  readCheckpoint,
  resolveDevice: resolveNativeDevice,
  create: (checkpoint, plan, engine, _bundle, onStep) =>
    createNativeEngine({ config: checkpoint.config.native, tensors: checkpoint.tensors, ...plan.load }, engine, onStep),
};
