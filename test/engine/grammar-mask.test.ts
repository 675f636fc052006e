// The native engine's grammar masks (CPU backend, tiny checkpoint, vocabulary 2048), with the test in
// the grammar worker's place: it writes each choice's mask row into the request's shared buffer and
// publishes it (src/sidecar/grammar/mask-layout.ts) when the choice's previous token arrives. Every
// token must lie in its step's mask; greedy picks the best allowed token of the raw logits; logprobs
// are those of the masked distribution; an abort wakes a step that waits for a mask; a failed row ends
// its choice with an error; when the mask allows only stop ids the grammar wins over min_tokens. The
// engine hands each constrained token to the grammar itself: into the buffer, then the grammar bell.
import { afterEach, describe, expect, it } from 'vitest';
import { Finish } from '../../src/sidecar/engine/native-engine.js';
import { allocateMasks, MASK_FAILED, maskWords, postedToken } from '../../src/sidecar/grammar/mask-layout.js';
import { native } from '../../src/sidecar/native.js';
import { Masks, pseudoSet } from './grammar-helpers.js';
import { readGolden } from './helpers.js';
import { randomTokens, request, TestEngine } from './engine-helpers.js';

const W = maskWords(2048);
const golden = readGolden('tiny');
const prompt = golden.prompts[1]!.prompt;
const open: TestEngine[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
});
async function engine(): Promise<TestEngine> {
  const e = await TestEngine.create();
  open.push(e);
  return e;
}

