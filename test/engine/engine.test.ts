// The batching engine on the tiny ERNIE checkpoint: golden greedy tokens, batch invariance,
// seeded sampling, chunked prefill budgets, preemption, prefix caching, forks, aborts, refusals.
import { describe, expect, it } from 'vitest';
import { MAX_LOGPROBS, MAX_N } from '../../src/protocol/limits.js';
import { ENGINE_LIMITS, Finish } from '../../src/sidecar/engine/native-engine.js';
import { loadModel } from '../../src/sidecar/model/load.js';
import { readGolden } from './helpers.js';
import { TestEngine, TINY, engineFixture, randomTokens, request } from './engine-helpers.js';

const golden = readGolden('tiny');
const engine = engineFixture();

describe('engine: correctness', () => {
  it('greedy generation equals the HF reference on every tiny golden prompt, all at once', async () => {
    const e = await engine();
    const res = await e.run(golden.prompts.map((p, i) => ({ id: i + 1, prompt: p.prompt, maxTokens: p.greedy.length })));
    golden.prompts.forEach((p, i) => {
      expect(res.get(i + 1)![0]!.tokens).toEqual(p.greedy_tokens);
      expect(res.get(i + 1)![0]!.finish).toBe(Finish.Length);
    });
  });

  it('batch invariance: 64 mixed requests (greedy and seeded sampling) give each the tokens it gets alone', async () => {
    const reqs = Array.from({ length: 64 }, (_, i) => ({
      id: 100 + i,
      prompt: randomTokens(5 + ((i * 37) % 150), i),
      maxTokens: 4 + (i % 13),
      temperature: i % 2 ? 0.9 : 0,
      topP: i % 4 === 1 ? 0.9 : 1,
      topK: i % 8 === 3 ? 40 : 0,
      seed: i % 2 ? 1000 + i : null,
    }));
    const together = await engine({ maxNumBatchedTokens: 512 }, { kvBlocks: 1024 });
    const batch = await together.run(reqs);
    expect(Math.max(...together.statsAfterStep.map((s) => s.lastStepSeqs))).toBeGreaterThan(32);
    const alone = await engine({}, { kvBlocks: 1024 });
    for (const r of reqs) {
      await alone.run([r]);
      expect(alone.results.get(r.id)![0]!.tokens, `request ${r.id}`).toEqual(batch.get(r.id)![0]!.tokens);
    }
  });

  it('seeded sampling is reproducible and the seed matters', async () => {
    const e = await engine();
    const prompt = randomTokens(20, 5);
    await e.run([1, 2, 3].map((id) => ({ id, prompt, maxTokens: 16, temperature: 1.0, seed: id === 3 ? 99 : 42 })));
    expect(e.results.get(1)![0]!.tokens).toEqual(e.results.get(2)![0]!.tokens);
    expect(e.results.get(1)![0]!.tokens).not.toEqual(e.results.get(3)![0]!.tokens);
  });

  it('logprobs are the raw log-softmax of the model output, with sorted top-k alternatives', async () => {
    const prompt = golden.prompts[1]!.prompt;
    const e = await engine();
    const res = await e.run([{ id: 1, prompt, maxTokens: 1, logprobs: 5 }]);
    const { model } = await loadModel(TINY, { kvBlocks: 4 });
    const logits = await model.forward([{ tokens: Int32Array.from(prompt), startPos: 0, blockTable: Int32Array.from([0]), logits: 1 }]);
    model.close();
    const mx = Math.max(...logits);
    const lse = mx + Math.log(logits.reduce((a, x) => a + Math.exp(x - mx), 0));
    const c = res.get(1)![0]!;
    expect(c.logprobs[0]).toBeCloseTo(logits[c.tokens[0]!]! - lse, 4);
    const order = Array.from(logits.keys()).sort((a, b) => logits[b]! - logits[a]!).slice(0, 5);
    expect(c.topIds[0]).toEqual(order);
  });
});

