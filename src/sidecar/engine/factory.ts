// The sidecar's one dependency on an engine implementation: a factory from (checkpoint, options) to a
// NativeEngine. `nativeEngineFactory` is the C++ engine (native/src/engine); `fakeEngineFactory` is the
// deterministic stand-in, selected by the TEST-ONLY env var ERNIE_EDGE_FAKE_ENGINE=1 (process tests
// run without weights). Switching implementations is `selectEngineFactory`, nothing else.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { readCheckpoint, type Checkpoint } from '../model/checkpoint.js';
import { parseModelConfig } from '../model/config.js';
import { nativeLoadOptions, type LoadOptions } from '../model/load.js';
import { native } from '../native.js';
import type { TokenizerBundle } from '../tokenizer/index.js';
import { FakeNativeEngine } from './fake-native-engine.js';
import { ENGINE_LIMITS, type EngineOptions, type NativeEngine, type StepCallback } from './native-engine.js';

export interface EnginePlan {
  checkpoint: Checkpoint;
  kvBlocks: number;
  blockSize: number;
  kvBlockBytes: number;
  weightBytes: number;
  device: 'cpu' | 'cuda';
}

export interface EngineFactory {
  /** 'native' or 'fake', for the start-up log. */
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
    return native().createEngine(opts, { ...engine, ...ENGINE_LIMITS }, onStep);
  },
};

/** Text the fake engine cycles through (mixed scripts: exercises multi-byte streaming). */
const FAKE_CORPUS = 'The quick brown fox jumps over the lazy dog. 春眠不觉晓，处处闻啼鸟。Hello, world! 你好，世界。';

export function fakeEngineFactory(opts: { stepMs?: number } = {}): EngineFactory {
  return {
    kind: 'fake',
    async plan(dir, load) {
      // Only config.json: the fake needs shapes, not weights (the directory may have none).
      const file = path.join(dir, 'config.json');
      const rawConfig = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
      const checkpoint: Checkpoint = { dir, config: parseModelConfig(file, rawConfig), rawConfig, tensors: [], files: [] };
      const blockSize = load.blockSize ?? 16;
      return { checkpoint, kvBlocks: load.kvBlocks ?? 1024, blockSize, kvBlockBytes: 0, weightBytes: 0, device: 'cpu' };
    },
    async create(plan, _load, engine, bundle, onStep) {
      const corpus = bundle.encodePrompt(FAKE_CORPUS, { addSpecialTokens: false });
      // Start only where a character starts (not on a UTF-8 continuation byte piece), so a full lap is valid text.
      const starts = corpus.map((id, i) => ((bundle.tokenizer.tokenBytes(id)[0] ?? 0) >> 6 === 0b10 ? -1 : i)).filter((i) => i >= 0);
      return new FakeNativeEngine(
        {
          engine,
          vocabSize: plan.checkpoint.config.native.vocabSize,
          corpus,
          starts,
          eosId: bundle.eosIds[0] ?? 0,
          kvBlocks: plan.kvBlocks,
          blockSize: plan.blockSize,
          stepMs: opts.stepMs,
        },
        onStep,
      );
    },
  };
}

/** ERNIE_EDGE_FAKE_ENGINE=1 (tests only) selects the fake; ERNIE_EDGE_FAKE_STEP_MS paces its steps. */
export function selectEngineFactory(env: NodeJS.ProcessEnv): EngineFactory {
  if (env.ERNIE_EDGE_FAKE_ENGINE === '1') return fakeEngineFactory({ stepMs: Number(env.ERNIE_EDGE_FAKE_STEP_MS ?? 0) || 0 });
  return nativeEngineFactory;
}
