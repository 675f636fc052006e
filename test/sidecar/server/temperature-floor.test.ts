// The temperature floor (issue #26) where every client meets it: the engine. A client of the engine
// protocol (here FramedEngineClient over the sidecar's Unix socket, no gateway in between) that sends a
// subnormal temperature gets greedy tokens, as with temperature 0: the sampler divides logits by the
// temperature in fp32, where 1/1e-40 overflows to infinity and the draw becomes noise. The gateway
// applies the same floor (src/gateway/sampling.ts), so HTTP clients saw greedy before; direct engine
// clients did not. Real native engine, tiny formula checkpoint, real tokenizer.
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineClient } from '../../../src/protocol/engine-client.js';
import { createUnixEngineClient } from '../../../src/protocol/node-socket.js';
import { nativeEngineFactory } from '../../../src/sidecar/engine/factory.js';
import { startSidecar, type RunningSidecar } from '../../../src/sidecar/main.js';
import { writeFormulaCheckpoint } from '../../../src/sidecar/model/formula.js';
import { GOLDEN } from '../../engine/helpers.js';
import { choice, request } from './helpers.js';

const quiet = { info() {}, warn() {}, error() {} };
let dir: string;
let sc: RunningSidecar;
let client: EngineClient;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ernie-tfloor-'));
  const model = path.join(dir, 'model');
  const config = JSON.parse(await readFile(path.join(GOLDEN, 'tiny', 'config.json'), 'utf8'));
  await writeFormulaCheckpoint(model, { ...config, vocab_size: 3072, max_position_embeddings: 512 });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(GOLDEN, 'tokenizer', 'hf', f), path.join(model, f));
  const sock = path.join(dir, 'engine.sock');
  sc = await startSidecar(
    {
      model,
      engine: { maxNumSeqs: 8, maxNumBatchedTokens: 256, enablePrefixCaching: true, seed: 0 },
      blockSize: 16,
      threads: 1,
      kvCacheMemory: 16 * 2 ** 20,
      maxNumQueuedReqs: 8,
      tokenizerPoolSize: 0,
      listen: [{ kind: 'unix', path: sock }],
    },
    { logger: quiet, factory: nativeEngineFactory },
  );
  await sc.loaded;
  client = createUnixEngineClient(sock);
}, 60_000);

afterAll(async () => {
  await client?.close();
  await sc?.close(1000);
  await rm(dir, { recursive: true, force: true });
});

async function generate(temperature: number, seed: number | null): Promise<{ tokenIds: number[]; logprobs: number[] }> {
  const events = [];
  const req = request({ prompt: { kind: 'text', text: 'Once upon a time' }, sampling: { maxTokens: 24, ignoreEos: true, temperature, seed, logprobs: 0 } });
  for await (const ev of client.stream(req)) events.push(ev);
  const c = choice(events);
  return { tokenIds: c.tokenIds, logprobs: c.logprobs.map((l) => l.logprob) };
}

describe('temperature floor in the engine (a direct engine-protocol client)', () => {
  it.each([1e-40, 1e-44, 1e-39, 1e-30, 9.9e-6])('temperature %s is greedy: the tokens of temperature 0', async (t) => {
    const greedy = await generate(0, null);
    expect(greedy.tokenIds).toHaveLength(24);
    for (const seed of [1, 2, 3]) {
      const out = await generate(t, seed);
      expect(out.tokenIds).toEqual(greedy.tokenIds);
      expect(out.logprobs).toEqual(greedy.logprobs);
    }
  });

  it('a temperature at the floor and above still samples: different seeds give different tokens', async () => {
    const runs = await Promise.all([11, 12, 13, 14].map((seed) => generate(1, seed)));
    expect(new Set(runs.map((r) => r.tokenIds.join(','))).size).toBeGreaterThan(1);
    for (const r of runs) expect(r.logprobs.every(Number.isFinite)).toBe(true);
  });
});