describe('engine: scheduling', () => {
  it('chunked prefill keeps every step within the token budget and changes nothing', async () => {
    const prompt = randomTokens(100, 9);
    const chunked = await engine({ maxNumBatchedTokens: 16 });
    await chunked.run([{ id: 1, prompt, maxTokens: 6 }, { id: 2, prompt: randomTokens(40, 3), maxTokens: 20 }]);
    expect(Math.max(...chunked.statsAfterStep.map((s) => s.lastStepTokens))).toBeLessThanOrEqual(16);
    expect(chunked.statsAfterStep.length).toBeGreaterThanOrEqual(Math.ceil(140 / 16));
    const whole = await engine({ maxNumBatchedTokens: 4096 });
    await whole.run([{ id: 1, prompt, maxTokens: 6 }, { id: 2, prompt: randomTokens(40, 3), maxTokens: 20 }]);
    expect(chunked.results.get(1)![0]!.tokens).toEqual(whole.results.get(1)![0]!.tokens);
    expect(chunked.results.get(2)![0]!.tokens).toEqual(whole.results.get(2)![0]!.tokens);
  });

  it('preempts by recompute when blocks run out, and the preempted requests still yield the same tokens', async () => {
    const reqs = [0, 1, 2, 3].map((i) => ({ id: i + 1, prompt: randomTokens(40, 20 + i), maxTokens: 40, temperature: i % 2 ? 0.8 : 0, seed: 7 + i }));
    const small = await engine({ enablePrefixCaching: false }, { kvBlocks: 12 }); // 4 x 5 blocks needed at the end: 20 > 12
    await small.run(reqs);
    const stats = small.engine.stats();
    expect(stats.preemptions).toBeGreaterThan(0);
    expect(stats.kvBlocksFree).toBe(12);
    const roomy = await engine({}, { kvBlocks: 64 });
    await roomy.run(reqs);
    for (const r of reqs) expect(small.results.get(r.id)![0]!.tokens, `request ${r.id}`).toEqual(roomy.results.get(r.id)![0]!.tokens);
  });

  it('prefill batching holds new prompts while many decode, until enough are queued or they waited long enough', async () => {
    // Two long requests decode (2 x 4 >= maxNumSeqs 8: the hold applies); once they are under way
    // `add` new prompts arrive together. Delays are counted in engine steps from the step whose
    // outputs were the last seen before the submit (steps already computed but not yet seen only
    // make a delay look longer).
    const run = async (prefillBatch: number, add: number) => {
      const e = await engine({ maxNumSeqs: 8, prefillBatch, prefillMaxWait: 40 });
      const added = Array.from({ length: add }, (_, i) => ({ id: 10 + i, prompt: randomTokens(12 + i, 50 + i), maxTokens: 8 }));
      let at = -1;
      const first = new Map<number, number>();
      e.onOutput = (o) => {
        if (!first.has(o.id)) first.set(o.id, e.steps.length);
        if (o.id === 1 && at < 0 && e.results.get(1)![0]!.tokens.length >= 3) {
          at = e.steps.length;
          for (const r of added) e.submit(r);
        }
      };
      await e.run([1, 2].map((id) => ({ id, prompt: randomTokens(20, id), maxTokens: 120 })));
      await e.wait(added.map((r) => r.id));
      return { delays: added.map((r) => first.get(r.id)! - at), tokens: added.map((r) => e.results.get(r.id)![0]!.tokens) };
    };
    const off = await run(1, 2); // admitted at once
    const held = await run(3, 2); // two of three: held 40 steps
    const full = await run(3, 3); // three of three: admitted at once
    expect(Math.max(...off.delays)).toBeLessThan(30);
    expect(Math.min(...held.delays)).toBeGreaterThanOrEqual(40);
    expect(held.delays[0]).toBe(held.delays[1]); // prefilled in the same step
    expect(Math.max(...full.delays)).toBeLessThan(30);
    expect(held.tokens).toEqual(off.tokens); // greedy: holding changes when, not what
    expect(full.tokens.slice(0, 2)).toEqual(off.tokens);
  });

  it('abort frees the request blocks in the next step', async () => {
    const e = await engine({}, { kvBlocks: 32 });
    let aborted = false;
    e.onOutput = (o) => {
      if (o.id === 1 && !aborted) {
        aborted = true;
        e.engine.abort(1);
      }
    };
    await e.run([{ id: 1, prompt: randomTokens(60, 1), maxTokens: 400 }]);
    const c = e.results.get(1)![0]!;
    expect(c.finish).toBe(Finish.Abort);
    // The step callback runs on the JS thread while the engine keeps stepping, so a few more tokens
    // may be out before abort() lands (more on a loaded machine); it must still end far short of 400.
    expect(c.tokens.length).toBeLessThan(200);
    const s = e.engine.stats();
    expect([s.kvBlocksFree, s.running, s.waiting]).toEqual([32, 0, 0]);
    e.engine.abort(1); // idempotent
    e.engine.abort(12345);
  });

  it("stats().profile: the CPU runner's time by phase, over the engine's own steps and tokens", async () => {
    const e = await engine({ enablePrefixCaching: false });
    const before = e.engine.stats().profile!;
    await e.run([{ id: 1, prompt: randomTokens(20, 5), maxTokens: 5 }]);
    const s = e.engine.stats();
    const p = s.profile!;
    // One 20-token prefill, then a step per token after the first (the last token is never fed back).
    expect([p.steps - before.steps, p.tokens - before.tokens]).toEqual([5, 24]);
    expect(p.steps).toBe(s.steps);
    expect(p.gemmMs).toBeGreaterThan(before.gemmMs);
    expect(p.attentionMs).toBeGreaterThan(before.attentionMs);
    expect(p.threads).toBeGreaterThan(0);
  });

  it('waitingCount() is stats().waiting: the queue behind a full batch, then none', async () => {
    const e = await engine({ maxNumSeqs: 1 }, { kvBlocks: 64 });
    const seen: [number, number][] = [];
    e.onOutput = (o) => {
      if (o.id === 1 && seen.length === 0) seen.push([e.engine.waitingCount(), e.engine.stats().waiting]);
    };
    // The first request's 200 tokens keep the three behind it queued while both counts are read.
    await e.run([1, 2, 3, 4].map((id) => ({ id, prompt: randomTokens(16, id), maxTokens: id === 1 ? 200 : 4 })));
    expect(seen).toEqual([[3, 3]]); // one running (--max-num-seqs 1), three queued
    expect([e.engine.waitingCount(), e.engine.stats().waiting]).toEqual([0, 0]);
  });

  it('refuses up front what can never fit, with a clear reason', async () => {
    const e = await engine({ maxModelLen: 256 }, { kvBlocks: 8 });
    expect(e.engine.submit(request({ id: 1, prompt: randomTokens(250, 1), maxTokens: 10 }))).toMatch(/needs 260 tokens .* more than max_model_len 256/);
    expect(e.engine.submit(request({ id: 2, prompt: randomTokens(100, 1), maxTokens: 100 }))).toMatch(/needs 13 KV blocks but the cache has only 8/);
    expect(e.engine.submit(request({ id: 3, prompt: [] }))).toMatch(/empty/);
    expect(e.engine.submit(request({ id: 4, prompt: [5000] }))).toMatch(/outside the vocabulary/);
    e.submit({ id: 5, prompt: [1, 2, 3], maxTokens: 100 });
    expect(e.engine.submit(request({ id: 5, prompt: [1] }))).toMatch(/already in use/);
    e.engine.abort(5);
    await e.wait([5]);
  });

  it(`takes n and logprobs up to the limits it is given (${MAX_N}, ${MAX_LOGPROBS}: src/protocol/limits.ts) and refuses one past them`, async () => {
    const e = await engine();
    e.submit({ id: 1, prompt: [1, 2, 3], maxTokens: 2, n: MAX_N, logprobs: MAX_LOGPROBS });
    await e.wait([1], MAX_N);
    for (const c of e.results.get(1)!) expect(c.topIds.map((ids) => ids.length)).toEqual([MAX_LOGPROBS, MAX_LOGPROBS]);
    expect(e.engine.submit(request({ id: 2, prompt: [1], n: MAX_N + 1 }))).toBe(`n must be between 1 and ${MAX_N}`);
    expect(e.engine.submit(request({ id: 3, prompt: [1], logprobs: MAX_LOGPROBS + 1 }))).toBe(`logprobs may ask for at most ${MAX_LOGPROBS} alternatives`);
  });

  it('has no defaults of its own for max_model_len and the limits: createEngine without one is a TypeError', async () => {
    for (const missing of ['maxModelLen', ...(Object.keys(ENGINE_LIMITS) as (keyof typeof ENGINE_LIMITS)[])]) {
      const create = TestEngine.create({ [missing]: undefined }); // TestEngine supplies all three otherwise
      await expect(create).rejects.toThrow(new TypeError(`createEngine: engineOptions.${missing} must be a positive integer`));
    }
  });

  it('does not starve a long request under a steady stream of short ones', async () => {
    const e = await engine({ maxNumSeqs: 4, maxNumBatchedTokens: 64 });
    e.submit({ id: 1, prompt: randomTokens(8, 1), maxTokens: 4 });
    e.submit({ id: 1000, prompt: randomTokens(300, 2), maxTokens: 8 });
    let next = 2;
    let longDoneAt = -1;
    e.onOutput = (o) => {
      if (o.id === 1000 && o.finish) longDoneAt = next;
      // Stop once the long one is done: afterEach closes the engine, and a submit then would throw
      // inside the step callback.
      if (o.finish && o.id !== 1000 && next < 200 && longDoneAt < 0) e.submit({ id: next++, prompt: randomTokens(8, next), maxTokens: 4 });
    };
    await e.wait([1000]);
    expect(longDoneAt).toBeGreaterThan(0);
    expect(longDoneAt).toBeLessThan(40);
  });
});

