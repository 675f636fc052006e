// vLLM's extension fields (#25 item 6), each honoured or refused: chat `echo` and
// `continue_final_message`, `return_token_ids`, /tokenize's `return_token_strs`,
// `stream_options.continuous_usage_stats` (usage on every chunk, only with include_usage), and the
// fields this server does not implement (400 naming the field, rather than silently ignored).
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/gateway/app.js';
import { NOT_IMPLEMENTED_FIELDS } from '../../src/gateway/schemas.js';
import { makeHost } from '../sidecar/server/helpers.js';
import { expectError, MODEL, setup, sse } from './helpers.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const user = [{ role: 'user', content: 'Say hi' }];
const json = async (res: Response): Promise<Any> => {
  expect(res.status).toBe(200);
  return res.json();
};

/** The gateway over the sidecar's EngineHost with the real test tokenizer and chat template (fake native engine). */
async function hostApp() {
  const env = await makeHost();
  const { app } = createApp({ engine: env.host });
  // The fake native engine steps only when asked: step until the whole body has been read.
  const until = async <T>(p: Promise<T>): Promise<T> => {
    let settled = false;
    const watched = p.finally(() => (settled = true));
    while (!settled) {
      env.engine.step();
      await new Promise((r) => setImmediate(r));
    }
    return watched;
  };
  const send = (path: string, body: unknown) =>
    until(Promise.resolve(app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })));
  const post = async (path: string, body: unknown): Promise<Any> => until((await send(path, body)).json());
  const postText = async (path: string, body: unknown): Promise<string> => until((await send(path, body)).text());
  return { env, post, postText, send };
}

describe('chat echo and continue_final_message', () => {
  it('echo starts the reply with the last message when it has the reply role (JSON and stream)', async () => {
    const { post } = setup();
    const msgs = [...user, { role: 'assistant', content: 'Hi, ' }];
    const body = await json(await post('/v1/chat/completions', { model: MODEL, messages: msgs, echo: true, continue_final_message: true, max_tokens: 3 }));
    expect(body.choices[0].message.content.startsWith('Hi, ')).toBe(true);
    expect(body.choices[0].message.content.length).toBeGreaterThan('Hi, '.length);
    // The last message is the user's: the reply (assistant) echoes nothing.
    const plain = await json(await post('/v1/chat/completions', { model: MODEL, messages: user, echo: true, max_tokens: 3 }));
    expect(plain.choices[0].message.content.startsWith('Say hi')).toBe(false);
    const { events } = await sse(await post('/v1/chat/completions', { model: MODEL, messages: msgs, echo: true, continue_final_message: true, max_tokens: 2, stream: true }));
    expect((events[0] as Any).choices[0].delta).toEqual({ role: 'assistant', content: 'Hi, ' });
  });

  it('continue_final_message renders the final message open: the prompt ends with its content', async () => {
    const { env, post, send } = await hostApp();
    const msgs = [...user, { role: 'assistant', content: 'Sure: ' }];
    const cont = await post('/v1/chat/completions', { messages: msgs, continue_final_message: true, max_tokens: 2, return_token_ids: true });
    const decode = (ids: number[]) => env.bundle.tokenizer.decode(ids, { skipSpecialTokens: false });
    expect(decode(cont.prompt_token_ids).endsWith('Sure: ')).toBe(true);
    // Closed (the default): the template's end-of-turn and generation prompt follow the content.
    const closed = await post('/v1/chat/completions', { messages: msgs, max_tokens: 2, return_token_ids: true });
    const closedText = decode(closed.prompt_token_ids);
    expect(closedText.startsWith(decode(cont.prompt_token_ids))).toBe(true);
    expect(closedText.length).toBeGreaterThan(decode(cont.prompt_token_ids).length);
    const both = await send('/v1/chat/completions', { messages: msgs, continue_final_message: true, add_generation_prompt: true });
    expect((await expectError(both, 400)).param).toBe('continue_final_message');
  });
});

