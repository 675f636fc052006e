// The gateway app over the REAL native engine on the tiny golden checkpoint (test/fixtures/golden/
// tiny: vocabulary 2048) with the test tokenizer, in one process: EngineHost is the EngineClient.
// Where a test compares what HTTP returns with the engine's own logits, or reads metrics that only a
// real engine measures, or (with `grammar`) where constrained output must really follow its grammar.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFormulaCheckpoint } from '../../src/sidecar/model/formula.js';
import { createApp, type AppHandle, type CreateAppOptions } from '../../src/gateway/app.js';
import type { ModelInfo } from '../../src/protocol/engine-client.js';
import { readCheckpoint } from '../../src/sidecar/model/checkpoint.js';
import { nativeLoadOptions } from '../../src/sidecar/model/load.js';
import { createNativeEngine } from '../../src/sidecar/native.js';
import { EngineHost } from '../../src/sidecar/server/engine-host.js';
import { GrammarPool } from '../../src/sidecar/grammar/pool.js';
import { grammarVocab } from '../../src/sidecar/grammar/vocab.js';
import { loadTokenizerBundle, type TokenizerBundle } from '../../src/sidecar/tokenizer/index.js';
import { TINY } from '../engine/engine-helpers.js';

export const REAL_MODEL = 'tiny-golden';

/** The tiny config with formula weights and a 3072-token vocabulary (covers the test tokenizer). */
export async function chatCheckpoint(): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ernie-tiny3k-'));
  const config = JSON.parse(readFileSync(path.join(TINY, 'config.json'), 'utf8')) as Record<string, unknown>;
  await writeFormulaCheckpoint(dir, { ...config, vocab_size: 3072 });
  return dir;
}
const TOKENIZER_DIR = fileURLToPath(new URL('../fixtures/golden/tokenizer/hf', import.meta.url));

export interface RealGateway {
  handle: AppHandle;
  host: EngineHost;
  bundle: TokenizerBundle;
  post: (path: string, body: unknown) => Promise<Response>;
  close: () => Promise<void>;
}

/**
 * The tiny checkpoint by default (`dir`), or another of its family; its vocabulary must cover the ids
 * the requests use (the tiny one's 2048 do not cover the chat template's markers: chat tests pass
 * chatCheckpoint()). maxNumBatchedTokens small enough that the golden prompts' prefills are chunked.
 */
export async function realGateway(
  opts: {
    maxNumBatchedTokens?: number;
    dir?: string;
    maxNumSeqs?: number;
    kvBlocks?: number;
    grammar?: boolean;
    maxModelLen?: number;
    /** createApp's options beyond the engine and the model name (e.g. enableAutoToolChoice). */
    app?: Omit<CreateAppOptions, 'engine' | 'servedModelName'>;
  } = {},
): Promise<RealGateway> {
  const maxModelLen = opts.maxModelLen ?? 1024;
  const maxNumSeqs = opts.maxNumSeqs ?? 8;
  const kvBlocks = opts.kvBlocks ?? 64;
  const dir = opts.dir ?? TINY;
  const bundle = await loadTokenizerBundle(TOKENIZER_DIR, { maxModelLen });
  const ck = await readCheckpoint(dir);
  const model: ModelInfo = { id: REAL_MODEL, root: dir, maxModelLen, maxNumSeqs, vocabSize: ck.config.native.vocabSize, createdAt: 1_750_000_000, generationDefaults: {}, placeholder: false };
  const cacheConfig = { block_size: '16', num_gpu_blocks: String(kvBlocks), cache_dtype: 'float32', enable_prefix_caching: 'true' };
  // grammar: a grammar pool (xgrammar over the model's vocabulary) for structured-output tests.
  const grammar = opts.grammar ? await GrammarPool.start({ vocab: grammarVocab(bundle.tokenizer, model.vocabSize, bundle.eosIds), workers: 1, cacheSize: 64 }) : undefined;
  const host = await EngineHost.start({ bundle, model, maxNumQueuedReqs: 16, cacheConfig, ...(grammar ? { grammar } : {}) }, (onStep) =>
    createNativeEngine(
      nativeLoadOptions(ck, { kvBlocks, blockSize: 16, threads: 2 }),
      { maxModelLen, maxNumSeqs, maxNumBatchedTokens: opts.maxNumBatchedTokens ?? 64, enablePrefixCaching: true, seed: 0 },
      onStep,
    ),
  );
  const handle = createApp({ ...opts.app, engine: host, servedModelName: REAL_MODEL });
  const post = (path: string, body: unknown) =>
    Promise.resolve(handle.fetch(new Request(`http://test${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })));
  return { handle, host, bundle, post, close: () => host.close() };
}
