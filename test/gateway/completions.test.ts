import { describe, expect, it } from 'vitest';
import { MODEL, expectError, setup, sortedKeys, sse } from './helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON/YAML, read path by path in assertions
type Any = Record<string, any>;
const json = async (res: Response) => {
  expect(res.status).toBe(200);
  return (await res.json()) as Any;
};

describe('POST /v1/completions', () => {
  it('returns exactly the OpenAI text_completion shape, max_tokens defaulting to 16', async () => {
    const { post, engine } = setup();
    const body = await json(await post('/v1/completions', { model: MODEL, prompt: 'Once upon a time' }));
    expect(sortedKeys(body)).toEqual(['choices', 'created', 'id', 'model', 'object', 'system_fingerprint', 'usage']);
    expect(body.id).toMatch(/^cmpl-[0-9a-f]{32}$/);
    expect(body.object).toBe('text_completion');
    expect(sortedKeys(body.choices[0])).toEqual(['finish_reason', 'index', 'logprobs', 'text']);
    expect([...body.choices[0].text]).toHaveLength(16);
    expect(body.choices[0].finish_reason).toBe('length');
    expect(body.usage.prompt_tokens).toBe(17); // BOS + 16 code points
    expect(engine.submitted[0]!.sampling.maxTokens).toBe(16);
    expect(engine.submitted[0]!.prompt).toEqual({ kind: 'text', text: 'Once upon a time' });
  });

  it('token-id prompts are used exactly as given', async () => {
    const { post, engine } = setup();
    const body = await json(await post('/v1/completions', { model: MODEL, prompt: [5, 6, 7], max_tokens: 2 }));
    expect(engine.submitted[0]!.prompt).toEqual({ kind: 'tokens', ids: [5, 6, 7] });
    expect(body.usage.prompt_tokens).toBe(3);
  });

  it('a list of prompts (strings or token lists) gives prompt-major choice indices', async () => {
    const { post, engine } = setup();
    const body = await json(await post('/v1/completions', { model: MODEL, prompt: ['alpha', 'beta'], n: 2, max_tokens: 3, seed: 1 }));
    expect(body.choices.map((c: Any) => c.index)).toEqual([0, 1, 2, 3]);
    expect(engine.submitted.map((r) => r.prompt)).toEqual([{ kind: 'text', text: 'alpha' }, { kind: 'text', text: 'beta' }]);
    expect(body.usage).toEqual({ prompt_tokens: 6 + 5, completion_tokens: 12, total_tokens: 23, prompt_tokens_details: { cached_tokens: 3 + 2 } });
    // choice 2 (prompt 1, choice 0) equals a lone request for prompt 1
    const alone = await json(await post('/v1/completions', { model: MODEL, prompt: 'beta', n: 2, max_tokens: 3, seed: 1 }));
    expect(body.choices[2].text).toBe(alone.choices[0].text);
    expect(body.choices[3].text).toBe(alone.choices[1].text);
    const ids = await json(await post('/v1/completions', { model: MODEL, prompt: [[9, 10], [11]], max_tokens: 1 }));
    expect(ids.choices).toHaveLength(2);
    expect(engine.submitted.slice(-2).map((r) => r.prompt)).toEqual([{ kind: 'tokens', ids: [9, 10] }, { kind: 'tokens', ids: [11] }]);
  });

  it('logprobs: N gives tokens, token_logprobs, top_logprobs dicts and text_offset', async () => {
    const { post } = setup();
    const body = await json(await post('/v1/completions', { model: MODEL, prompt: 'x', max_tokens: 5, logprobs: 2 }));
    const lp = body.choices[0].logprobs;
    expect(sortedKeys(lp)).toEqual(['text_offset', 'token_logprobs', 'tokens', 'top_logprobs']);
    expect(lp.tokens.join('')).toBe(body.choices[0].text);
    expect(lp.token_logprobs).toHaveLength(5);
    for (const d of lp.top_logprobs) {
      expect(Object.keys(d).length).toBeGreaterThanOrEqual(1);
      expect(Object.keys(d).length).toBeLessThanOrEqual(2);
    }
    const expectedOffsets = lp.tokens.map((_: string, i: number) => lp.tokens.slice(0, i).join('').length);
    expect(lp.text_offset).toEqual(expectedOffsets);
  });

  it('echo prepends the prompt (JSON and stream)', async () => {
    const { post } = setup();
    const body = await json(await post('/v1/completions', { model: MODEL, prompt: 'Echo me ', max_tokens: 3, echo: true }));
    expect(body.choices[0].text.startsWith('Echo me ')).toBe(true);
    expect([...body.choices[0].text]).toHaveLength('Echo me '.length + 3);
    const chunks = (await sse(await post('/v1/completions', { model: MODEL, prompt: 'Echo me ', max_tokens: 3, echo: true, stream: true }))).events as Any[];
    expect(chunks[0]!.choices[0].text).toBe('Echo me ');
    // echo with logprobs (refused before #25): the prompt's tokens lead the logprobs, the first with none.
    const withLps = await json(await post('/v1/completions', { model: MODEL, prompt: 'Echo me ', max_tokens: 3, echo: true, logprobs: 1 }));
    const lps = withLps.choices[0].logprobs;
    expect(lps.tokens).toHaveLength(withLps.usage.prompt_tokens + 3);
    expect(lps.token_logprobs[0]).toBeNull();
    expect(lps.top_logprobs[0]).toBeNull();
    expect(lps.token_logprobs[1]).toBeLessThan(0);
    await expectError(await post('/v1/completions', { model: MODEL, prompt: 'x', max_tokens: 0 }), 400); // 0 only with echo
  });

  it('streams text_completion chunks with include_usage and [DONE]', async () => {
    const { post } = setup();
    const { events, done } = await sse(await post('/v1/completions', { model: MODEL, prompt: ['a', 'b'], max_tokens: 2, stream: true, stream_options: { include_usage: true }, logprobs: 1 }));
    expect(done).toBe(true);
    const chunks = events as Any[];
    for (const c of chunks) {
      expect(c.object).toBe('text_completion');
      expect(c.id).toMatch(/^cmpl-/);
    }
    const final = chunks.at(-1)!;
    expect(final.choices).toEqual([]);
    expect(final.usage.completion_tokens).toBe(4);
    const body = chunks.slice(0, -1);
    for (const c of body) {
      expect(c.usage).toBeNull();
      expect(sortedKeys(c.choices[0])).toEqual(['finish_reason', 'index', 'logprobs', 'text']);
    }
    expect(new Set(body.map((c) => c.choices[0].index))).toEqual(new Set([0, 1]));
    expect(body.filter((c) => c.choices[0].finish_reason === 'length')).toHaveLength(2);
  });

  it('rejects best_of != n, suffix, and out-of-vocabulary token ids', async () => {
    const { post } = setup();
    await expectError(await post('/v1/completions', { model: MODEL, prompt: 'x', best_of: 3 }), 400);
    await expectError(await post('/v1/completions', { model: MODEL, prompt: 'x', suffix: 'tail' }), 400);
    const e = await expectError(await post('/v1/completions', { model: MODEL, prompt: [999999999] }), 400);
    expect(e.param).toBe('prompt');
  });

  it('token-id prompts must be non-empty lists of integers in [0, 2^31): anything else is a 400 naming prompt, no engine call', async () => {
    const { post, engine } = setup();
    const bad: unknown[] = [[], [-1], [1.5], [2 ** 31], [1, '7'], [1, null], [[1], [-2]], [[]], [[1, 2.5]], [true], [[1], 'x']];
    for (const prompt of bad) {
      const e = await expectError(await post('/v1/completions', { model: MODEL, prompt, max_tokens: 1 }), 400);
      expect(e.param, JSON.stringify(prompt)).toBe('prompt');
    }
    expect(engine.submitted).toHaveLength(0);
    await json(await post('/v1/completions', { model: MODEL, prompt: [[0, 1], [2 ** 10]], max_tokens: 1 }));
    expect(engine.submitted.map((r) => r.prompt)).toEqual([{ kind: 'tokens', ids: [0, 1] }, { kind: 'tokens', ids: [1024] }]);
  });
});
