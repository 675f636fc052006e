// The official openai SDK against the app served on an ephemeral loopback port (@hono/node-server).
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../src/protocol/engine-client.js';
import { listenForFile, MODEL, setup } from './helpers.js';

const KEY = 'sk-test-key';
const env = setup({ apiKey: KEY });
const listening = listenForFile(env);

const client = () => new OpenAI({ apiKey: KEY, baseURL: listening.url(), maxRetries: 0 });
const messages = [{ role: 'user' as const, content: '你好' }];

describe('openai SDK 6.x', () => {
  it('chat: non-streaming with n=2 and logprobs', async () => {
    const r = await client().chat.completions.create({ model: MODEL, messages, max_tokens: 4, n: 2, logprobs: true, top_logprobs: 2 });
    expect(r.object).toBe('chat.completion');
    expect(r.choices).toHaveLength(2);
    expect(r.choices[1]!.index).toBe(1);
    expect(r.choices[0]!.message.role).toBe('assistant');
    expect(r.choices[0]!.logprobs?.content).toHaveLength(4);
    expect(r.usage?.completion_tokens).toBe(8);
  });

  it('chat: streaming with include_usage', async () => {
    const stream = await client().chat.completions.create({ model: MODEL, messages, max_tokens: 5, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect([...text]).toHaveLength(5);
    expect(finish).toBe('length');
    expect(usage?.completion_tokens).toBe(5);
  });

  it('completions: non-streaming and streaming', async () => {
    const r = await client().completions.create({ model: MODEL, prompt: ['a', 'b'], max_tokens: 3, n: 2 });
    expect(r.object).toBe('text_completion');
    expect(r.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    const stream = await client().completions.create({ model: MODEL, prompt: 'x', max_tokens: 3, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    expect([...text]).toHaveLength(3);
  });

  it('models.list', async () => {
    const page = await client().models.list();
    expect(page.data.map((m) => m.id)).toEqual([MODEL]);
  });

  it('errors arrive as the SDK error classes', async () => {
    await expect(client().chat.completions.create({ model: MODEL, messages, temperature: 5 })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(new OpenAI({ apiKey: 'wrong', baseURL: listening.url(), maxRetries: 0 }).models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(client().chat.completions.create({ model: 'gpt-4o', messages })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    env.engine.failNext(new EngineError('QUEUE_FULL', 'busy'));
    const rl = await client().chat.completions.create({ model: MODEL, messages }).catch((e: unknown) => e);
    expect(rl).toBeInstanceOf(OpenAI.RateLimitError);
    expect((rl as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('1');
    env.engine.setReady(false);
    const down = await client().completions.create({ model: MODEL, prompt: 'x' }).catch((e: unknown) => e);
    env.engine.setReady(true);
    expect(down).toBeInstanceOf(OpenAI.InternalServerError);
    expect((down as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
  });

  it('an error mid-stream surfaces as an APIError while iterating', async () => {
    env.engine.failAfter(2, 'INTERNAL');
    const stream = await client().chat.completions.create({ model: MODEL, messages, max_tokens: 10, stream: true });
    const consume = async () => {
      for await (const _ of stream) void _;
    };
    await expect(consume()).rejects.toBeInstanceOf(OpenAI.APIError);
  });
});
