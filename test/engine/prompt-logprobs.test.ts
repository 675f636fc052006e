// Prompt logprobs in the native engine (CPU): computed in the same prefill as the KV cache, they must
// equal the log-softmax of the model's own logits at every prompt position (model.forward with every
// row's logits), whatever the chunking, the batch or the prefix cache; plus max_tokens 0 (prefill
// only) and the HF reference within the logits' tolerance.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel } from '../../src/sidecar/model/load.js';
import type { NativeModel } from '../../src/sidecar/native.js';
import type { StepPromptLogprobs } from '../../src/sidecar/engine/native-engine.js';
import { TestEngine } from './engine-helpers.js';
import { GOLDEN, logSoftmaxRow, readF32, readGolden, scatteredBlocks } from './helpers.js';

const golden = readGolden('tiny');
const V = 2048;

interface Collected {
  logprobs: number[];
  ranks: number[];
  topIds: number[][];
  topLogprobs: number[][];
  starts: number[];
}

/** Concatenates a request's prompt-logprob runs (choice 0), checking they are contiguous from 1. */
function collect(t: TestEngine, k: number): Map<number, Collected> {
  const got = new Map<number, Collected>();
  t.onOutput = (o) => {
    if (!o.prompt) return;
    expect(o.index).toBe(0);
    const c = got.get(o.id) ?? { logprobs: [], ranks: [], topIds: [], topLogprobs: [], starts: [] };
    got.set(o.id, c);
    const p: StepPromptLogprobs = o.prompt;
    expect(p.start).toBe(1 + c.logprobs.length);
    c.starts.push(p.start);
    c.logprobs.push(...p.logprobs);
    c.ranks.push(...p.ranks);
    for (let i = 0; i < p.logprobs.length; i++) {
      c.topIds.push(Array.from(p.topIds.subarray(i * k, (i + 1) * k)));
      c.topLogprobs.push(Array.from(p.topLogprobs.subarray(i * k, (i + 1) * k)));
    }
  };
  return got;
}

let model: NativeModel;
const forwardAll = (prompt: number[], seed: number) =>
  model.forward([{ tokens: Int32Array.from(prompt), startPos: 0, blockTable: scatteredBlocks(16, 64, seed), logits: 2 }]);

beforeAll(async () => {
  model = (await loadModel(path.join(GOLDEN, 'tiny'), { kvBlocks: 64, blockSize: 16, threads: 2 })).model;
});
afterAll(() => model.close());

/** Every prompt position: logprob, rank and top-k against the model's own logits. */
async function expectMatchesModel(prompt: number[], c: Collected, k: number, seed: number): Promise<void> {
  const logits = await forwardAll(prompt, seed);
  expect(c.logprobs.length).toBe(prompt.length - 1);
  for (let j = 1; j < prompt.length; j++) {
    const ls = logSoftmaxRow(logits, j - 1);
    expect(Math.abs(c.logprobs[j - 1]! - ls[prompt[j]!]!)).toBeLessThan(1e-4);
    const own = logits[(j - 1) * V + prompt[j]!]!;
    let above = 0;
    for (let v = 0; v < V; v++) above += logits[(j - 1) * V + v]! > own ? 1 : 0;
    expect(c.ranks[j - 1]).toBe(above + 1);
    const order = Array.from(ls.keys()).sort((a, b) => ls[b]! - ls[a]! || a - b).slice(0, k);
    expect(c.topIds[j - 1]).toEqual(order);
    c.topLogprobs[j - 1]!.forEach((lp, i) => expect(Math.abs(lp - ls[order[i]!]!)).toBeLessThan(1e-4));
  }
}

describe('prompt logprobs (CPU engine)', () => {
  it('equal the log-softmax of the model logits at every prompt position, with max_tokens 0 generating nothing', async () => {
    const t = await TestEngine.create();
    try {
      const got = collect(t, 3);
      const reqs = golden.prompts.map((p, i) => ({ id: i + 1, prompt: p.prompt, maxTokens: 0, promptLogprobs: 3 }));
      const res = await t.run(reqs);
      for (const [i, p] of golden.prompts.entries()) {
        const choice = res.get(i + 1)![0]!;
        expect(choice.tokens).toEqual([]);
        expect(choice.finish).toBe(2); // Length
        if (p.prompt.length === 1) {
          expect(got.has(i + 1)).toBe(false); // nothing predicts a prompt's first token
          continue;
        }
        await expectMatchesModel(p.prompt, got.get(i + 1)!, 3, i + 1);
        // HF's own logits agree within what the logits do (SPEC.md: 2e-2 per logit, so 4e-2 per logprob).
        const hf = readF32('tiny', p.prefill_logits_file!);
        for (let j = 1; j < p.prompt.length; j++) {
          expect(Math.abs(got.get(i + 1)!.logprobs[j - 1]! - logSoftmaxRow(hf, j - 1)[p.prompt[j]!]!)).toBeLessThan(4e-2);
        }
      }
    } finally {
      await t.close();
    }
  });

  it('are the same when the prefill is chunked, batched beside another request, and then generation goes on greedily', async () => {
    const t = await TestEngine.create({ maxNumBatchedTokens: 7 });
    try {
      const got = collect(t, 2);
      const p = golden.prompts[golden.prompts.length - 1]!;
      const res = await t.run([
        { id: 1, prompt: p.prompt, maxTokens: 4, promptLogprobs: 2 },
        { id: 2, prompt: golden.prompts[0]!.prompt, maxTokens: 6 },
      ]);
      const c = got.get(1)!;
      expect(c.starts.length).toBeGreaterThan(1); // really chunked
      await expectMatchesModel(p.prompt, c, 2, 9);
      expect(res.get(1)![0]!.tokens).toEqual(p.greedy_tokens.slice(0, 4));
      expect(got.has(2)).toBe(false); // only requests that ask get them
    } finally {
      await t.close();
    }
  });

  it('skip the prefix cache (every row is computed) and n > 1 with max_tokens 0 ends every choice', async () => {
    const t = await TestEngine.create();
    try {
      const got = collect(t, 1);
      const p = golden.prompts[golden.prompts.length - 1]!;
      await t.run([{ id: 1, prompt: p.prompt, maxTokens: 2 }]);
      const res = await t.run([{ id: 2, prompt: p.prompt, maxTokens: 0, n: 3, promptLogprobs: 1 }]);
      const choices = res.get(2)!;
      expect(choices.length).toBe(3);
      for (const ch of choices) {
        expect(ch.tokens).toEqual([]);
        expect(ch.finish).toBe(2);
        expect(ch.cachedTokens).toBe(0);
      }
      await expectMatchesModel(p.prompt, got.get(2)!, 1, 3);
    } finally {
      await t.close();
    }
  });

  it('refuses more alternatives than the limit and a negative max_tokens', async () => {
    const t = await TestEngine.create();
    try {
      expect(() => t.submit({ id: 1, prompt: [5, 6], promptLogprobs: 21 })).toThrow(/at most 20/);
      expect(() => t.submit({ id: 2, prompt: [5, 6], maxTokens: -1 })).toThrow(/negative/);
    } finally {
      await t.close();
    }
  });
});
