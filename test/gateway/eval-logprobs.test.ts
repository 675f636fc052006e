// Evaluation logprobs end to end on the real engine (tiny golden): lm-evaluation-harness's
// `local-completions` loglikelihood request (token-id prompts, echo, logprobs 1, max_tokens 0) must
// return, for every prompt token after the first, log_softmax of the engine's logits at the position
// before it, computed in the same prefill; plus vLLM's prompt_logprobs (completions and chat),
// logprobs 0 and "the sampled token is among top_logprobs".
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel } from '../../src/sidecar/model/load.js';
import type { NativeModel } from '../../src/sidecar/native.js';
import { GOLDEN, logSoftmaxRow, readGolden, scatteredBlocks } from '../engine/helpers.js';
import { chatCheckpoint, REAL_MODEL, realGateway, type RealGateway } from './real-engine.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const golden = readGolden('tiny');
const prompts = golden.prompts.filter((p) => p.prompt.length > 1).map((p) => p.prompt);
const V = 2048;

let gw: RealGateway;
let model: NativeModel;
beforeAll(async () => {
  gw = await realGateway();
  model = (await loadModel(path.join(GOLDEN, 'tiny'), { kvBlocks: 64, blockSize: 16, threads: 2 })).model;
});
afterAll(async () => {
  model.close();
  await gw.close();
});

const engineLogits = (prompt: number[], seed: number) =>
  model.forward([{ tokens: Int32Array.from(prompt), startPos: 0, blockTable: scatteredBlocks(16, 64, seed), logits: 2 }]);

async function completion(body: Record<string, unknown>): Promise<Any> {
  const res = await gw.post('/v1/completions', { model: REAL_MODEL, ...body });
  const json = await res.json();
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json;
}

describe('lm-evaluation-harness loglikelihood (local-completions)', () => {
  it('token-id prompts, echo, logprobs 1, max_tokens 0: the prompt with log_softmax of the engine logits at each position', async () => {
    const body = await completion({ prompt: prompts, echo: true, logprobs: 1, max_tokens: 0, temperature: 0, seed: 1234 });
    expect(body.choices).toHaveLength(prompts.length);
    expect(body.usage.completion_tokens).toBe(0);
    expect(body.usage.prompt_tokens).toBe(prompts.reduce((s, p) => s + p.length, 0));
    for (const [i, prompt] of prompts.entries()) {
      const ch = body.choices[i];
      expect(ch.index).toBe(i);
      expect(ch.finish_reason).toBe('length');
      const lp = ch.logprobs;
      expect(lp.tokens).toHaveLength(prompt.length);
      expect(lp.token_logprobs[0]).toBeNull();
      expect(lp.top_logprobs[0]).toBeNull();
      expect(lp.text_offset[0]).toBe(0);
      const logits = await engineLogits(prompt, i + 1);
      for (let j = 1; j < prompt.length; j++) {
        const ls = logSoftmaxRow(logits, j - 1);
        expect(Math.abs(lp.token_logprobs[j] - ls[prompt[j]!]!)).toBeLessThan(1e-4);
        // top_logprobs: the most likely token and the prompt token itself (one entry when they agree).
        const top = lp.top_logprobs[j] as Record<string, number>;
        expect(top[lp.tokens[j]]).toBe(lp.token_logprobs[j]);
        let best = 0;
        for (let v = 1; v < V; v++) if (ls[v]! > ls[best]!) best = v;
        expect(Object.keys(top).length).toBe(best === prompt[j] ? 1 : 2);
        expect(Math.max(...Object.values(top))).toBeCloseTo(ls[best]!, 4);
      }
    }
  });

  it('max_tokens 1 (older harness versions): the prompt part is the same and one greedy token follows', async () => {
    const p = golden.prompts.find((g) => g.prompt.length > 1)!;
    const zero = await completion({ prompt: [p.prompt], echo: true, logprobs: 1, max_tokens: 0, temperature: 0 });
    const one = await completion({ prompt: [p.prompt], echo: true, logprobs: 1, max_tokens: 1, temperature: 0 });
    const a = zero.choices[0].logprobs;
    const b = one.choices[0].logprobs;
    expect(b.tokens).toHaveLength(p.prompt.length + 1);
    expect(b.token_logprobs.slice(0, -1)).toEqual(a.token_logprobs);
    expect(b.tokens.slice(0, -1)).toEqual(a.tokens);
    expect(one.usage.completion_tokens).toBe(1);
    expect(one.choices[0].text.startsWith(zero.choices[0].text)).toBe(true);
  });

  it('streams the echoed prompt with its logprobs in the first chunk', async () => {
    const p = prompts[0]!;
    const res = await gw.post('/v1/completions', { model: REAL_MODEL, prompt: p, echo: true, logprobs: 1, max_tokens: 2, temperature: 0, stream: true });
    const chunks = (await res.text()).split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
    const first = chunks[0].choices[0];
    expect(first.logprobs.tokens).toHaveLength(p.length);
    expect(first.logprobs.token_logprobs[0]).toBeNull();
    const nonStream = await completion({ prompt: p, echo: true, logprobs: 1, max_tokens: 2, temperature: 0 });
    expect(first.logprobs.token_logprobs).toEqual(nonStream.choices[0].logprobs.token_logprobs.slice(0, p.length));
  });
});

