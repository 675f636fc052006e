import { describe, expect, it } from 'vitest';
import { MODEL, expectError, setup, sortedKeys, sse } from './helpers.js';

const msgs = [{ role: 'user', content: '你好, ERNIE' }];
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON/YAML, read path by path in assertions
type Any = Record<string, any>;

describe('POST /v1/chat/completions (JSON)', () => {
  it('returns exactly the OpenAI chat.completion shape', async () => {
    const { post, engine } = setup();
    const res = await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 8 });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as Any;
    expect(sortedKeys(body)).toEqual(['choices', 'created', 'id', 'model', 'object', 'system_fingerprint', 'usage']);
    expect(body.id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
    expect(body.object).toBe('chat.completion');
    expect(Number.isInteger(body.created)).toBe(true);
    expect(body.model).toBe(MODEL);
    expect(body.system_fingerprint).toMatch(/^fp_[0-9a-f]+$/);
    expect(body.choices).toHaveLength(1);
    const ch = body.choices[0];
    expect(sortedKeys(ch)).toEqual(['finish_reason', 'index', 'logprobs', 'message']);
    expect(ch.message).toEqual({ role: 'assistant', content: expect.any(String), refusal: null });
    expect([...ch.message.content]).toHaveLength(8); // one fake token per code point
    expect(ch.finish_reason).toBe('length');
    expect(ch.logprobs).toBeNull();
    expect(body.usage).toEqual({ prompt_tokens: expect.any(Number), completion_tokens: 8, total_tokens: body.usage.prompt_tokens + 8, prompt_tokens_details: { cached_tokens: expect.any(Number) } });
    // the engine saw the chat prompt and the model's generation defaults
    const sub = engine.submitted[0]!;
    expect(sub.id).toBe(body.id);
    expect(sub.prompt).toEqual({ kind: 'chat', messages: [{ role: 'user', content: '你好, ERNIE' }], addGenerationPrompt: true });
    expect(sub.sampling.temperature).toBe(0.8);
    expect(sub.sampling.topP).toBe(0.8);
    expect(sub.sampling.maxTokens).toBe(8);
  });

  it('a temperature below 1e-5 (vLLM\'s floor) is greedy: the engine is sent 0', async () => {
    const { post, engine } = setup();
    const sent = async (temperature: number) => {
      const res = await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 2, temperature });
      expect(res.status).toBe(200);
      return engine.submitted.at(-1)!.sampling.temperature;
    };
    for (const t of [1e-39, 1e-40, 1e-44, 1e-46, 5e-324, 9.99e-6]) expect(await sent(t), String(t)).toBe(0);
    expect(await sent(1e-5)).toBe(1e-5);
    expect(await sent(0.5)).toBe(0.5);
  });

  it('passes sampling parameters through, max_completion_tokens winning over max_tokens', async () => {
    const { post, engine } = setup();
    const res = await post('/v1/chat/completions', {
      model: MODEL, messages: msgs, max_tokens: 50, max_completion_tokens: 3, temperature: 0, top_p: 0.5, top_k: 20, min_p: 0.1,
      frequency_penalty: 0.5, presence_penalty: -0.5, repetition_penalty: 1.1, seed: 7, stop: 'xyz', logit_bias: { '100': -100, '5': 2.5 },
      ignore_eos: true, stop_token_ids: [7], min_tokens: 2, some_future_field: { nested: true },
    });
    expect(res.status).toBe(200);
    expect(engine.submitted[0]!.sampling).toEqual({
      maxTokens: 3, temperature: 0, topP: 0.5, topK: 20, minP: 0.1, repetitionPenalty: 1.1, frequencyPenalty: 0.5, presencePenalty: -0.5,
      logitBias: { 100: -100, 5: 2.5 }, seed: 7, stop: ['xyz'], stopTokenIds: [7], ignoreEos: true, minTokens: 2, logprobs: null, skipSpecialTokens: true,
    });
  });

  it('n=2 gives two indexed choices and usage over both', async () => {
    const { post } = setup();
    const body = (await (await post('/v1/chat/completions', { model: MODEL, messages: msgs, n: 2, max_tokens: 5, seed: 3 })).json()) as Any;
    expect(body.choices.map((c: Any) => c.index)).toEqual([0, 1]);
    expect(body.choices[0].message.content).not.toBe(body.choices[1].message.content);
    expect(body.usage.completion_tokens).toBe(10);
  });

  it('stop strings end the choice and are never returned', async () => {
    const { post } = setup();
    const base = { model: MODEL, messages: msgs, max_tokens: 40, seed: 11, ignore_eos: true };
    const full = ((await (await post('/v1/chat/completions', base)).json()) as Any).choices[0].message.content as string;
    const stop = full.slice(10, 13);
    const expected = full.slice(0, full.indexOf(stop));
    const body = (await (await post('/v1/chat/completions', { ...base, stop: ['never-there', stop] })).json()) as Any;
    expect(body.choices[0].message.content).toBe(expected);
    expect(body.choices[0].finish_reason).toBe('stop');
  });

  it('logprobs: true with top_logprobs gives choices[].logprobs.content[]', async () => {
    const { post, engine } = setup();
    const body = (await (await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 4, logprobs: true, top_logprobs: 3 })).json()) as Any;
    expect(engine.submitted[0]!.sampling.logprobs).toBe(3);
    const lp = body.choices[0].logprobs;
    expect(sortedKeys(lp)).toEqual(['content', 'refusal']);
    expect(lp.content).toHaveLength(4);
    expect(lp.content.map((e: Any) => e.token).join('')).toBe(body.choices[0].message.content);
    for (const e of lp.content) {
      expect(sortedKeys(e)).toEqual(['bytes', 'logprob', 'token', 'top_logprobs']);
      expect(e.logprob).toBeLessThanOrEqual(0);
      expect(e.bytes).toEqual([...new TextEncoder().encode(e.token)]);
      expect(e.top_logprobs).toHaveLength(3);
      for (const t of e.top_logprobs) expect(sortedKeys(t)).toEqual(['bytes', 'logprob', 'token']);
    }
  });

  it('return_tokens_as_token_ids renders tokens as token_id:N', async () => {
    const { post } = setup();
    const body = (await (await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 2, logprobs: true, return_tokens_as_token_ids: true })).json()) as Any;
    for (const e of body.choices[0].logprobs.content) expect(e.token).toMatch(/^token_id:\d+$/);
  });

  it('accepts content parts and null assistant content', async () => {
    const { post, engine } = setup();
    const res = await post('/v1/chat/completions', {
      model: MODEL, max_tokens: 1,
      messages: [{ role: 'system', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }, { role: 'assistant', content: null }, { role: 'user', content: 'q' }],
    });
    expect(res.status).toBe(200);
    const p = engine.submitted[0]!.prompt;
    expect(p.kind === 'chat' && p.messages.map((m) => m.content)).toEqual(['ab', '', 'q']);
  });

  it('rejects top_logprobs without logprobs, tools, unknown response formats and min_tokens above max_tokens', async () => {
    const { post } = setup();
    for (const extra of [{ top_logprobs: 2 }, { tools: [{ type: 'function' }] }, { response_format: { type: 'json_xml' } }, { min_tokens: 3, max_tokens: 2 }]) {
      await expectError(await post('/v1/chat/completions', { model: MODEL, messages: msgs, ...extra }), 400);
    }
  });
});

