// Tool calling through /v1/chat/completions over the fake engine, whose scripted reply contains call
// markup: the constraint each tool_choice lowers to, the answers (whole and streamed), the 400s, the
// history and the prompt the template gets (/tokenize renders the same).
import { describe, expect, it } from 'vitest';
import { hermesParser } from '../../src/gateway/tools/hermes.js';
import { MODEL, expectError, setup, sse } from './helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON, read path by path in assertions
type Any = Record<string, any>;

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } }, required: ['city'] },
  },
};
const time = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } } };
const TOOLS = [weather, time];
const msgs = [{ role: 'user', content: 'Weather in Paris and the time?' }];
const SCRIPT =
  `Let me look.\n${hermesParser.formatCall('get_weather', '{"city": "Paris", "days": 2}')}\n` +
  `${hermesParser.formatCall('get_time', '{"tz": "Europe/Paris"}')}\n`;

const env = () => setup({ enableAutoToolChoice: true }, { corpus: SCRIPT, fixedStart: 0 });
const tag = (name: string, schema: unknown) => ({
  type: 'tag',
  begin: `<tool_call>\n{"name": "${name}", "arguments": `,
  content: { type: 'json_schema', json_schema: schema },
  end: '}\n</tool_call>',
});

describe('tool_choice → the constraint the engine decodes under', () => {
  it('auto (the default with tools): free text, then only valid calls after the trigger', async () => {
    const { post, engine } = env();
    expect((await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: TOOLS })).status).toBe(200);
    const c = engine.submitted[0]!.constraint!;
    expect(c.kind).toBe('structural_tag');
    expect(c.param).toBe('tools');
    expect(JSON.parse((c as { tag: string }).tag)).toEqual({
      type: 'structural_tag',
      format: {
        type: 'triggered_tags',
        triggers: ['<tool_call>'],
        tags: [tag('get_weather', weather.function.parameters), tag('get_time', time.function.parameters)],
        at_least_one: false,
        stop_after_first: false,
      },
    });
  });

  it('required: calls only, at least one; parallel_tool_calls false: exactly one', async () => {
    const { post, engine } = env();
    for (const parallel of [true, false]) {
      const res = await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: TOOLS, tool_choice: 'required', parallel_tool_calls: parallel });
      expect(res.status).toBe(200);
      expect(JSON.parse((engine.submitted.at(-1)!.constraint as { tag: string }).tag)).toEqual({
        type: 'structural_tag',
        format: {
          type: 'tags_with_separator',
          tags: [tag('get_weather', weather.function.parameters), tag('get_time', time.function.parameters)],
          separator: '\n',
          at_least_one: true,
          stop_after_first: !parallel,
        },
      });
    }
  });

  it('named: one call of that tool; a tool without parameters takes {}', async () => {
    const { post, engine } = env();
    const bare = { type: 'function', function: { name: 'ping' } };
    const res = await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: [weather, bare], tool_choice: { type: 'function', function: { name: 'ping' } } });
    expect(res.status).toBe(200);
    const c = engine.submitted[0]!.constraint as { param: string; tag: string };
    expect(c.param).toBe('tools[1].function.parameters');
    expect(JSON.parse(c.tag).format).toEqual({
      type: 'tags_with_separator',
      tags: [tag('ping', { type: 'object', properties: {}, additionalProperties: false })],
      separator: '\n',
      at_least_one: true,
      stop_after_first: true,
    });
  });

  it('none: no constraint, nothing parsed (the markup is content), tools still reach the prompt', async () => {
    const { post, engine } = env();
    const res = await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: TOOLS, tool_choice: 'none' });
    const body = (await res.json()) as Any;
    expect(engine.submitted[0]!.constraint).toBeUndefined();
    expect(body.choices[0].message).toEqual({ role: 'assistant', content: SCRIPT, refusal: null });
    expect(body.choices[0].finish_reason).toBe('stop');
    expect(engine.submitted[0]!.prompt).toMatchObject({ tools: TOOLS });
  });

  it('auto without --enable-auto-tool-choice: the 400 vLLM gives', async () => {
    const { post } = setup({}, { corpus: SCRIPT, fixedStart: 0 });
    const e = await expectError(await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: TOOLS }), 400);
    expect(e.message).toBe('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set');
    expect(e.param).toBe('tool_choice');
    // required and named need no flag; tool_choice auto without tools is plain chat
    expect((await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: TOOLS, tool_choice: 'required' })).status).toBe(200);
    expect((await post('/v1/chat/completions', { model: MODEL, messages: msgs, tool_choice: 'auto' })).status).toBe(200);
  });
});

