// Tool calling through real clients over a real HTTP server and the REAL engine (tiny config, formula
// weights: random logits, grammar pool): whatever the model writes, the calls are valid, so each
// client's own parsing and validation of them passes. openai-node (create, stream, runTools), the AI
// SDK (generateText / streamText with a tool, through @ai-sdk/openai-compatible and @ai-sdk/openai's
// chat model), LangChain (bindTools, withStructuredOutput with method functionCalling).
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { listenForFile } from './helpers.js';
import { chatCheckpoint, realGateway, REAL_MODEL, type RealGateway } from './real-engine.js';

const MODEL = REAL_MODEL;
let gw: RealGateway;
beforeAll(async () => {
  gw = await realGateway({ dir: await chatCheckpoint(), maxModelLen: 2048, maxNumBatchedTokens: 256, kvBlocks: 256, grammar: true, app: { enableAutoToolChoice: true } });
});
afterAll(async () => {
  await gw?.close();
});
const listening = listenForFile(() => gw);

// Bounded schemas: with random logits an unbounded string need never close.
const weatherSchema = z.object({ city: z.enum(['Paris', 'Rome', 'Oslo']), days: z.number().int().min(1).max(7) });
const flagSchema = z.object({ on: z.boolean(), level: z.enum(['low', 'high']) });
const weatherParams = z.toJSONSchema(weatherSchema) as Record<string, unknown>;
const openaiTools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather', parameters: weatherParams } },
  { type: 'function', function: { name: 'set_flag', parameters: z.toJSONSchema(flagSchema) as Record<string, unknown> } },
];
const schemas: Record<string, z.ZodType> = { get_weather: weatherSchema, set_flag: flagSchema };
const expectValidCall = (name: string, args: string) => {
  expect(Object.keys(schemas)).toContain(name);
  expect(schemas[name]!.safeParse(JSON.parse(args)).success, `${name} ${args}`).toBe(true);
};
const client = () => new OpenAI({ apiKey: 'x', baseURL: listening.url(), maxRetries: 0 });
const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];

describe('openai-node', () => {
  it('create with tools (required): valid tool_calls, finish_reason tool_calls', async () => {
    const r = await client().chat.completions.create({ model: MODEL, messages, tools: openaiTools, tool_choice: 'required', seed: 1, temperature: 1, max_tokens: 300 });
    const ch = r.choices[0]!;
    expect(ch.finish_reason).toBe('tool_calls');
    expect(ch.message.content).toBeNull();
    expect(ch.message.tool_calls!.length).toBeGreaterThan(0);
    for (const c of ch.message.tool_calls!) {
      expect(c.type).toBe('function');
      expect(c.id).toMatch(/^call_/);
      if (c.type === 'function') expectValidCall(c.function.name, c.function.arguments);
    }
  });

  it('stream with a named tool: the stream helper assembles a valid call', async () => {
    const stream = client().chat.completions.stream({ model: MODEL, messages, tools: openaiTools, tool_choice: { type: 'function', function: { name: 'set_flag' } }, seed: 2, temperature: 1, max_tokens: 200 });
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls!;
    expect(calls).toHaveLength(1);
    const c = calls[0]!;
    if (c.type !== 'function') throw new Error('expected a function call');
    expect(c.function.name).toBe('set_flag');
    expectValidCall('set_flag', c.function.arguments);
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('runTools: calls the function with parsed arguments and sends the result back in the history', async () => {
    const seen: unknown[] = [];
    const runner = client().chat.completions.runTools({
      model: MODEL,
      messages,
      tool_choice: 'required',
      seed: 3,
      temperature: 1,
      max_tokens: 200,
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'The weather',
            parameters: weatherParams,
            parse: (s: string) => weatherSchema.parse(JSON.parse(s)),
            function: (args: z.infer<typeof weatherSchema>) => {
              seen.push(args);
              return { temp: 21 };
            },
          },
        },
      ],
    }, { maxChatCompletions: 2 });
    await runner.done().catch(() => undefined); // the second round may end in calls again (required): maxChatCompletions stops it
    expect(seen.length).toBeGreaterThan(0);
    for (const a of seen) expect(weatherSchema.safeParse(a).success).toBe(true);
    const toolMessages = runner.messages.filter((m) => m.role === 'tool');
    expect(toolMessages.length).toBe(seen.length);
    expect(toolMessages[0]!.content).toBe('{"temp":21}');
  });
});

