// vLLM's min_tokens in the native engine (CPU backend, tiny checkpoint): while a choice has fewer than
// min_tokens outputs its stop ids (eos included) get no probability and end nothing; afterwards they
// stop it as usual. Each case would fail without it: the stop id is the greedy pick, or a logit bias of
// +100 makes it the pick at every step.
import { describe, expect, it } from 'vitest';
import { Finish } from '../../src/sidecar/engine/native-engine.js';
import { readGolden } from './helpers.js';
import { engineFixture } from './engine-helpers.js';

const golden = readGolden('tiny');
const engine = engineFixture();

const EOS = 2;
const biasEos = { stopTokenIds: Int32Array.from([EOS]), logitBiasIds: Int32Array.from([EOS]), logitBiasValues: Float32Array.from([100]) };

describe('engine: min_tokens', () => {
  it('a stop id that every step would pick ends the choice only after min_tokens outputs (greedy, sampled, n = 2)', async () => {
    const prompt = golden.prompts[1]!.prompt;
    const e = await engine();
    await e.run([
      { id: 1, prompt, maxTokens: 16, ...biasEos },
      { id: 2, prompt, maxTokens: 16, ...biasEos, minTokens: 5 },
      { id: 3, prompt, maxTokens: 16, ...biasEos, minTokens: 7, temperature: 1, seed: 3, n: 2 },
    ]);
    const without = e.results.get(1)![0]!;
    expect(without.tokens).toEqual([EOS]);
    expect(without.finish).toBe(Finish.Stop);
    const choices = [e.results.get(2)![0]!, ...e.results.get(3)!];
    const mins = [5, 7, 7];
    choices.forEach((c, i) => {
      // min_tokens outputs without the stop id, then the stop id (the bias still favours it) ends it.
      expect(c.tokens.length, `choice ${i}`).toBe(mins[i]! + 1);
      expect(c.tokens.slice(0, mins[i]).includes(EOS), `choice ${i}`).toBe(false);
      expect(c.tokens.at(-1)).toBe(EOS);
      expect(c.finish).toBe(Finish.Stop);
    });
  });

  it('greedy: the banned stop id gives way to the next best token, then greedy decoding goes on from there', async () => {
    const p = golden.prompts[2]!;
    const first = p.greedy_tokens[0]!;
    const e = await engine();
    await e.run([
      { id: 1, prompt: p.prompt, maxTokens: 6, stopTokenIds: Int32Array.from([first]) },
      { id: 2, prompt: p.prompt, maxTokens: 6, stopTokenIds: Int32Array.from([first]), minTokens: 1, logprobs: 2 },
    ]);
    expect(e.results.get(1)![0]!.tokens).toEqual([first]);
    const banned = e.results.get(2)![0]!;
    expect(banned.tokens[0]).not.toBe(first);
    // The raw distribution's runner-up (logprobs are those of the raw model output).
    expect(banned.topIds[0]).toEqual([first, banned.tokens[0]]);
  });

  it('min_tokens at or past max_tokens: the choice runs to max_tokens and ends with length', async () => {
    const e = await engine();
    await e.run([{ id: 1, prompt: golden.prompts[0]!.prompt, maxTokens: 4, ...biasEos, minTokens: 4 }]);
    const c = e.results.get(1)![0]!;
    expect(c.tokens.length).toBe(4);
    expect(c.tokens.includes(EOS)).toBe(false);
    expect(c.finish).toBe(Finish.Length);
  });

  it('a negative min_tokens is refused', async () => {
    const e = await engine();
    expect(() => e.submit({ id: 1, prompt: [1, 2, 3], minTokens: -1 })).toThrow(/invalid sampling parameters/);
  });
});