describe('vLLM prompt_logprobs and sampled-token logprobs', () => {
  it('completions prompt_logprobs: null first, then the prompt token (with its rank) and the top-k', async () => {
    const p = prompts[1]!;
    const body = await completion({ prompt: p, prompt_logprobs: 2, max_tokens: 1, temperature: 0 });
    const pl = body.choices[0].prompt_logprobs;
    expect(pl).toHaveLength(p.length);
    expect(pl[0]).toBeNull();
    const logits = await engineLogits(p, 5);
    for (let j = 1; j < p.length; j++) {
      const ls = logSoftmaxRow(logits, j - 1);
      const own = pl[j][String(p[j])];
      expect(Math.abs(own.logprob - ls[p[j]!]!)).toBeLessThan(1e-4);
      expect(own.rank).toBe(1 + Array.from(ls).filter((x) => x > ls[p[j]!]!).length);
      const ranked = Object.values(pl[j] as Record<string, { rank: number }>).map((e) => e.rank);
      expect(ranked).toContain(1);
      expect(Object.keys(pl[j]).length).toBeLessThanOrEqual(3);
    }
    expect(body.choices[0].logprobs).toBeNull(); // prompt_logprobs alone asks for no sampled logprobs
  });

  it('chat prompt_logprobs covers the templated prompt; with stream it is a 400 (vLLM)', async () => {
    const dir = await chatCheckpoint(); // the chat template's markers lie past the tiny vocabulary
    const chat = await realGateway({ dir });
    try {
      const res = await chat.post('/v1/chat/completions', { model: REAL_MODEL, messages: [{ role: 'user', content: 'hello there' }], prompt_logprobs: 0, max_tokens: 2, temperature: 0, return_token_ids: true });
      const body = (await res.json()) as Any;
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.prompt_logprobs).toHaveLength(body.usage.prompt_tokens);
      expect(body.prompt_token_ids).toHaveLength(body.usage.prompt_tokens);
      expect(body.prompt_logprobs[0]).toBeNull();
      for (let j = 1; j < body.prompt_token_ids.length; j++) expect(Object.keys(body.prompt_logprobs[j])).toEqual([String(body.prompt_token_ids[j])]);
      expect(body.choices[0].token_ids).toHaveLength(body.usage.completion_tokens);
      const streamed = await chat.post('/v1/chat/completions', { model: REAL_MODEL, messages: [{ role: 'user', content: 'hi' }], prompt_logprobs: 1, stream: true });
      expect(streamed.status).toBe(400);
      expect(((await streamed.json()) as Any).error.param).toBe('prompt_logprobs');
    } finally {
      await chat.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('logprobs 0 gives the sampled token alone; with logprobs k the sampled token is always among top_logprobs', async () => {
    const zero = await completion({ prompt: prompts[2]!, max_tokens: 6, logprobs: 0, temperature: 0 });
    const lz = zero.choices[0].logprobs;
    lz.top_logprobs.forEach((top: Record<string, number>, i: number) => expect(top).toEqual({ [lz.tokens[i]]: lz.token_logprobs[i] }));
    // Sampling at a high temperature picks tokens outside the top 1 often; each must still be listed.
    const hot = await completion({ prompt: prompts[2]!, max_tokens: 16, logprobs: 1, temperature: 2, seed: 3, n: 4 });
    let outside = 0;
    for (const ch of hot.choices) {
      ch.logprobs.tokens.forEach((t: string, i: number) => {
        const top = ch.logprobs.top_logprobs[i] as Record<string, number>;
        expect(top[t]).toBe(ch.logprobs.token_logprobs[i]);
        expect(Object.keys(top).length).toBeLessThanOrEqual(2);
        if (Object.keys(top).length === 2) outside++;
      });
    }
    expect(outside).toBeGreaterThan(0); // the case the rule is about really happened
  });
});
