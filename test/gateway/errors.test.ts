import { describe, expect, it } from 'vitest';
import { EngineError } from '../../src/protocol/engine-client.js';
import { MODEL, expectError, setup, sse } from './helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON/YAML, read path by path in assertions
type Any = Record<string, any>;
const chat = (extra: Any = {}) => ({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, ...extra });

describe('400 invalid requests', () => {
  it('rejects malformed bodies with codes', async () => {
    const { post } = setup();
    expect((await expectError(await post('/v1/chat/completions', '{"model": '), 400)).code).toBe('invalid_json');
    expect((await expectError(await post('/v1/chat/completions', new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])), 400)).code).toBe('invalid_encoding');
    expect((await expectError(await post('/v1/chat/completions', '['.repeat(100000) + ']'.repeat(100000)), 400)).code).toBe('invalid_json');
    expect((await expectError(await post('/v1/chat/completions', '[1,2]'), 400)).code).toBe('invalid_json');
    expect((await expectError(await post('/v1/chat/completions', ''), 400)).code).toBe('invalid_json');
  });

  it('names the offending param', async () => {
    const { post } = setup();
    const cases: [Any, string][] = [
      [chat({ messages: 'hi' }), 'messages'],
      [chat({ messages: [] }), 'messages'],
      [chat({ messages: [{ role: 'wizard', content: 'x' }] }), 'messages[0].role'],
      [chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: 'x' }] }] }), 'messages[0].content'],
      [chat({ max_tokens: 1e30 }), 'max_tokens'],
      [chat({ max_tokens: -1 }), 'max_tokens'],
      [chat({ max_tokens: 2.5 }), 'max_tokens'],
      [chat({ max_tokens: 4096 }), 'max_tokens'], // > max_model_len
      [chat({ temperature: 'NaN' }), 'temperature'],
      [chat({ temperature: 3 }), 'temperature'],
      [chat({ top_p: 0 }), 'top_p'],
      [chat({ n: 17 }), 'n'],
      [chat({ n: 0 }), 'n'],
      [chat({ stop: [1, 2] }), 'stop'],
      [chat({ logit_bias: { abc: 1 } }), 'logit_bias'],
      [chat({ logit_bias: { '5': 101 } }), 'logit_bias'],
      [chat({ logit_bias: { '999999999': 1 } }), 'logit_bias'],
      [chat({ seed: 1e300 }), 'seed'],
      [chat({ stream: 'yes' }), 'stream'],
      [{ model: MODEL, prompt: { text: 'x' } }, 'prompt'],
    ];
    for (const [body, param] of cases) {
      const path = 'prompt' in body ? '/v1/completions' : '/v1/chat/completions';
      const e = await expectError(await post(path, body), 400);
      expect(e.param, JSON.stringify(body)).toBe(param);
      expect(e.type).toBe('invalid_request_error');
    }
  });

  it('logit_bias keys must be token ids in [0, vocab): every other key is a 400 naming it', async () => {
    const { post, engine } = setup();
    // Raw JSON: in a JS object literal `__proto__` would set the prototype instead of a key.
    for (const key of ['__proto__', 'constructor', 'abc', '-1', '1.5', ' 7', '99999999999', '999999']) {
      const body = `{"model": "${MODEL}", "messages": [{"role": "user", "content": "hi"}], "logit_bias": {"5": 1, ${JSON.stringify(key)}: 2}}`;
      const e = await expectError(await post('/v1/chat/completions', body), 400);
      expect(e.param, key).toBe('logit_bias');
      expect(e.message, key).toContain(`'${key.slice(0, 32)}'`);
    }
    expect(engine.submitted).toHaveLength(0);
  });

  it('a prompt past max_model_len is the engine INVALID_REQUEST → 400', async () => {
    const { post } = setup({}, { model: { maxModelLen: 64 } });
    const e = await expectError(await post('/v1/completions', { model: MODEL, prompt: 'x'.repeat(100) }), 400);
    expect(e.message).toMatch(/maximum context length is 64/);
    expect(e.param).toBe('prompt');
  });
});

