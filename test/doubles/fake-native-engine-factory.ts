// The sidecar's EngineFactory (src/sidecar/engine/factory.ts) over FakeNativeEngine: reads only
// config.json (shapes, no weights: the directory may have none), always runs on the "cpu", and
// answers with the deterministic double, so sidecar and process tests run without a model. Injected
// through startSidecar's deps or the CLI's main() deps (./fake-bin.js); never reachable from the
// shipped CLI.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { EngineFactory } from '../../src/sidecar/engine/factory.js';
import { parseModelConfig } from '../../src/sidecar/model/config.js';
import { FakeNativeEngine } from './fake-native-engine.js';

/** Text the fake engine cycles through (mixed scripts: exercises multi-byte streaming). */
const FAKE_CORPUS = 'The quick brown fox jumps over the lazy dog. 春眠不觉晓，处处闻啼鸟。Hello, world! 你好，世界。';
/** The pool when the plan leaves sizing to the device (kvBlocks 0, CUDA): the fake's pretend device. */
const DEVICE_SIZED_BLOCKS = 1024;

export function fakeNativeEngineFactory(opts: { stepMs?: number; pace?: 'interval' | 'fixed' } = {}): EngineFactory {
  return {
    kind: 'fake',
    async readCheckpoint(dir) {
      const file = path.join(dir, 'config.json');
      const rawConfig = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
      return { dir, config: parseModelConfig(file, rawConfig), rawConfig, tensors: [], files: [] };
    },
    resolveDevice: () => 'cpu',
    async create(checkpoint, plan, engine, bundle, onStep) {
      const corpus = bundle.encodePrompt(FAKE_CORPUS, { addSpecialTokens: false });
      // Start only where a character starts (not on a UTF-8 continuation byte piece), so a full lap is valid text.
      const starts = corpus.map((id, i) => ((bundle.tokenizer.tokenBytes(id)[0] ?? 0) >> 6 === 0b10 ? -1 : i)).filter((i) => i >= 0);
      return new FakeNativeEngine(
        {
          engine,
          vocabSize: checkpoint.config.native.vocabSize,
          corpus,
          starts,
          eosId: bundle.eosIds[0] ?? 0,
          kvBlocks: plan.kvBlocks > 0 ? plan.kvBlocks : DEVICE_SIZED_BLOCKS,
          blockSize: plan.blockSize,
          stepMs: opts.stepMs,
          pace: opts.pace,
        },
        onStep,
      );
    },
  };
}
