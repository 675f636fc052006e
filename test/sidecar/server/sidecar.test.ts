// The sidecar body in-process (startSidecar with the fake engine) over a real Unix socket, the loading
// backend, the embedded default directory and generation defaults (checked against ERNIE's real files
// in ../shared when present).
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../../src/protocol/engine-client.js';
import { createUnixEngineClient } from '../../../src/protocol/node-socket.js';
import type { EngineFactory } from '../../../src/sidecar/engine/factory.js';
import { startSidecar } from '../../../src/sidecar/main.js';
import { DEFAULT_MODEL_NAME, ensureDefaultModelDir, ERNIE_GENERATION_CONFIG } from '../../../src/sidecar/model/default-bundle.js';
import { readGenerationDefaults } from '../../../src/sidecar/server/generation-defaults.js';
import { LoadingBackend } from '../../../src/sidecar/server/loading-backend.js';
import { fakeNativeEngineFactory } from '../../doubles/fake-native-engine-factory.js';
import { request } from './helpers.js';

const REAL_ERNIE = fileURLToPath(new URL('../../../../shared/ernie-4.5-0.3b', import.meta.url));
const tmp = (p: string) => mkdtempSync(path.join(os.tmpdir(), p));
const quiet = { info() {}, warn() {}, error() {} };

describe('startSidecar (fake engine)', () => {
  it('answers NOT_READY until loaded, then serves the default model over a 0600 Unix socket', async () => {
    const sock = path.join(tmp('ernie-sc-'), 'engine.sock');
    const savedCache = process.env.ERNIE_EDGE_CACHE;
    process.env.ERNIE_EDGE_CACHE = tmp('ernie-cache-'); // the default model's cache root (read by ensureDefaultModelDir)
    const warnings: string[] = [];
    const sc = await startSidecar(
      {
        engine: { maxNumSeqs: 8, maxNumBatchedTokens: 256, enablePrefixCaching: true, seed: 0 },
        blockSize: 16,
        maxNumQueuedReqs: 8,
        listen: [{ kind: 'unix', path: sock }],
      },
      { logger: { ...quiet, warn: (_o: object, m?: string) => warnings.push(m ?? '') }, factory: fakeNativeEngineFactory() },
    );
    await sc.loaded;
    expect(warnings.some((w) => /MEANINGLESS until --model/.test(w))).toBe(true);
    const client = createUnixEngineClient(sock);
    const model = await client.model();
    expect(model).toMatchObject({ id: DEFAULT_MODEL_NAME, maxModelLen: 8192, vocabSize: 103424, placeholder: true });
    expect(model.generationDefaults).toEqual({ temperature: 0.8, topP: 0.8, repetitionPenalty: 1 });
    const events = [];
    for await (const ev of client.stream(request({ prompt: { kind: 'text', text: '你好' }, sampling: { maxTokens: 4, ignoreEos: true } }))) events.push(ev);
    expect(events.at(-1)).toMatchObject({ type: 'done', usage: { completionTokens: 4 } });
    await client.close();
    await sc.close(1000);
    if (savedCache === undefined) delete process.env.ERNIE_EDGE_CACHE;
    else process.env.ERNIE_EDGE_CACHE = savedCache;
  });

  // --max-num-batched-tokens absent: the budget follows the device the model loads on (512 CPU,
  // 2048 CUDA: defaultBatchedTokens, src/sidecar/engine/plan.ts); given, it is kept. Both the load
  // options (CUDA graphs are sized by it) and the engine get the resolved value.
  it.each([
    ['cpu', undefined, 512],
    ['cuda', undefined, 2048],
    ['cpu', 300, 300],
    ['cuda', 300, 300],
  ] as const)('token budget on %s with --max-num-batched-tokens %s: %i', async (device, given, expected) => {
    const savedCache = process.env.ERNIE_EDGE_CACHE;
    process.env.ERNIE_EDGE_CACHE = tmp('ernie-cache-');
    const fake = fakeNativeEngineFactory();
    const seen: { load?: number; engine?: number } = {};
    const factory: EngineFactory = {
      kind: 'fake',
      readCheckpoint: (dir) => fake.readCheckpoint(dir),
      resolveDevice: () => device,
      create: (checkpoint, plan, engine, bundle, onStep) => {
        seen.load = plan.load.maxNumBatchedTokens;
        seen.engine = engine.maxNumBatchedTokens;
        return fake.create(checkpoint, plan, engine, bundle, onStep);
      },
    };
    const sock = path.join(tmp('ernie-sc-'), 'engine.sock');
    const sc = await startSidecar(
      {
        engine: { maxNumSeqs: 8, maxNumBatchedTokens: given, enablePrefixCaching: true, seed: 0 },
        blockSize: 16,
        maxNumQueuedReqs: 8,
        listen: [{ kind: 'unix', path: sock }],
      },
      { logger: quiet, factory },
    );
    await sc.loaded;
    await sc.close(1000);
    if (savedCache === undefined) delete process.env.ERNIE_EDGE_CACHE;
    else process.env.ERNIE_EDGE_CACHE = savedCache;
    expect(seen).toEqual({ load: expected, engine: expected });
  });

  it('LoadingBackend: NOT_READY with the status while loading, the failure after', async () => {
    const b = new LoadingBackend();
    b.setStatus('generating default weights');
    expect(await b.health()).toEqual({ ready: false, loading: true, draining: false, message: 'generating default weights' });
    await expect(b.model()).rejects.toMatchObject({ code: 'NOT_READY' });
    expect(() => b.stream(request())).toThrow(EngineError);
    await b.abort('x'); // nothing to abort: no error
    b.failed(new Error('boom'));
    expect(await b.health()).toMatchObject({ ready: false, loading: false, message: 'boom' });
    await expect(b.stats()).rejects.toThrow(/failed to load: boom/);
  });
});

describe('embedded default model directory', () => {
  it('holds config, tokenizer files and ERNIE generation_config; idempotent', async () => {
    const root = tmp('ernie-default-');
    const a = await ensureDefaultModelDir({ weights: false, root });
    const b = await ensureDefaultModelDir({ weights: false, root });
    expect(b.dir).toBe(a.dir);
    expect(readdirSync(a.dir).sort()).toEqual(['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer.model', 'tokenizer_config.json']);
    expect(JSON.parse(readFileSync(path.join(a.dir, 'generation_config.json'), 'utf8'))).toMatchObject({ do_sample: true, top_p: 0.8, temperature: 0.8, eos_token_id: 2 });
  });

  it('generation defaults read only the values present', async () => {
    const d = tmp('ernie-gen-');
    expect(await readGenerationDefaults(d)).toEqual({});
  });

  it("matches ERNIE-4.5-0.3B's published generation_config.json", async () => {
    if (!existsSync(path.join(REAL_ERNIE, 'generation_config.json'))) {
      console.log(`skipped: ${REAL_ERNIE} is absent (the real ERNIE JSON files are not in this checkout)`);
      return;
    }
    expect(JSON.parse(readFileSync(path.join(REAL_ERNIE, 'generation_config.json'), 'utf8'))).toEqual(ERNIE_GENERATION_CONFIG);
    expect(await readGenerationDefaults(REAL_ERNIE)).toEqual({ temperature: 0.8, topP: 0.8, repetitionPenalty: 1 });
  });
});