describe('return_token_ids and return_token_strs', () => {
  it('completions: prompt_token_ids and token_ids per choice, consistent with the text (JSON and stream)', async () => {
    const { env, post, postText } = await hostApp();
    const body = await post('/v1/completions', { prompt: 'Hello', max_tokens: 4, return_token_ids: true, n: 2 });
    for (const ch of body.choices) {
      expect(ch.prompt_token_ids).toEqual(env.bundle.encodePrompt('Hello'));
      expect(ch.token_ids).toHaveLength(4);
    }
    expect(body.usage.completion_tokens).toBe(8);
    const raw = await postText('/v1/completions', { prompt: 'Hello', max_tokens: 3, return_token_ids: true, stream: true });
    const chunks = raw.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as Any);
    expect(chunks[0].choices[0].prompt_token_ids).toEqual(env.bundle.encodePrompt('Hello'));
    expect(chunks.flatMap((c) => c.choices[0].token_ids)).toHaveLength(3);
  });

  it('completions with token-id prompts: prompt_token_ids are the prompt as sent, without the engine echoing (decoding) it', async () => {
    const { engine, post } = setup();
    const ids = [5, 17, 23, 42];
    const res = await post('/v1/completions', { model: MODEL, prompt: ids, max_tokens: 3, return_token_ids: true, stream: true });
    const { events } = await sse(res);
    const chunks = events as Any[];
    expect(chunks[0].choices[0].prompt_token_ids).toEqual(ids);
    expect(chunks.flatMap((c) => c.choices[0]?.token_ids ?? [])).toHaveLength(3);
    const whole = await (await post('/v1/completions', { model: MODEL, prompt: [ids, [7, 8]], max_tokens: 2, return_token_ids: true })).json() as Any;
    expect(whole.choices.map((c: Any) => c.prompt_token_ids)).toEqual([ids, [7, 8]]);
    expect(engine.submitted.map((r) => r.echo)).toEqual([false, false, false]);
  });

  it('/tokenize return_token_strs gives the tokenizer pieces, one per token', async () => {
    const { env, post } = await hostApp();
    const body = await post('/tokenize', { prompt: 'hi 你好', return_token_strs: true });
    expect(body.token_strs).toHaveLength(body.count);
    expect(body.token_strs).toEqual(body.tokens.map((id: number) => env.bundle.tokenizer.idToToken(id)));
    const plain = await post('/tokenize', { prompt: 'hi 你好' });
    expect(plain.token_strs).toBeUndefined();
  });
});

describe('stream_options', () => {
  const ask = (post: ReturnType<typeof setup>['post'], stream_options: unknown) =>
    post('/v1/chat/completions', { model: MODEL, messages: user, max_tokens: 3, stream: true, stream_options });

  it('continuous_usage_stats with include_usage: usage on every chunk, growing to the final one', async () => {
    const { post } = setup();
    const { events } = await sse(await ask(post, { include_usage: true, continuous_usage_stats: true }));
    const usages = (events as Any[]).map((e) => e.usage);
    for (const u of usages) expect(u.prompt_tokens).toBeGreaterThan(0);
    const completions = usages.map((u) => u.completion_tokens);
    expect(completions).toEqual([...completions].sort((a, b) => a - b));
    expect(completions.at(-1)).toBe(3);
  });

  it('include_usage false (or continuous_usage_stats alone) sends no usage at all', async () => {
    const { post } = setup();
    for (const opts of [{ include_usage: false }, { include_usage: false, continuous_usage_stats: true }, { continuous_usage_stats: true }]) {
      const { raw, events } = await sse(await ask(post, opts));
      expect(raw).not.toContain('"usage"');
      expect(events.length).toBeGreaterThan(1);
    }
  });
});

describe('fields accepted but not implemented are refused', () => {
  const values: Record<string, unknown> = { use_beam_search: true, include_stop_str_in_output: true, spaces_between_special_tokens: false, priority: 1, modalities: ['audio'] };
  it.each(NOT_IMPLEMENTED_FIELDS.map((f) => [f]))('%s: 400 naming it on chat and completions; its no-op value passes', async (field) => {
    const { post } = setup();
    const value = values[field] ?? { x: 1 };
    for (const [path, base] of [
      ['/v1/chat/completions', { messages: user }],
      ['/v1/completions', { prompt: 'x' }],
    ] as const) {
      const err = await expectError(await post(path, { model: MODEL, max_tokens: 1, ...base, [field]: value }), 400);
      expect(err.param).toBe(field);
      expect(err.message).toContain(field);
      expect((await post(path, { model: MODEL, max_tokens: 1, ...base, [field]: null })).status).toBe(200);
    }
  });
});

describe('message name', () => {
  it('reaches the engine with its message (the chat template receives it)', async () => {
    const { post, engine } = setup();
    const res = await post('/v1/chat/completions', { model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: 'hi', name: 'ana' }, { role: 'user', content: 'yo' }] });
    expect(res.status).toBe(200);
    const prompt = engine.submitted.at(-1)!.prompt;
    expect(prompt.kind === 'chat' && prompt.messages).toEqual([{ role: 'user', content: 'hi', name: 'ana' }, { role: 'user', content: 'yo' }]);
  });
});