describe('the AI SDK', () => {
  const getWeather = (calls: unknown[]) =>
    tool({
      description: 'The weather in a city',
      inputSchema: weatherSchema,
      execute: async (input) => {
        calls.push(input);
        return { temp: 21 };
      },
    });
  const providers = {
    '@ai-sdk/openai-compatible': () => createOpenAICompatible({ name: 'ernie-edge', baseURL: listening.url(), apiKey: 'x' }).chatModel(MODEL),
    '@ai-sdk/openai (chat)': () => createOpenAI({ baseURL: listening.url(), apiKey: 'x' }).chat(MODEL),
  };

  for (const [name, model] of Object.entries(providers)) {
    it(`${name}: generateText with a tool runs it with valid input`, async () => {
      const calls: unknown[] = [];
      const r = await generateText({ model: model(), prompt: 'Weather in Oslo?', tools: { get_weather: getWeather(calls) }, toolChoice: 'required', seed: 4, temperature: 1, maxOutputTokens: 200 });
      expect(r.finishReason).toBe('tool-calls');
      expect(r.toolCalls.length).toBeGreaterThan(0);
      expect(r.toolCalls.every((c) => c.toolName === 'get_weather' && weatherSchema.safeParse(c.input).success)).toBe(true);
      expect(calls).toHaveLength(r.toolCalls.length);
      expect(r.toolResults.map((t) => t.output)).toEqual(calls.map(() => ({ temp: 21 })));
    });

    it(`${name}: streamText with a tool streams a valid call`, async () => {
      const calls: unknown[] = [];
      const result = streamText({ model: model(), prompt: 'Weather?', tools: { get_weather: getWeather(calls) }, toolChoice: { type: 'tool', toolName: 'get_weather' }, seed: 5, temperature: 1, maxOutputTokens: 200 });
      const parts: string[] = [];
      for await (const p of result.fullStream) parts.push(p.type);
      expect(parts).toContain('tool-input-start');
      expect(parts).toContain('tool-call');
      const toolCalls = await result.toolCalls;
      expect(toolCalls).toHaveLength(1);
      expect(weatherSchema.safeParse(toolCalls[0]!.input).success).toBe(true);
      expect(await result.finishReason).toBe('tool-calls');
      expect(calls).toHaveLength(1);
    });
  }
});

describe('LangChain (@langchain/openai)', () => {
  const chat = () => new ChatOpenAI({ model: MODEL, apiKey: 'x', configuration: { baseURL: listening.url() }, temperature: 1, maxTokens: 200, maxRetries: 0 });

  it('bindTools: tool_calls with parsed, valid args', async () => {
    const m = chat().bindTools([{ name: 'get_weather', description: 'The weather', schema: weatherSchema }], { tool_choice: 'required' });
    const msg = await m.invoke('Weather in Rome?');
    expect(msg.tool_calls!.length).toBeGreaterThan(0);
    for (const c of msg.tool_calls!) {
      expect(c.name).toBe('get_weather');
      expect(weatherSchema.safeParse(c.args).success).toBe(true);
      expect(c.id).toMatch(/^call_/);
    }
  });

  it('bindTools streamed: the chunks concatenate to valid calls', async () => {
    const m = chat().bindTools([{ name: 'set_flag', description: 'Set the flag', schema: flagSchema }], { tool_choice: 'required' });
    let acc: Awaited<ReturnType<typeof m.invoke>> | undefined;
    for await (const chunk of await m.stream('Flag?')) acc = acc ? acc.concat(chunk) : chunk;
    expect(acc!.tool_calls!.length).toBeGreaterThan(0);
    for (const c of acc!.tool_calls!) expect(flagSchema.safeParse(c.args).success).toBe(true);
  });

  it("withStructuredOutput({method: 'functionCalling'}): the parsed object", async () => {
    const out = await chat().withStructuredOutput(weatherSchema, { method: 'functionCalling', name: 'weather' }).invoke('Weather in Paris for 3 days?');
    expect(weatherSchema.safeParse(out).success).toBe(true);
  });
});
