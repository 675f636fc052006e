import { describe, expect, it } from 'vitest';
import { MODEL, expectError, setup } from './helpers.js';

const chat = { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 };

describe('auth', () => {
  it('401 without or with a wrong key; probes stay open', async () => {
    const { post, get } = setup({ apiKey: 'sk-secret' });
    const missing = await post('/v1/chat/completions', chat);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect((await expectError(missing, 401)).code).toBe('invalid_api_key');
    await expectError(await post('/v1/chat/completions', chat, { authorization: 'Bearer sk-secreT' }), 401);
    await expectError(await post('/v1/chat/completions', chat, { authorization: 'Bearer sk-secret-and-more' }), 401);
    await expectError(await post('/v1/chat/completions', chat, { authorization: 'Basic sk-secret' }), 401);
    await expectError(await get('/v1/models'), 401);
    await expectError(await post('/tokenize', { prompt: 'x' }), 401);
    expect((await post('/v1/chat/completions', chat, { authorization: 'Bearer sk-secret' })).status).toBe(200);
    for (const p of ['/health', '/ready', '/metrics']) expect((await get(p)).status).toBe(200);
  });
});

describe('CORS', () => {
  it('answers preflights for allowed origins only, before auth', async () => {
    const { handle, post } = setup({ allowedOrigins: ['https://app.example'], apiKey: 'k' });
    const pre = await handle.app.request('/v1/chat/completions', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(pre.status).toBeLessThan(300);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
    const ok = await post('/v1/chat/completions', chat, { origin: 'https://app.example', authorization: 'Bearer k' });
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const evil = await post('/v1/chat/completions', chat, { origin: 'https://evil.example', authorization: 'Bearer k' });
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('sends no CORS headers when allowedOrigins is unset', async () => {
    const { post } = setup();
    const r = await post('/v1/chat/completions', chat, { origin: 'https://app.example' });
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('client disconnect aborts the engine request', () => {
  it('streaming: aborting the HTTP request aborts in the engine', async () => {
    const { post, engine } = setup();
    const release = engine.holdSteps();
    const ctl = new AbortController();
    const res = await post('/v1/chat/completions', { ...chat, stream: true }, {}, { signal: ctl.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read(); // the role chunk
    const id = engine.submitted[0]!.id;
    expect(engine.abortedIds()).toEqual([]);
    ctl.abort();
    expect(engine.aborts).toContainEqual({ id, via: 'signal' });
    release();
    await reader.cancel().catch(() => undefined);
    expect(engine.active).toBe(0);
  });

  it('streaming: cancelling the response body (socket closed) aborts in the engine', async () => {
    const { post, engine } = setup();
    const release = engine.holdSteps();
    const res = await post('/v1/completions', { prompt: 'x', stream: true, max_tokens: 50 });
    const reader = res.body!.getReader();
    const id = engine.submitted[0]!.id;
    const pending = reader.read(); // waits on the held engine
    await reader.cancel();
    await pending;
    expect(engine.abortedIds()).toEqual([id]);
    release();
    expect(engine.active).toBe(0);
  });

  it('non-streaming: a disconnect during generation aborts too', async () => {
    const { post, engine } = setup();
    const release = engine.holdSteps();
    const ctl = new AbortController();
    const res = post('/v1/completions', { prompt: ['a', 'b'], max_tokens: 50 }, {}, { signal: ctl.signal });
    await engine.whenActive(2);
    ctl.abort();
    release();
    await res.then((r) => r.text()).catch(() => undefined);
    expect(engine.abortedIds().sort()).toEqual(engine.submitted.map((r) => r.id).sort());
    expect(engine.active).toBe(0);
  });

  it('a finished request is not reported as aborted', async () => {
    const { post, engine } = setup();
    await (await post('/v1/chat/completions', { ...chat, stream: true, max_tokens: 3 })).text();
    await (await post('/v1/chat/completions', { ...chat, max_tokens: 3 })).text();
    expect(engine.aborts).toEqual([]);
    expect(engine.active).toBe(0);
  });
});