describe('engine: prefix caching and forks', () => {
  it('shares a common prefix between requests and gets the same tokens as without the cache', async () => {
    const system = randomTokens(48, 77);
    const a = [...system, ...randomTokens(7, 1)], b = [...system, ...randomTokens(9, 2)];
    const e = await engine({ enablePrefixCaching: true });
    await e.run([{ id: 1, prompt: a, maxTokens: 10 }]);
    await e.run([{ id: 2, prompt: b, maxTokens: 10 }]);
    expect(e.results.get(2)![0]!.cachedTokens).toBe(48);
    const s = e.engine.stats();
    expect(s.prefixCacheHits).toBe(48);
    expect(s.prefixCacheQueries).toBe(a.length + b.length);
    const off = await engine({ enablePrefixCaching: false });
    await off.run([{ id: 2, prompt: b, maxTokens: 10 }]);
    expect(off.results.get(2)![0]!.cachedTokens).toBe(0);
    expect(e.results.get(2)![0]!.tokens).toEqual(off.results.get(2)![0]!.tokens);
  });

  it('n > 1 forks after the prefill and copies the shared partial block on write', async () => {
    const prompt = randomTokens(21, 4); // a partial last block, shared by all choices
    const e = await engine({}, { kvBlocks: 32 });
    await e.run([{ id: 1, prompt, maxTokens: 12 }]);
    await e.run([{ id: 2, prompt, maxTokens: 12, n: 3 }]);
    const one = e.results.get(1)![0]!.tokens;
    expect(e.results.get(2)!.map((c) => c.tokens)).toEqual([one, one, one]); // greedy: identical KV per choice
    await e.run([{ id: 3, prompt, maxTokens: 12, n: 3, temperature: 1, seed: 5 }]);
    const sampled = e.results.get(3)!.map((c) => c.tokens.join(','));
    expect(new Set(sampled).size).toBeGreaterThan(1);
    expect(e.engine.stats().kvBlocksFree).toBe(32);
  });
});

