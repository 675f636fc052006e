// POST /v1/responses over the fake engine, at the HTTP level: the Response object's shape, the exact
// event sequence of a stream, incomplete on max_output_tokens, message items and roles, logprobs, the
// store (previous_response_id, GET, DELETE) and the 400s for what this server cannot honour.
// Real clients (openai-node, the AI SDK, a browser) are in responses-clients.test.ts and ui/.
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../src/protocol/engine-client.js';
import { MODEL, expectError, setup } from './helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

/** Parses the Responses event stream strictly: `event:` equals the data's type; no [DONE]. */
async function events(res: Response): Promise<Any[]> {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const raw = await res.text();
  const frames = raw.split('\n\n');
  expect(frames.pop()).toBe('');
  return frames.map((f) => {
    const [eventLine, dataLine, ...rest] = f.split('\n');
    expect(rest).toEqual([]);
    expect(eventLine!.startsWith('event: ')).toBe(true);
    expect(dataLine!.startsWith('data: ')).toBe(true);
    const data = JSON.parse(dataLine!.slice('data: '.length));
    expect(data.type).toBe(eventLine!.slice('event: '.length));
    return data;
  });
}

const RESPONSE_KEYS = [
  'background', 'completed_at', 'created_at', 'error', 'id', 'incomplete_details', 'instructions', 'max_output_tokens', 'max_tool_calls',
  'metadata', 'model', 'object', 'output', 'parallel_tool_calls', 'previous_response_id', 'prompt_cache_key', 'reasoning',
  'safety_identifier', 'service_tier', 'status', 'store', 'temperature', 'text', 'tool_choice', 'tools', 'top_logprobs', 'top_p',
  'truncation', 'usage', 'user',
];