describe('engine: grammar masks (CPU)', () => {
  it('greedy picks the best allowed token of the raw logits; logprobs are of the masked distribution', async () => {
    const e = await engine();
    await e.run([{ id: 1, prompt, maxTokens: 1, logprobs: 20 }]);
    const raw = e.results.get(1)![0]!;
    const top = raw.topIds[0]!;
    // The raw top-20 with their logprobs: allow the 4th and 9th best.
    const k = e.steps.flat().find((o) => o.id === 1 && o.topLogprobs)!;
    const lp = (id: number) => k.topLogprobs![top.indexOf(id)]!;
    const allowed = [top[3]!, top[8]!];
    const m = new Masks(1, () => allowed);
    await e.run([{ id: 2, prompt, maxTokens: 1, logprobs: 3, grammar: m.buf, maskWords: W }]);
    const got = e.results.get(2)![0]!;
    expect(got.tokens).toEqual([top[3]]);
    // Masked log-softmax: the raw normaliser cancels.
    const lse = Math.log(Math.exp(lp(top[3]!)) + Math.exp(lp(top[8]!)));
    expect(got.logprobs[0]).toBeCloseTo(lp(top[3]!) - lse, 4);
    expect(got.topIds[0]!.slice(0, 2)).toEqual(allowed);
  });

  it('sampled, n = 3, penalties and bias: every token of every choice lies in its step mask', async () => {
    const e = await engine();
    const m = new Masks(3, (c, step) => pseudoSet(1000 * c + step + 1, 5 + step));
    e.onOutput = (o) => {
      if (o.id === 1) m.onOutput(o);
    };
    await e.run([
      {
        id: 1,
        prompt,
        n: 3,
        maxTokens: 12,
        temperature: 1,
        topP: 0.9,
        seed: 7,
        repetitionPenalty: 1.3,
        frequencyPenalty: 0.5,
        logitBiasIds: Int32Array.from(pseudoSet(99, 3)),
        logitBiasValues: Float32Array.from([50, 50, 50]),
        logprobs: 1,
        grammar: m.buf,
        maskWords: W,
      },
      { id: 2, prompt, maxTokens: 12 }, // unconstrained, in the same steps
    ]);
    const choices = e.results.get(1)!;
    expect(choices).toHaveLength(3);
    choices.forEach((c, i) => {
      expect(c.tokens).toHaveLength(12);
      c.tokens.forEach((t, step) => expect(pseudoSet(1000 * i + step + 1, 5 + step)).toContain(t));
      expect(c.logprobs.every((x) => Number.isFinite(x))).toBe(true);
    });
    expect(e.results.get(2)![0]!.tokens).toEqual(golden.prompts[1]!.greedy_tokens.slice(0, 12));
  });

  it('the same seed gives the same constrained tokens alone and in a batch', async () => {
    const allowed = (_c: number, step: number) => pseudoSet(step + 5, 40);
    const run = async (others: number) => {
      const e = await engine();
      const m = new Masks(1, allowed);
      e.onOutput = (o) => {
        if (o.id === 1) m.onOutput(o);
      };
      const reqs = [{ id: 1, prompt, maxTokens: 10, temperature: 0.8, seed: 11, grammar: m.buf, maskWords: W }];
      for (let i = 0; i < others; i++) reqs.push({ id: 10 + i, prompt: golden.prompts[i % 3]!.prompt, maxTokens: 10, temperature: 1, seed: i } as never);
      await e.run(reqs);
      return e.results.get(1)![0]!.tokens;
    };
    expect(await run(5)).toEqual(await run(0));
  });

  it('a step that waits for a mask is woken by an abort; the other requests go on', async () => {
    const e = await engine();
    const m = new Masks(1, () => pseudoSet(3, 50));
    m.hold = true; // only the first row is ever published
    let firstToken!: () => void;
    const first = new Promise<void>((r) => (firstToken = r));
    e.onOutput = (o) => {
      if (o.id === 1) {
        m.onOutput(o);
        if (o.tokens.length > 0) firstToken();
      }
    };
    e.submit({ id: 1, prompt, maxTokens: 20, grammar: m.buf, maskWords: W });
    await first;
    e.engine.abort(1);
    await e.wait([1]);
    const c = e.results.get(1)![0]!;
    expect(c.finish).toBe(Finish.Abort);
    expect(c.tokens).toHaveLength(1);
    await e.run([{ id: 2, prompt, maxTokens: 4 }]);
    expect(e.results.get(2)![0]!.tokens).toEqual(golden.prompts[1]!.greedy_tokens.slice(0, 4));
  });

  it('a row marked failed ends its choice with an error', async () => {
    const e = await engine();
    const m = new Masks(1, () => pseudoSet(4, 50));
    m.hold = true;
    e.onOutput = (o) => {
      if (o.id !== 1) return;
      m.onOutput(o);
      if (o.tokens.length > 0) Atomics.store(m.buf, 0, MASK_FAILED);
    };
    await e.run([{ id: 1, prompt, maxTokens: 20, grammar: m.buf, maskWords: W }]);
    const c = e.results.get(1)![0]!;
    expect(c.finish).toBe(Finish.Error);
    expect(c.error).toMatch(/grammar/);
    expect(c.tokens).toHaveLength(1);
  });

  it('a complete grammar (only stop ids allowed) ends with stop; min_tokens gives way to it', async () => {
    const e = await engine();
    const stop = 2;
    const m1 = new Masks(1, (_c, step) => (step < 2 ? pseudoSet(6 + step, 30) : [stop]));
    const m2 = new Masks(1, (_c, step) => (step < 2 ? pseudoSet(6 + step, 30) : [stop]));
    e.onOutput = (o) => (o.id === 1 ? m1 : m2).onOutput(o);
    await e.run([
      { id: 1, prompt, maxTokens: 10, stopTokenIds: Int32Array.from([stop]), grammar: m1.buf, maskWords: W },
      { id: 2, prompt, maxTokens: 10, stopTokenIds: Int32Array.from([stop]), minTokens: 5, grammar: m2.buf, maskWords: W },
    ]);
    const a = e.results.get(1)![0]!;
    expect(a.tokens).toHaveLength(3);
    expect(a.tokens[2]).toBe(stop);
    expect(a.finish).toBe(Finish.Stop);
    // min_tokens 5: the stop id is the only allowed token from step 2 on; it ends the choice once
    // min_tokens outputs are out (vLLM's rule: under min_tokens a stop id ends nothing).
    const b = e.results.get(2)![0]!;
    expect(b.tokens.slice(2)).toEqual([stop, stop, stop, stop]);
    expect(b.finish).toBe(Finish.Stop);
  });

  it('preemption by recompute keeps the masks valid: the same constrained tokens as without it', async () => {
    const allowed = (i: number) => (_c: number, step: number) => pseudoSet(500 + 37 * i + step, 30);
    const runAll = async (kvBlocks: number) => {
      const e = await TestEngine.create({ enablePrefixCaching: false }, { kvBlocks, threads: 2 });
      open.push(e);
      const masks = [0, 1, 2, 3].map((i) => new Masks(1, allowed(i)));
      e.onOutput = (o) => masks[o.id - 1]?.onOutput(o);
      await e.run([0, 1, 2, 3].map((i) => ({ id: i + 1, prompt: randomTokens(40, 20 + i), maxTokens: 40, temperature: i % 2 ? 0.8 : 0, seed: 7 + i, grammar: masks[i]!.buf, maskWords: W })));
      return { e, tokens: [1, 2, 3, 4].map((id) => e.results.get(id)![0]!.tokens) };
    };
    const small = await runAll(12); // 4 x 5 blocks needed at the end: 20 > 12
    expect(small.e.engine.stats().preemptions).toBeGreaterThan(0);
    small.tokens.forEach((ts, i) => ts.forEach((t, step) => expect(allowed(i)(0, step)).toContain(t)));
    expect(small.tokens).toEqual((await runAll(64)).tokens);
  });

  it('posts each constrained token into the buffer and rings the bell: a request runs with its step callback never called', async () => {
    const e = await engine();
    const n = 2;
    const steps = 8;
    const allowed = (c: number, step: number) => pseudoSet(70 + 10 * c + step, 20);
    const m = new Masks(n, allowed);
    // This thread plays the grammar worker from the posted tokens alone, blocked on the bell as a
    // worker is: the engine's step callback cannot run on it until the last token is out.
    e.submit({ id: 1, prompt, n, maxTokens: steps, temperature: 1, seed: 3, grammar: m.buf, maskWords: W });
    const addon = native();
    const got: number[][] = Array.from({ length: n }, () => []);
    while (got.some((g) => g.length < steps - 1)) {
      const bell = addon.grammarBell();
      let moved = false;
      for (let i = 0; i < n; i++) {
        const { posted, token } = postedToken(m.buf, n, i);
        if (posted === got[i]!.length) continue;
        expect(posted).toBe(got[i]!.length + 1); // one token at a time: the next needs this one's mask
        got[i]!.push(token);
        m.advance(i);
        moved = true;
      }
      if (!moved) expect(addon.grammarWait(bell, 10_000)).toBe(true);
    }
    await e.wait([1]);
    const choices = e.results.get(1)!;
    choices.forEach((c, i) => {
      expect(c.tokens).toHaveLength(steps);
      c.tokens.forEach((t, step) => expect(allowed(i, step)).toContain(t));
      expect(c.tokens.slice(0, steps - 1)).toEqual(got[i]); // the last token ends the choice: not posted
    });
    expect(postedToken(m.buf, n, 0).posted).toBe(steps - 1);
  });

  it('refuses a mask buffer of the wrong row length', async () => {
    const e = await engine();
    const buf = allocateMasks(1, W - 1);
    expect(e.engine.submit({ ...request({ id: 1, prompt }), grammar: buf, maskWords: W - 1 })).toMatch(/64 words per row/);
  });
});
