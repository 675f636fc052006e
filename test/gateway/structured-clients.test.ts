// Structured output through the clients people use (#24 proof), against the REAL engine on formula
// weights (random logits: only the grammar makes the output parse) served over HTTP:
//  - openai-node: chat.completions.parse() and .stream() with zodResponseFormat, responses.parse()
//    with zodTextFormat;
//  - the AI SDK: generateObject, streamObject and generateText with Output.object, through
//    @ai-sdk/openai-compatible (structured outputs on) and the default @ai-sdk/openai provider
//    (the Responses API's text.format) and its chat model;
//  - LangChain: withStructuredOutput with method jsonSchema and jsonMode (@langchain/openai).
// Every client validates the answer against its zod schema itself; the tests also check the values.
// Sampled requests carry a seed and the rest are greedy, so every run sees the same tokens.
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, Output, streamObject, type LanguageModel } from 'ai';
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { listenForFile } from './helpers.js';
import { chatCheckpoint, realGateway, REAL_MODEL, type RealGateway } from './real-engine.js';

// Bounded everywhere (string lengths, array sizes, number ranges): random logits would otherwise fill
// max_tokens inside an unbounded string.
const Person = z.object({
  name: z.string().min(1).max(12),
  age: z.number().int().min(0).max(120),
  role: z.enum(['admin', 'user', 'guest']),
  tags: z.array(z.string().max(6)).max(3),
  nickname: z.string().max(8).nullable(),
});
const MAX_TOKENS = 400;

let gw: RealGateway;
beforeAll(async () => {
  gw = await realGateway({ dir: await chatCheckpoint(), maxNumSeqs: 8, kvBlocks: 512, grammar: true });
}, 120_000);
afterAll(async () => gw?.close());
const listening = listenForFile(() => gw);

const expectPerson = (p: unknown) => expect(Person.safeParse(p).success, JSON.stringify(p)).toBe(true);

describe('openai-node with zodResponseFormat', () => {
  const client = () => new OpenAI({ apiKey: 'x', baseURL: listening.url(), maxRetries: 0 });

  it('chat.completions.parse() returns the parsed object', async () => {
    for (const seed of [1, 2, 3]) {
      const r = await client().chat.completions.parse({ model: REAL_MODEL, messages: [{ role: 'user', content: 'Who?' }], response_format: zodResponseFormat(Person, 'person'), max_tokens: MAX_TOKENS, seed });
      expect(r.choices[0]!.finish_reason).toBe('stop');
      expectPerson(r.choices[0]!.message.parsed);
    }
  });

  it('chat.completions.stream() assembles and parses the streamed object', async () => {
    const stream = client().chat.completions.stream({ model: REAL_MODEL, messages: [{ role: 'user', content: 'Who?' }], response_format: zodResponseFormat(Person, 'person'), max_tokens: MAX_TOKENS, seed: 4 });
    const final = await stream.finalChatCompletion();
    expectPerson(final.choices[0]!.message.parsed);
  });

  it('responses.parse() with zodTextFormat (text.format json_schema)', async () => {
    const r = await client().responses.parse({ model: REAL_MODEL, input: 'Who?', text: { format: zodTextFormat(Person, 'person') }, max_output_tokens: MAX_TOKENS, temperature: 0 });
    expect(r.status).toBe('completed');
    expectPerson(r.output_parsed);
  });
});

describe('the AI SDK', () => {
  const models = (): [string, LanguageModel][] => {
    const compat = createOpenAICompatible({ name: 'ernie-edge', baseURL: listening.url(), supportsStructuredOutputs: true });
    const openai = createOpenAI({ baseURL: listening.url(), apiKey: 'x' });
    return [
      ['openai-compatible', compat.chatModel(REAL_MODEL)],
      ['openai (Responses API)', openai(REAL_MODEL)],
      ['openai chat', openai.chat(REAL_MODEL)],
    ];
  };
  // Greedy: the same tokens on every run whichever settings a provider forwards (the Responses API takes no seed).
  const settings = { maxOutputTokens: MAX_TOKENS, maxRetries: 0, temperature: 0, prompt: 'Describe a person.' };

  it('generateObject', async () => {
    for (const [name, model] of models()) {
      const { object, finishReason } = await generateObject({ model, schema: Person, ...settings });
      expect(finishReason, name).toBe('stop');
      expectPerson(object);
    }
  });

  it('streamObject: partial objects, then the validated object', async () => {
    for (const [name, model] of models()) {
      const result = streamObject({ model, schema: Person, ...settings });
      let partials = 0;
      for await (const partial of result.partialObjectStream) {
        expect(typeof partial, name).toBe('object');
        partials++;
      }
      expect(partials, name).toBeGreaterThan(1);
      expectPerson(await result.object);
    }
  });

  it('generateText with Output.object', async () => {
    for (const [name, model] of models()) {
      const { output, finishReason } = await generateText({ model, output: Output.object({ schema: Person }), ...settings });
      expect(finishReason, name).toBe('stop');
      expectPerson(output);
    }
  });
});

describe('LangChain withStructuredOutput', () => {
  const chat = (extra: Record<string, unknown> = {}) =>
    new ChatOpenAI({ model: REAL_MODEL, apiKey: 'x', configuration: { baseURL: listening.url() }, maxTokens: MAX_TOKENS, maxRetries: 0, temperature: 0, ...extra });

  it('method jsonSchema', async () => {
    for (const seed of [6, 7]) expectPerson(await chat({ temperature: 1, modelKwargs: { seed } }).withStructuredOutput(Person, { method: 'jsonSchema' }).invoke('Describe a person.'));
  });

  it('method jsonMode: a JSON object', async () => {
    // json_object is any JSON object: random logits keep strings open until max_tokens, so a bias on
    // the token "}" makes the object close (the grammar still decides what may come).
    const tokens = (await (await gw.post('/tokenize', { model: REAL_MODEL, prompt: '}', add_special_tokens: false })).json()) as { tokens: number[] };
    expect(tokens.tokens).toHaveLength(1);
    const Loose = z.object({ name: z.string().optional() });
    const out = await chat({ logitBias: { [tokens.tokens[0]!]: 100 } }).withStructuredOutput(Loose, { method: 'jsonMode' }).invoke('Describe a person as JSON.');
    expect(Loose.safeParse(out).success).toBe(true);
  });
});