describe('other statuses', () => {
  it('404 for unknown routes and models, 405 for wrong methods, 415 for non-JSON', async () => {
    const { post, get, handle } = setup();
    expect((await expectError(await get('/v1/nothing'), 404)).code).toBe('not_found');
    expect((await expectError(await post('/v1/chat/completions', chat({ model: 'gpt-4o' })), 404)).code).toBe('model_not_found');
    const r = await get('/v1/chat/completions');
    expect(r.headers.get('allow')).toBe('POST');
    await expectError(r, 405);
    await expectError(await handle.app.request('/health', { method: 'POST' }), 405);
    await expectError(await post('/v1/chat/completions', JSON.stringify(chat()), { 'content-type': 'text/plain' }), 415);
  });

  it('413 on a 10 MB streamed body without reading all of it', async () => {
    const { post } = setup();
    let pulled = 0;
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    const body = new ReadableStream<Uint8Array>({
      pull(ctl) {
        if (pulled >= 10 * 1024 * 1024) return ctl.close();
        pulled += chunk.length;
        ctl.enqueue(chunk);
      },
    });
    const res = await post('/v1/chat/completions', undefined, {}, { body, duplex: 'half' } as RequestInit);
    expect((await expectError(res, 413)).code).toBe('request_too_large');
    expect(pulled).toBeLessThan(4 * 1024 * 1024 + 4 * chunk.length);
    // and the configured limit applies
    const small = setup({ maxBodyBytes: 100 });
    await expectError(await small.post('/v1/chat/completions', chat({ pad: 'x'.repeat(200) })), 413);
  });

  it('429 with Retry-After when the engine queue is full', async () => {
    const { post, engine } = setup({}, { maxRunning: 1, maxQueued: 0 });
    const release = engine.holdSteps();
    const first = post('/v1/chat/completions', chat());
    await engine.whenActive(1);
    const res = await post('/v1/chat/completions', chat());
    expect(res.headers.get('retry-after')).toBe('1');
    expect((await expectError(res, 429)).type).toBe('rate_limit_error');
    release();
    expect((await first).status).toBe(200);
  });

  it('503 while the engine is not ready or dead', async () => {
    const { post, engine } = setup();
    engine.setReady(false);
    const r = await post('/v1/chat/completions', chat());
    expect(r.headers.get('retry-after')).not.toBeNull();
    await expectError(r, 503);
    engine.setReady(true);
    engine.kill();
    expect((await expectError(await post('/v1/completions', { prompt: 'x' }), 503)).code).toBe('engine_unavailable');
  });

  it('500 only for a real bug, logged, with a generic message', async () => {
    const errors: unknown[] = [];
    const { post, engine } = setup({ logger: { info() {}, warn() {}, error: (o) => errors.push(o) } });
    engine.failNext(new TypeError('x is undefined') as unknown as EngineError);
    const e = await expectError(await post('/v1/chat/completions', chat()), 500);
    expect(e.message).toBe('internal server error');
    expect(errors.length).toBeGreaterThan(0);
  });

  it('engine-side abort and choice errors never leak as finish reasons', async () => {
    const { post, engine } = setup();
    engine.failAfter(2, 'ENGINE_DEAD');
    await expectError(await post('/v1/chat/completions', chat()), 503);
  });
});

describe('errors mid-stream', () => {
  it('become an SSE error event followed by [DONE]', async () => {
    const { post, engine } = setup();
    engine.failAfter(2, 'INTERNAL');
    const { events, done } = await sse(await post('/v1/chat/completions', chat({ stream: true, max_tokens: 10 })));
    expect(done).toBe(true);
    const last = events.at(-1) as Any;
    expect(Object.keys(last)).toEqual(['error']);
    expect(last.error).toMatchObject({ type: 'server_error', code: 'internal_error' });
    // content before the failure still arrived, and no chunk carried an invalid finish_reason
    const reasons = (events.slice(0, -1) as Any[]).map((c) => c.choices[0].finish_reason);
    expect(reasons.every((r) => r === null)).toBe(true);
  });

  it('engine death mid-stream → ENGINE_DEAD error event', async () => {
    const { post, engine } = setup();
    const release = engine.holdSteps();
    const res = await post('/v1/completions', { prompt: 'x', stream: true, max_tokens: 10 });
    engine.kill();
    release();
    const { events, done } = await sse(res);
    expect(done).toBe(true);
    expect((events.at(-1) as Any).error.code).toBe('engine_unavailable');
  });
});