describe('bad tools: a 400 naming where', () => {
  const cases: [string, Any, string][] = [
    ['duplicate names', { tools: [weather, time, weather] }, 'tools[2].function.name'],
    ['tool_choice naming an absent tool', { tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice.function.name'],
    ['required without tools', { tool_choice: 'required' }, 'tool_choice'],
    ['parameters not a schema: bad type', { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'objekt' } } }] }, 'tools[0].function.parameters.type'],
    ['a nested property that is not a schema', { tools: [time, { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'array', items: 5 } } } } }] }, 'tools[1].function.parameters.properties.a.items'],
    ['required not a list of names', { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', required: 'a' } } }] }, 'tools[0].function.parameters.required'],
    ['anyOf empty', { tools: [{ type: 'function', function: { name: 'f', parameters: { anyOf: [] } } }] }, 'tools[0].function.parameters.anyOf'],
    ['kwargs overriding messages', { chat_template_kwargs: { messages: [] } }, 'chat_template_kwargs'],
  ];
  it.each(cases)('%s', async (_, extra, param) => {
    const { post, engine } = env();
    const e = await expectError(await post('/v1/chat/completions', { model: MODEL, messages: msgs, ...extra }), 400);
    expect(e.param).toBe(param);
    expect(engine.submitted).toHaveLength(0);
  });

  it('schema-level mistakes: parameters not an object, a bad name, a non-function tool', async () => {
    const { post } = env();
    for (const tools of [[{ type: 'function', function: { name: 'f', parameters: 'x' } }], [{ type: 'function', function: { name: 'a b' } }], [{ type: 'web_search' }]]) {
      const e = await expectError(await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools }), 400);
      expect(e.param).toMatch(/^tools/);
    }
  });
});

describe('answers with calls', () => {
  const expectedCalls = [
    { name: 'get_weather', arguments: '{"city": "Paris", "days": 2}' },
    { name: 'get_time', arguments: '{"tz": "Europe/Paris"}' },
  ];

  it('whole: message.tool_calls, finish_reason tool_calls, text before a call as content', async () => {
    const { post } = env();
    const body = (await (await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: TOOLS, n: 2 })).json()) as Any;
    expect(body.choices).toHaveLength(2);
    for (const ch of body.choices) {
      expect(ch.finish_reason).toBe('tool_calls');
      expect(ch.message.content).toBe('Let me look.');
      expect(ch.message.refusal).toBeNull();
      expect(ch.message.tool_calls).toEqual(expectedCalls.map((f) => ({ id: expect.stringMatching(/^call_[0-9a-f]{24}$/) as unknown, type: 'function', function: f })));
      expect(new Set(ch.message.tool_calls.map((c: Any) => c.id)).size).toBe(2);
    }
  });

  it('content is null when there are only calls; a plain answer has no tool_calls', async () => {
    const only = `${hermesParser.formatCall('get_time', '{}')}\n`;
    const { post } = setup({}, { corpus: only, fixedStart: 0 });
    const body = (await (await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: TOOLS, tool_choice: 'required' })).json()) as Any;
    expect(body.choices[0].message).toEqual({ role: 'assistant', content: null, refusal: null, tool_calls: [{ id: expect.any(String) as unknown, type: 'function', function: { name: 'get_time', arguments: '{}' } }] });
    const plain = setup({ enableAutoToolChoice: true }, { corpus: 'No tools needed.', fixedStart: 0 });
    const p = (await (await plain.post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: TOOLS })).json()) as Any;
    expect(p.choices[0].message).toEqual({ role: 'assistant', content: 'No tools needed.', refusal: null });
    expect(p.choices[0].finish_reason).toBe('stop');
  });

  it('a call cut by max_tokens ends with finish_reason length', async () => {
    const { post } = env();
    const body = (await (await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: TOOLS, max_tokens: SCRIPT.indexOf('"Paris"') })).json()) as Any;
    expect(body.choices[0].finish_reason).toBe('length');
    expect(body.choices[0].message.tool_calls).toEqual([{ id: expect.any(String) as unknown, type: 'function', function: { name: 'get_weather', arguments: '{"city": ' } }]);
  });

  it('streamed as OpenAI streams them: id, type and name first with arguments "", then fragments', async () => {
    const { post } = env();
    const { events, done } = await sse(await post('/v1/chat/completions', { model: MODEL, messages: msgs, tools: TOOLS, stream: true }));
    expect(done).toBe(true);
    const deltas = (events as Any[]).map((e) => e.choices[0]);
    expect(deltas[0].delta).toEqual({ role: 'assistant', content: '' });
    let content = '';
    const calls: Any[] = [];
    for (const d of deltas.slice(1)) {
      if (d.delta.content !== undefined) content += d.delta.content;
      for (const tc of d.delta.tool_calls ?? []) {
        if (tc.id !== undefined) {
          expect(tc).toEqual({ index: calls.length, id: expect.stringMatching(/^call_/) as unknown, type: 'function', function: { name: expect.any(String) as unknown, arguments: '' } });
          calls.push({ name: tc.function.name, arguments: '' });
        } else {
          expect(Object.keys(tc).sort()).toEqual(['function', 'index']);
          calls[tc.index].arguments += tc.function.arguments;
        }
      }
    }
    expect(content).toBe('Let me look.');
    expect(content).not.toContain('<');
    expect(calls).toEqual(expectedCalls);
    const last = deltas.at(-1)!;
    expect(last.finish_reason).toBe('tool_calls');
    expect(deltas.slice(0, -1).every((d) => d.finish_reason === null)).toBe(true);
  });
});