describe('engine: sampler parameters', () => {
  it('stop token ids, logit bias, top-k = 1, min-p = 1 and penalties behave as specified', async () => {
    const prompt = golden.prompts[2]!.prompt;
    const greedy = golden.prompts[2]!.greedy_tokens.slice(0, 8);
    const e = await engine();
    await e.run([
      { id: 1, prompt, maxTokens: 8, stopTokenIds: Int32Array.from([greedy[3]!]) },
      { id: 2, prompt, maxTokens: 4, logitBiasIds: Int32Array.from([77]), logitBiasValues: Float32Array.from([100]) },
      { id: 3, prompt, maxTokens: 8, temperature: 1.3, topK: 1, seed: 1 },
      { id: 4, prompt, maxTokens: 8, temperature: 1.3, minP: 1, seed: 2 },
      { id: 5, prompt, maxTokens: 8, repetitionPenalty: 1e6 },
      { id: 6, prompt, maxTokens: 8, frequencyPenalty: 100 },
    ]);
    const r = (id: number) => e.results.get(id)![0]!;
    expect(r(1).tokens).toEqual(greedy.slice(0, 4));
    expect(r(1).finish).toBe(Finish.Stop);
    expect(r(2).tokens).toEqual([77, 77, 77, 77]);
    expect(r(3).tokens).toEqual(greedy);
    expect(r(4).tokens).toEqual(greedy);
    // A huge repetition penalty forbids every token seen so far: all outputs differ from the prompt and each other.
    expect(new Set(r(5).tokens).size).toBe(8);
    expect(r(5).tokens.some((t) => prompt.includes(t))).toBe(false);
    expect(new Set(r(6).tokens).size).toBe(8);
  });
});