describe('POST /v1/responses (JSON)', () => {
  it('answers a string input with a completed Response: one assistant message, usage that adds up', async () => {
    const { post, engine } = setup();
    const res = await post('/v1/responses', { model: MODEL, input: 'Tell me a story.', instructions: 'Be brief.', max_output_tokens: 200, temperature: 0.5, metadata: { k: 'v' } });
    expect(res.status).toBe(200);
    const r: Any = await res.json();
    expect(Object.keys(r).sort()).toEqual(RESPONSE_KEYS);
    expect(r).toMatchObject({ object: 'response', status: 'completed', model: MODEL, instructions: 'Be brief.', max_output_tokens: 200, temperature: 0.5, store: true, error: null, incomplete_details: null, metadata: { k: 'v' }, tools: [] });
    expect(r.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(r.output).toHaveLength(1);
    const msg = r.output[0];
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    expect(msg.id).toMatch(/^msg_/);
    expect(msg.content).toEqual([{ type: 'output_text', annotations: [], logprobs: [], text: expect.any(String) }]);
    expect(msg.content[0].text.length).toBeGreaterThan(0);
    const u = r.usage;
    expect(Object.keys(u).sort()).toEqual(['input_tokens', 'input_tokens_details', 'output_tokens', 'output_tokens_details', 'total_tokens']);
    expect(u.total_tokens).toBe(u.input_tokens + u.output_tokens);
    expect(u.output_tokens_details).toEqual({ reasoning_tokens: 0 });
    expect(typeof u.input_tokens_details.cached_tokens).toBe('number');
    // The engine saw instructions as the system turn, then the input as the user's.
    const p = engine.submitted[0]!.prompt;
    expect(p.kind === 'chat' && p.messages).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me a story.' }]);
    expect(engine.submitted[0]!.sampling).toMatchObject({ maxTokens: 200, temperature: 0.5 });
  });

  it('max_output_tokens reached: status incomplete, reason max_output_tokens, output_tokens equal to it', async () => {
    const { post } = setup();
    const r: Any = await (await post('/v1/responses', { model: MODEL, input: 'x', max_output_tokens: 3 })).json();
    expect(r.status).toBe('incomplete');
    expect(r.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(r.output[0].status).toBe('incomplete');
    expect(r.usage.output_tokens).toBe(3);
  });

  it('message items: every role and content part kind; developer reaches the engine as system', async () => {
    const { post, engine } = setup();
    const input = [
      { role: 'developer', content: 'Answer in French.' },
      { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Sys ' }, { type: 'input_text', text: 'two' }] },
      { role: 'user', content: [{ type: 'input_text', text: 'Hi' }] },
      { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Bonjour', annotations: [] }] },
      { role: 'user', content: 'And then?' },
    ];
    expect((await post('/v1/responses', { model: MODEL, input, max_output_tokens: 2 })).status).toBe(200);
    const p = engine.submitted[0]!.prompt;
    expect(p.kind === 'chat' && p.messages).toEqual([
      { role: 'system', content: 'Answer in French.' },
      { role: 'system', content: 'Sys two' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Bonjour' },
      { role: 'user', content: 'And then?' },
    ]);
  });

  it('logprobs through include, with top_logprobs alternatives', async () => {
    const { post, engine } = setup();
    const r: Any = await (await post('/v1/responses', { model: MODEL, input: 'x', max_output_tokens: 4, include: ['message.output_text.logprobs'], top_logprobs: 2 })).json();
    expect(engine.submitted[0]!.sampling.logprobs).toBe(2);
    const lps = r.output[0].content[0].logprobs;
    expect(lps).toHaveLength(4);
    expect(Object.keys(lps[0]).sort()).toEqual(['bytes', 'logprob', 'token', 'top_logprobs']);
    expect(lps[0].top_logprobs).toHaveLength(2);
    expect(r.top_logprobs).toBe(2);
  });

  it('the vLLM sampling extensions reach the engine', async () => {
    const { post, engine } = setup();
    await post('/v1/responses', { model: MODEL, input: 'x', max_output_tokens: 8, top_k: 5, min_p: 0.1, seed: 3, stop: ['zz'], min_tokens: 2, repetition_penalty: 1.1 });
    expect(engine.submitted[0]!.sampling).toMatchObject({ topK: 5, minP: 0.1, seed: 3, stop: ['zz'], minTokens: 2, repetitionPenalty: 1.1 });
  });
});

describe('POST /v1/responses (stream)', () => {
  it('sends the exact OpenAI event sequence with consecutive sequence numbers; the deltas make the final text', async () => {
    const { post } = setup();
    const evs = await events(await post('/v1/responses', { model: MODEL, input: 'x', max_output_tokens: 200, stream: true }));
    const types = evs.map((e) => e.type);
    const deltas = types.filter((t) => t === 'response.output_text.delta').length;
    expect(deltas).toBeGreaterThan(1);
    expect(types).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      ...Array<string>(deltas).fill('response.output_text.delta'),
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(evs.map((e) => e.sequence_number)).toEqual(evs.map((_, i) => i));
    const [created, inProgress, added, partAdded] = evs;
    expect(created.response).toMatchObject({ status: 'in_progress', output: [], usage: null });
    expect(inProgress.response.id).toBe(created.response.id);
    expect(added).toMatchObject({ output_index: 0, item: { type: 'message', status: 'in_progress', content: [], role: 'assistant' } });
    const itemId = added.item.id;
    expect(partAdded).toMatchObject({ item_id: itemId, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    const text = evs.filter((e) => e.type === 'response.output_text.delta').map((e) => {
      expect(e).toMatchObject({ item_id: itemId, output_index: 0, content_index: 0, logprobs: [] });
      return e.delta;
    }).join('');
    const done = evs.at(-1);
    expect(evs.at(-4)).toMatchObject({ type: 'response.output_text.done', item_id: itemId, text });
    expect(evs.at(-3).part).toEqual({ type: 'output_text', annotations: [], logprobs: [], text });
    expect(evs.at(-2).item).toEqual({ id: itemId, type: 'message', status: 'completed', content: [{ type: 'output_text', annotations: [], logprobs: [], text }], role: 'assistant' });
    expect(Object.keys(done.response).sort()).toEqual(RESPONSE_KEYS);
    expect(done.response).toMatchObject({ id: created.response.id, status: 'completed', output: [evs.at(-2).item] });
    expect(done.response.usage.total_tokens).toBe(done.response.usage.input_tokens + done.response.usage.output_tokens);
  });

  it('ends with response.incomplete when max_output_tokens is reached', async () => {
    const { post } = setup();
    const evs = await events(await post('/v1/responses', { model: MODEL, input: 'x', max_output_tokens: 2, stream: true }));
    expect(evs.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } });
    expect(evs.at(-2).item.status).toBe('incomplete');
  });

  it('a failure mid-stream is an error event, then response.failed', async () => {
    const { post, engine } = setup();
    engine.failAfter(2, 'ENGINE_DEAD');
    const evs = await events(await post('/v1/responses', { model: MODEL, input: 'x', max_output_tokens: 50, stream: true }));
    const [error, failed] = evs.slice(-2);
    expect(error).toMatchObject({ type: 'error', code: 'engine_unavailable', param: null });
    expect(typeof error.message).toBe('string');
    expect(failed).toMatchObject({ type: 'response.failed', response: { status: 'failed', error: { code: 'engine_unavailable' } } });
    expect(engine.active).toBe(0);
  });

  it('an engine refusal before the stream starts is a plain HTTP error', async () => {
    const { post, engine } = setup();
    engine.failNext(new EngineError('QUEUE_FULL', 'busy'));
    await expectError(await post('/v1/responses', { model: MODEL, input: 'x', stream: true }), 429);
  });
});

describe('the response store', () => {
  it('previous_response_id continues the conversation: earlier input and output come first, old instructions do not', async () => {
    const { post, engine } = setup();
    const first: Any = await (await post('/v1/responses', { model: MODEL, input: 'First question', instructions: 'Old rules.', max_output_tokens: 5 })).json();
    const answer = first.output[0].content[0].text;
    const second: Any = await (await post('/v1/responses', { model: MODEL, input: 'Second question', instructions: 'New rules.', previous_response_id: first.id, max_output_tokens: 5 })).json();
    expect(second.previous_response_id).toBe(first.id);
    const p = engine.submitted[1]!.prompt;
    expect(p.kind === 'chat' && p.messages).toEqual([
      { role: 'system', content: 'New rules.' },
      { role: 'user', content: 'First question' },
      { role: 'assistant', content: answer },
      { role: 'user', content: 'Second question' },
    ]);
    // A third turn carries both earlier turns; a streamed response is stored too.
    const evs = await events(await post('/v1/responses', { model: MODEL, input: 'Third', previous_response_id: second.id, max_output_tokens: 5, stream: true }));
    const third = evs.at(-1).response;
    const p3 = engine.submitted[2]!.prompt;
    expect(p3.kind === 'chat' && p3.messages.map((m) => m.content)).toEqual(['First question', answer, 'Second question', second.output[0].content[0].text, 'Third']);
    const fourth: Any = await (await post('/v1/responses', { model: MODEL, input: 'Fourth', previous_response_id: third.id, max_output_tokens: 1 })).json();
    expect(fourth.status).toBe('incomplete');
  });

  it('GET returns the stored response as it was returned; DELETE removes it; unknown ids are 404s', async () => {
    const { post, get, handle } = setup();
    const r: Any = await (await post('/v1/responses', { model: MODEL, input: 'x', max_output_tokens: 3 })).json();
    const got = await get(`/v1/responses/${r.id}`);
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual(r);
    const del = await handle.app.request(`/v1/responses/${r.id}`, { method: 'DELETE' });
    expect(await del.json()).toEqual({ id: r.id, object: 'response', deleted: true });
    await expectError(await get(`/v1/responses/${r.id}`), 404);
    await expectError(await handle.app.request(`/v1/responses/${r.id}`, { method: 'DELETE' }), 404);
    const prev = await expectError(await post('/v1/responses', { model: MODEL, input: 'x', previous_response_id: r.id }), 404);
    expect(prev.param).toBe('previous_response_id');
    await expectError(await handle.app.request(`/v1/responses/${r.id}`, { method: 'PUT' }), 405);
  });

  it('store: false keeps nothing (and says so); without a store the default is store: false and store: true a 400', async () => {
    const withStore = setup();
    const r: Any = await (await withStore.post('/v1/responses', { model: MODEL, input: 'x', max_output_tokens: 2, store: false })).json();
    expect(r.store).toBe(false);
    await expectError(await withStore.get(`/v1/responses/${r.id}`), 404);
    const none = setup({}, { responseStore: false });
    const d: Any = await (await none.post('/v1/responses', { model: MODEL, input: 'x', max_output_tokens: 2 })).json();
    expect(d.store).toBe(false);
    expect((await expectError(await none.post('/v1/responses', { model: MODEL, input: 'x', store: true }), 400)).param).toBe('store');
    expect((await expectError(await none.post('/v1/responses', { model: MODEL, input: 'x', previous_response_id: 'resp_x' }), 400)).param).toBe('previous_response_id');
  });
});

describe('what this server cannot honour is a 400 naming the field', () => {
  it.each([
    ['tools', { tools: [{ type: 'function', name: 'f', parameters: {} }] }, 'tools'],
    ['reasoning', { reasoning: { effort: 'low' } }, 'reasoning'],
    ['other text formats', { text: { format: { type: 'grammar', grammar: 'root ::= "a"' } } }, 'text.format.type'],
    ['verbosity', { text: { verbosity: 'low' } }, 'text.verbosity'],
    ['background', { background: true }, 'background'],
    ['truncation auto', { truncation: 'auto' }, 'truncation'],
    ['prompt templates', { prompt: { id: 'pmpt_1' } }, 'prompt'],
    ['conversations', { conversation: 'conv_1' }, 'conversation'],
    ['other include values', { include: ['reasoning.encrypted_content'] }, 'include[0]'],
    ['top_logprobs without the include', { top_logprobs: 3 }, 'top_logprobs'],
    ['images', { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:' }] }] }, 'input[0].content[0].type'],
    ['function call items', { input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }] }, 'input[0].type'],
    ['obfuscation', { stream: true, stream_options: { include_obfuscation: true } }, 'stream_options.include_obfuscation'],
    ['max_output_tokens past the context', { max_output_tokens: 100_000 }, 'max_output_tokens'],
    ['min_tokens past max_output_tokens', { max_output_tokens: 2, min_tokens: 3 }, 'min_tokens'],
    ['an empty input list', { input: [] }, 'input'],
    ['another model', { model: 'gpt-4o' }, 'model'],
  ])('%s', async (_, extra, param) => {
    const { post, engine } = setup();
    const status = param === 'model' ? 404 : 400;
    const err = await expectError(await post('/v1/responses', { model: MODEL, input: 'x', ...extra }), status);
    expect(err.param).toBe(param);
    expect(engine.submitted).toEqual([]);
  });
});

describe('malformed Responses requests', () => {
  it('600 seeded malformed bodies all get a 4xx in the OpenAI error shape and reach no engine', async () => {
    let seed = 0x25;
    const rnd = () => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed / 2 ** 32;
    };
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const bad: Record<string, unknown[]> = {
      input: [null, 5, {}, [], [{}], [{ role: 'wizard', content: 'x' }], [{ role: 'user' }], [{ role: 'user', content: [{ type: 'input_text' }] }], [{ role: 'user', content: 5 }], [[['x']]]],
      instructions: [5, {}, ['x']],
      max_output_tokens: [0, -1, 1.5, 'x', 2 ** 40, 1e9],
      temperature: [-1, 3, 'hot', {}],
      top_p: [0, 2, 'x'],
      stream: ['yes', 1],
      store: ['no', 0],
      previous_response_id: [5, {}, 'x'.repeat(300)],
      metadata: [5, 'x', Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v'])), { k: 5 }],
      include: ['x', ['file_search_call.results'], [5]],
      top_logprobs: [-1, 50, 'x'],
      tools: [[{ type: 'web_search' }], 'x'],
      tool_choice: ['required', { type: 'function', name: 'f' }],
      text: [{ format: { type: 'json_xml' } }, 'x', { verbosity: 'high' }, { format: { type: 'json_schema', name: 'x' } }, { format: { type: 'json_schema', name: 'x', schema: { not: {} } } }],
      reasoning: [{ effort: 'low' }, 'x'],
      truncation: ['auto', 5],
      background: [true, 'x'],
      service_tier: ['flex', 5],
      model: [5, 'no-such-model'],
      stop: [5, [1]],
      seed: ['x', 1.5],
    };
    const { post, engine } = setup();
    const statuses = new Map<number, number>();
    for (let i = 0; i < 600; i++) {
      const body: Record<string, unknown> = { model: MODEL, input: 'hi', max_output_tokens: 2 };
      for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
        const field = pick(Object.keys(bad));
        body[field] = pick(bad[field]!);
      }
      const res = await post('/v1/responses', body);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status < 400 || res.status > 499) expect.fail(`${res.status} for ${JSON.stringify(body).slice(0, 300)}`);
      await expectError(res, res.status);
    }
    expect(statuses.get(400)).toBeGreaterThan(400);
    expect(engine.submitted).toEqual([]);
  });
});