describe('history and the prompt', () => {
  const history = [
    { role: 'system', content: 'Be brief.' },
    ...msgs,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
    { role: 'assistant', tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_2', content: '12:00' },
  ];

  it('accepts assistant tool_calls and tool messages; the template gets them and a fallback conversation', async () => {
    const { post, engine } = env();
    expect((await post('/v1/chat/completions', { model: MODEL, messages: history, tools: TOOLS })).status).toBe(200);
    const p = engine.submitted[0]!.prompt as Any;
    expect(p.messages[2]).toEqual({ role: 'assistant', content: '', tool_calls: (history[2] as Any).tool_calls });
    expect(p.messages[3]).toEqual({ role: 'tool', content: '{"temp": 21}', tool_call_id: 'call_1' });
    expect(p.tools).toEqual(TOOLS);
    expect(p.toolFallback).toEqual([
      { role: 'system', content: `Be brief.\n\n${hermesParser.systemPrompt(TOOLS as never)}` },
      msgs[0],
      { role: 'assistant', content: hermesParser.formatCall('get_weather', '{"city":"Paris"}') },
      { role: 'user', content: '<tool_response>\n{"temp": 21}\n</tool_response>' },
      { role: 'assistant', content: hermesParser.formatCall('get_time', '{}') },
      { role: 'user', content: '<tool_response>\n12:00\n</tool_response>' },
    ]);
    expect(p.toolFallback[0].content).toContain(JSON.stringify(weather));
  });

  it("the legacy function calling history (an assistant function_call, a 'function' role) is a 400 naming it, not dropped", async () => {
    const { post } = env();
    const legacyCall = { role: 'assistant', content: null, function_call: { name: 'get_time', arguments: '{}' } };
    const e1 = await expectError(await post('/v1/chat/completions', { model: MODEL, messages: [...msgs, legacyCall] }), 400);
    expect(e1.param).toBe('messages[1].function_call');
    expect(e1.message).toMatch(/function_call .*not supported.*tool_calls/);
    const e2 = await expectError(await post('/v1/chat/completions', { model: MODEL, messages: [...msgs, { role: 'function', name: 'get_time', content: '12:00' }] }), 400);
    expect(e2.param).toBe('messages[1].role');
    expect(e2.message).toMatch(/role 'function'.*role 'tool'/);
    // Its no-op value passes (some clients send the key as null).
    expect((await post('/v1/chat/completions', { model: MODEL, messages: [...msgs, { role: 'assistant', content: 'ok', function_call: null }, msgs[0]] })).status).toBe(200);
  });

  it('a user message without content is still a 400', async () => {
    const { post } = env();
    expect((await expectError(await post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user' }] }), 400)).param).toMatch(/^messages/);
  });

  it('/tokenize with tools renders the same prompt as the chat request', async () => {
    const { post } = env();
    const chat = (await (await post('/v1/chat/completions', { model: MODEL, messages: history, tools: TOOLS, return_token_ids: true, max_tokens: 1 })).json()) as Any;
    const tok = (await (await post('/tokenize', { model: MODEL, messages: history, tools: TOOLS })).json()) as Any;
    expect(tok.tokens).toEqual(chat.prompt_token_ids);
    const without = (await (await post('/tokenize', { model: MODEL, messages: msgs })).json()) as Any;
    expect(tok.count).toBeGreaterThan(without.count + 100); // the tools block is in
  });

  it('chat_template and chat_template_kwargs reach the engine', async () => {
    const { post, engine } = env();
    const res = await post('/v1/chat/completions', { model: MODEL, messages: msgs, chat_template: '{{ messages[0].content }}', chat_template_kwargs: { enable_thinking: false } });
    expect(res.status).toBe(200);
    expect(engine.submitted[0]!.prompt).toMatchObject({ chatTemplate: '{{ messages[0].content }}', chatTemplateKwargs: { enable_thinking: false } });
  });
});
