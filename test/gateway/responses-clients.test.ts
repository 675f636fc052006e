// The Responses API through real clients, over a real HTTP server (@hono/node-server) and the fake
// engine: openai-node (responses.create streaming and not, the responses.stream helper that checks the
// event sequence, previous_response_id, retrieve, delete) and the AI SDK's default `openai(model)`
// provider, which calls the Responses API (generateText, streamText).
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { listenForFile, MODEL, setup } from './helpers.js';

const KEY = 'sk-test-key';
const env = setup({ apiKey: KEY });
const listening = listenForFile(env);

const client = () => new OpenAI({ apiKey: KEY, baseURL: listening.url(), maxRetries: 0 });
const lastPrompt = () => {
  const p = env.engine.submitted.at(-1)!.prompt;
  if (p.kind !== 'chat') throw new Error('expected a chat prompt');
  return p.messages;
};
/** Requests served on /v1/responses so far (the gateway's own count). */
const responsesServed = async () => {
  const m = (await env.handle.metrics.render(null)).match(/^http_requests_total\{method="POST",route="\/v1\/responses",status="200"\} (\d+)$/m);
  return m ? Number(m[1]) : 0;
};

describe('openai-node: responses', () => {
  it('create (JSON): output_text, status, usage', async () => {
    const r = await client().responses.create({ model: MODEL, input: 'Write a haiku.', instructions: 'You are terse.', max_output_tokens: 64 });
    expect(r.object).toBe('response');
    expect(['completed', 'incomplete']).toContain(r.status);
    expect(r.output_text.length).toBeGreaterThan(0);
    expect(r.usage!.total_tokens).toBe(r.usage!.input_tokens + r.usage!.output_tokens);
    expect(lastPrompt()[0]).toEqual({ role: 'system', content: 'You are terse.' });
  });

  it('create (stream): the event types in order, the deltas equal the final output_text', async () => {
    const stream = await client().responses.create({ model: MODEL, input: [{ role: 'user', content: 'Hi' }], max_output_tokens: 40, stream: true });
    const types: string[] = [];
    let text = '';
    let final: OpenAI.Responses.Response | null = null;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = ev.response;
    }
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.at(-1)).toMatch(/^response\.(completed|incomplete)$/);
    expect(final!.output[0]!.type).toBe('message');
    const msg = final!.output[0] as OpenAI.Responses.ResponseOutputMessage;
    expect((msg.content[0] as OpenAI.Responses.ResponseOutputText).text).toBe(text);
  });

  it('the responses.stream helper accepts the event sequence and assembles the final response', async () => {
    const deltas: string[] = [];
    const stream = client().responses.stream({ model: MODEL, input: 'Count to five.', max_output_tokens: 8 });
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(final.status).toBe('incomplete');
    expect(final.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(final.output_text).toBe(deltas.join(''));
    expect(final.usage!.output_tokens).toBe(8);
  });

  it('previous_response_id, retrieve and delete', async () => {
    const first = await client().responses.create({ model: MODEL, input: 'My name is Ada.', max_output_tokens: 6 });
    const second = await client().responses.create({ model: MODEL, input: 'What is my name?', previous_response_id: first.id, max_output_tokens: 6 });
    expect(second.previous_response_id).toBe(first.id);
    expect(lastPrompt()).toEqual([
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: 'What is my name?' },
    ]);
    const got = await client().responses.retrieve(second.id);
    expect(got.id).toBe(second.id);
    expect(got.output_text).toBe(second.output_text);
    await client().responses.delete(second.id);
    await expect(client().responses.retrieve(second.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client().responses.create({ model: MODEL, input: 'x', previous_response_id: second.id })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('unsupported fields arrive as BadRequestError', async () => {
    await expect(client().responses.create({ model: MODEL, input: 'x', tools: [{ type: 'function', name: 'f', parameters: {}, strict: true }] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(client().responses.create({ model: MODEL, input: 'x', reasoning: { effort: 'high' } })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe("the AI SDK's default openai(model) provider (Responses API)", () => {
  const openai = () => createOpenAI({ baseURL: listening.url(), apiKey: KEY });

  it('generateText', async () => {
    const before = await responsesServed();
    const r = await generateText({ model: openai()(MODEL), system: 'Be kind.', prompt: 'Say hello.', maxOutputTokens: 30, temperature: 0 });
    expect(await responsesServed()).toBe(before + 1);
    expect(r.text.length).toBeGreaterThan(0);
    expect(['stop', 'length']).toContain(r.finishReason);
    expect(r.usage.totalTokens).toBe(r.usage.inputTokens! + r.usage.outputTokens!);
    expect(lastPrompt()).toEqual([{ role: 'system', content: 'Be kind.' }, { role: 'user', content: 'Say hello.' }]);
  });

  it('generateText stopped by maxOutputTokens reports finishReason length', async () => {
    const r = await generateText({ model: openai()(MODEL), prompt: 'Go on.', maxOutputTokens: 3 });
    expect(r.finishReason).toBe('length');
    expect(r.usage.outputTokens).toBe(3);
  });

  it('streamText: the text stream equals the final text; multi-turn messages keep their roles', async () => {
    const before = await responsesServed();
    const result = streamText({
      model: openai()(MODEL),
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello!' },
        { role: 'user', content: 'Tell me more.' },
      ],
      maxOutputTokens: 20,
    });
    let streamed = '';
    for await (const part of result.textStream) streamed += part;
    expect(streamed.length).toBeGreaterThan(0);
    expect(await result.text).toBe(streamed);
    expect(['stop', 'length']).toContain(await result.finishReason);
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
    expect(await responsesServed()).toBe(before + 1);
    expect(lastPrompt()).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
      { role: 'user', content: 'Tell me more.' },
    ]);
  });
});