describe('POST /v1/chat/completions (stream)', () => {
  it('streams role first, content deltas, finish_reason at the end, then [DONE]', async () => {
    const { post } = setup();
    const { events, done } = await sse(await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 5, stream: true }));
    expect(done).toBe(true);
    const chunks = events as Any[];
    const id = chunks[0]!.id;
    for (const c of chunks) {
      expect(sortedKeys(c)).toEqual(['choices', 'created', 'id', 'model', 'object', 'system_fingerprint']);
      expect(c.object).toBe('chat.completion.chunk');
      expect(c.id).toBe(id);
      expect(c.choices).toHaveLength(1);
      expect(sortedKeys(c.choices[0])).toEqual(['delta', 'finish_reason', 'index', 'logprobs']);
    }
    expect(chunks[0]!.choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const last = chunks.at(-1)!;
    expect(last.choices[0].finish_reason).toBe('length');
    for (const c of chunks.slice(0, -1)) expect(c.choices[0].finish_reason).toBeNull();
    for (const c of chunks.slice(1)) expect(c.choices[0].delta.role).toBeUndefined();
    const text = chunks.map((c) => c.choices[0].delta.content ?? '').join('');
    expect([...text]).toHaveLength(5);
  });

  it('include_usage adds usage: null to chunks and a final empty-choices usage chunk', async () => {
    const { post } = setup();
    const { events } = await sse(await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 3, n: 2, stream: true, stream_options: { include_usage: true } }));
    const chunks = events as Any[];
    const final = chunks.at(-1)!;
    expect(final.choices).toEqual([]);
    expect(final.usage).toEqual({ prompt_tokens: expect.any(Number), completion_tokens: 6, total_tokens: final.usage.prompt_tokens + 6, prompt_tokens_details: { cached_tokens: expect.any(Number) } });
    for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull();
    // n=2: each index gets its role chunk and its own finish
    expect(chunks.filter((c) => c.choices[0]?.delta?.role === 'assistant').map((c) => c.choices[0].index)).toEqual([0, 1]);
    expect(chunks.filter((c) => c.choices[0]?.finish_reason).map((c) => c.choices[0].index).sort()).toEqual([0, 1]);
  });

  it('continuous_usage_stats puts running usage on every chunk', async () => {
    const { post } = setup();
    const chunks = (await sse(await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 4, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } }))).events as Any[];
    const counts = chunks.map((c) => c.usage.completion_tokens);
    expect(counts.at(-1)).toBe(4);
    expect(counts).toEqual([...counts].sort((a, b) => a - b)); // monotone
  });

  it('streams logprobs per chunk', async () => {
    const { post } = setup();
    const chunks = (await sse(await post('/v1/chat/completions', { model: MODEL, messages: msgs, max_tokens: 3, stream: true, logprobs: true, top_logprobs: 1 }))).events as Any[];
    const content = chunks.slice(1).flatMap((c) => c.choices[0].logprobs.content);
    expect(content).toHaveLength(3);
    expect(content[0].top_logprobs).toHaveLength(1);
  });

  it('rejects stream_options without stream', async () => {
    const { post } = setup();
    const e = await expectError(await post('/v1/chat/completions', { model: MODEL, messages: msgs, stream_options: { include_usage: true } }), 400);
    expect(e.param).toBe('stream_options');
  });
});
