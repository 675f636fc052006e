// EngineHost over the fake native engine: prompts, stop handling, choices, logprobs, usage, errors,
// aborts and queue limits. Manual engine steps: no timers, no sleeps.
import { describe, expect, it } from 'vitest';
import { EngineError, type EngineEvent } from '../../../src/protocol/engine-client.js';
import { choice, deltas, done, makeHost, request, runToEnd } from './helpers.js';

async function expectCode(p: Promise<unknown>, code: string, param?: string | null) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EngineError);
  expect((err as EngineError).code).toBe(code);
  if (param !== undefined) expect((err as EngineError).param).toBe(param);
  return err as EngineError;
}
const first = (env: Awaited<ReturnType<typeof makeHost>>, req: ReturnType<typeof request>) =>
  env.host.stream(req)[Symbol.asyncIterator]().next();

describe('EngineHost prompts', () => {
  it('chat prompts go through the chat template with the generation prompt', async () => {
    const env = await makeHost();
    const messages = [{ role: 'user' as const, content: '你好' }];
    const events = await runToEnd(env, request({ prompt: { kind: 'chat', messages, addGenerationPrompt: true }, sampling: { maxTokens: 3 } }));
    const want = env.bundle.encodeChat(messages, { addGenerationPrompt: true });
    expect(Array.from(env.engine.submitted[0]!.prompt)).toEqual(want);
    expect(events[0]).toEqual({ type: 'accepted', promptTokens: want.length });
    expect(done(events).usage.promptTokens).toBe(want.length);
  });

  it('text prompts are encoded; token prompts are used exactly as given', async () => {
    const env = await makeHost();
    await runToEnd(env, request({ prompt: { kind: 'text', text: 'Hello, world!' } }));
    expect(Array.from(env.engine.submitted[0]!.prompt)).toEqual(env.bundle.encodePrompt('Hello, world!'));
    await runToEnd(env, request({ prompt: { kind: 'tokens', ids: [5, 100_000, 7] } }));
    expect(Array.from(env.engine.submitted[1]!.prompt)).toEqual([5, 100_000, 7]);
  });

  it('echo returns the prompt ids and text', async () => {
    const env = await makeHost();
    const events = await runToEnd(env, request({ prompt: { kind: 'text', text: '你好' }, echo: true }));
    expect(events[0]).toMatchObject({ type: 'accepted', promptText: '你好', promptTokenIds: env.bundle.encodePrompt('你好') });
  });

  it('maps sampling: eos ids as stop ids unless ignore_eos, top_k -1 → 0, logprobs → k', async () => {
    const env = await makeHost();
    await runToEnd(env, request({ sampling: { stopTokenIds: [99], topK: -1, logprobs: 3, seed: 7, logitBias: { 5: 2 } } }));
    await runToEnd(env, request({ sampling: { ignoreEos: true, stopTokenIds: [99] } }));
    const [a, b] = env.engine.submitted;
    expect(new Set(a!.stopTokenIds)).toEqual(new Set([2, 4, 99]));
    expect(Array.from(b!.stopTokenIds)).toEqual([99]);
    expect(a!.topK).toBe(0);
    expect(a!.logprobs).toBe(3);
    expect(b!.logprobs).toBe(-1);
    expect(a!.seed).toBe(7);
    expect(Array.from(a!.logitBiasIds)).toEqual([5]);
    expect(Array.from(a!.logitBiasValues)).toEqual([2]);
  });
});

describe('EngineHost validation', () => {
  it('rejects prompts past max_model_len, with the prompt/completion split', async () => {
    const env = await makeHost({ maxModelLen: 16 });
    const ids = Array.from({ length: 10 }, (_, i) => 100 + i);
    const e = await expectCode(first(env, request({ prompt: { kind: 'tokens', ids }, sampling: { maxTokens: 7 } })), 'INVALID_REQUEST', 'prompt');
    expect(e.message).toMatch(/maximum context length is 16 tokens.*17 tokens \(10 in the prompt, 7 in the completion\)/);
    await expectCode(first(env, request({ prompt: { kind: 'tokens', ids: Array(16).fill(5) }, sampling: { maxTokens: null } })), 'INVALID_REQUEST', 'prompt');
    // maxTokens null: whatever room is left.
    const events = await runToEnd(env, request({ prompt: { kind: 'tokens', ids }, sampling: { maxTokens: null, ignoreEos: true } }));
    expect(env.engine.submitted[0]!.maxTokens).toBe(6);
    expect(choice(events).last.finishReason).toBe('length');
  });

  it('rejects empty prompts, out-of-vocabulary ids, bad stop ids, impossible n, duplicate ids', async () => {
    const env = await makeHost({ maxNumSeqs: 4 });
    await expectCode(first(env, request({ prompt: { kind: 'text', text: '' } })), 'INVALID_REQUEST', 'prompt');
    await expectCode(first(env, request({ prompt: { kind: 'tokens', ids: [] } })), 'INVALID_REQUEST', 'prompt');
    await expectCode(first(env, request({ prompt: { kind: 'tokens', ids: [1, 103424] } })), 'INVALID_REQUEST', 'prompt');
    await expectCode(first(env, request({ prompt: { kind: 'tokens', ids: [-1] } })), 'INVALID_REQUEST', 'prompt');
    await expectCode(first(env, request({ sampling: { stopTokenIds: [1e9] } })), 'INVALID_REQUEST', 'stop_token_ids');
    const e = await expectCode(first(env, request({ n: 5 })), 'INVALID_REQUEST');
    expect(e.message).toMatch(/refused.*max_num_seqs 4/);
    const it1 = env.host.stream(request({ id: 'dup' }))[Symbol.asyncIterator]();
    await it1.next();
    await expectCode(first(env, request({ id: 'dup' })), 'INVALID_REQUEST', 'id');
    await it1.return!(undefined);
    expect(env.host.liveRequests).toBe(0);
  });

  it('QUEUE_FULL once max-num-queued-reqs requests wait in the engine', async () => {
    const env = await makeHost({ maxNumQueuedReqs: 2 });
    const a = env.host.stream(request())[Symbol.asyncIterator]();
    const b = env.host.stream(request())[Symbol.asyncIterator]();
    await a.next();
    await b.next();
    await expectCode(first(env, request()), 'QUEUE_FULL');
    env.engine.step(); // both admitted: the queue is empty again
    const c = env.host.stream(request())[Symbol.asyncIterator]();
    expect((await c.next()).value).toMatchObject({ type: 'accepted' });
    await Promise.all([a.return!(undefined), b.return!(undefined), c.return!(undefined)]);
  });
});

describe('EngineHost outputs', () => {
  it('ends on eos with stopReason null: the eos token counts but adds no text', async () => {
    const ids = (await makeHost()).bundle.encodePrompt('Hi!', { addSpecialTokens: false });
    const env = await makeHost({ script: () => ids });
    const events = await runToEnd(env, request({ sampling: { maxTokens: 50 } }));
    const c = choice(events);
    expect(c.text).toBe('Hi!');
    expect(c.tokenIds.at(-1)).toBe(2);
    expect(c.last).toMatchObject({ finishReason: 'stop', stopReason: null });
    expect(done(events).usage.completionTokens).toBe(c.tokenIds.length);
  });

  it('a request stop_token_id ends the choice with stopReason = the id; ignore_eos runs to length', async () => {
    const env = await makeHost({ corpusText: 'Hi!' });
    const target = env.bundle.encodePrompt('Hi!', { addSpecialTokens: false })[1]!;
    const c = choice(await runToEnd(env, request({ sampling: { stopTokenIds: [target] } })));
    expect(c.last).toMatchObject({ finishReason: 'stop', stopReason: target });
    const d = choice(await runToEnd(env, request({ sampling: { ignoreEos: true, maxTokens: 9 } })));
    expect(d.tokenIds).toHaveLength(9);
    expect(d.last).toMatchObject({ finishReason: 'length', stopReason: null });
  });

  it('stop strings spanning tokens never leak, drop later tokens and abort the engine request', async () => {
    const text = 'Hello, world! 你好，世界。';
    const ids = (await makeHost()).bundle.encodePrompt(text, { addSpecialTokens: false });
    const env = await makeHost({ script: () => ids, tokensPerStep: 3 });
    // A stop string made of the end of one token and the start of the next.
    const events = await runToEnd(env, request({ sampling: { stop: ['o, w', 'zzz'], maxTokens: 50 } }));
    const c = choice(events);
    expect(c.text).toBe('Hell');
    for (const piece of c.pieces) expect(piece).not.toMatch(/o,|, w/);
    expect(c.last).toMatchObject({ finishReason: 'stop', stopReason: 'o, w' });
    // Tokens up to the one that completed the stop string: "H" "e" "ll" "o" "," " w".
    expect(c.tokenIds).toEqual(ids.slice(0, 6));
    expect(done(events).usage.completionTokens).toBe(6);
    expect(env.engine.aborted).toEqual([env.engine.submitted[0]!.id]);
    expect(env.engine.stats()).toMatchObject({ running: 0, waiting: 0 });
  });

  it('streams Chinese split over byte-fallback tokens without U+FFFD', async () => {
    const text = '龘靐齉，你好，世界。';
    const ids = (await makeHost()).bundle.encodePrompt(text, { addSpecialTokens: false });
    const env = await makeHost({ script: () => ids });
    const c = choice(await runToEnd(env, request({ sampling: { maxTokens: 100 } })));
    expect(c.text).toBe(text);
    for (const piece of c.pieces) expect(piece).not.toContain('\uFFFD');
    expect(c.pieces.filter((p) => p === '').length).toBeGreaterThan(0); // bytes were held back
  });

  it('n = 2: two choices, usage sums them; greedy choices are identical', async () => {
    const env = await makeHost();
    const events = await runToEnd(env, request({ n: 2, sampling: { temperature: 1, maxTokens: 5, ignoreEos: true } }));
    const [c0, c1] = [choice(events, 0), choice(events, 1)];
    expect(c0.tokenIds).toHaveLength(5);
    expect(c1.tokenIds).toHaveLength(5);
    expect(c0.text).not.toBe(c1.text);
    expect(done(events).usage.completionTokens).toBe(10);
    // One delta per step carrying both choices.
    expect(deltas(events).every((d) => d.choices.length === 2)).toBe(true);
    const g = await runToEnd(env, request({ n: 2, sampling: { temperature: 0, maxTokens: 5 } }));
    expect(choice(g, 0).text).toBe(choice(g, 1).text);
  });

  it('logprobs carry token text, bytes and k alternatives', async () => {
    const env = await makeHost({ corpusText: '你好' });
    const c = choice(await runToEnd(env, request({ sampling: { logprobs: 2, maxTokens: 2 } })));
    expect(c.logprobs).toHaveLength(2);
    const lp = c.logprobs[0]!;
    expect(lp.tokenId).toBe(c.tokenIds[0]);
    expect(lp.token).toBe('你');
    expect(lp.bytes).toEqual([...Buffer.from('你')]);
    expect(lp.logprob).toBeLessThan(0);
    expect(lp.top).toHaveLength(2);
    expect(lp.top[0]).toMatchObject({ tokenId: lp.tokenId, logprob: lp.logprob });
    expect(lp.top[1]!.logprob).toBeLessThan(lp.top[0]!.logprob);
  });

  it('reports usage and timings in done', async () => {
    const env = await makeHost();
    const events = await runToEnd(env, request({ sampling: { maxTokens: 4, ignoreEos: true } }));
    const d = done(events);
    expect(d.usage).toEqual({ promptTokens: env.engine.submitted[0]!.prompt.length, completionTokens: 4, cachedTokens: 0 });
    expect(d.timing.ttft).not.toBeNull();
    expect(d.timing.e2e).toBeGreaterThanOrEqual(d.timing.ttft!);
    expect(d.timing.queued).toBeGreaterThanOrEqual(0);
  });
});

describe('EngineHost lifetime', () => {
  it('an aborted signal ends the stream and frees the request in the next step', async () => {
    const env = await makeHost();
    const ctl = new AbortController();
    const it = env.host.stream(request({ sampling: { maxTokens: 100, ignoreEos: true } }), ctl.signal)[Symbol.asyncIterator]();
    await it.next();
    env.engine.step();
    env.engine.step();
    expect(env.engine.stats().kvBlocksFree).toBeLessThan(env.engine.stats().kvBlocksTotal);
    ctl.abort();
    const events: EngineEvent[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) events.push(r.value);
    expect(choice(events).last.finishReason).toBe('abort');
    expect(events.at(-1)!.type).toBe('done');
    expect(env.host.liveRequests).toBe(0);
    expect(env.engine.aborted).toEqual([env.engine.submitted[0]!.id]);
    env.engine.step();
    expect(env.engine.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksFree: 64 });
  });

  it('abort(id) and an early return both reach the engine', async () => {
    const env = await makeHost();
    const a = env.host.stream(request({ id: 'a' }))[Symbol.asyncIterator]();
    const b = env.host.stream(request({ id: 'b' }))[Symbol.asyncIterator]();
    await a.next();
    await b.next();
    env.engine.step();
    await env.host.abort('a');
    await env.host.abort('a'); // idempotent
    await b.return!(undefined);
    expect(env.engine.aborted).toEqual([1, 2]);
    expect(env.host.liveRequests).toBe(0);
  });

  it('a consumer that never reads does not hold back another request', async () => {
    const env = await makeHost();
    const slow = env.host.stream(request({ sampling: { maxTokens: 50, ignoreEos: true } }))[Symbol.asyncIterator]();
    await slow.next();
    const events = await runToEnd(env, request({ sampling: { maxTokens: 3, ignoreEos: true } }));
    expect(done(events).usage.completionTokens).toBe(3);
    await slow.return!(undefined);
  });

  it('close() ends open requests with an error and refuses new ones', async () => {
    const env = await makeHost();
    const it = env.host.stream(request({ sampling: { maxTokens: 50, ignoreEos: true } }))[Symbol.asyncIterator]();
    await it.next();
    env.engine.step();
    await env.host.close();
    const events: EngineEvent[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) events.push(r.value);
    expect(choice(events).last.finishReason).toBe('abort'); // the engine's Finish.Abort on shutdown
    expect(await env.host.health()).toMatchObject({ ready: false });
    await expectCode(first(env, request()), 'NOT_READY');
  });

  it('serves model, health, stats, tokenize and detokenize', async () => {
    const env = await makeHost();
    expect((await env.host.model()).id).toBe('test-model');
    expect(await env.host.health()).toEqual({ ready: true, loading: false, draining: false });
    expect(await env.host.stats()).toMatchObject({ running: 0, waiting: 0, kvBlocksTotal: 64, kvBlocksFree: 64 });
    const t = await env.host.tokenize({ prompt: '你好', addSpecialTokens: true, addGenerationPrompt: false });
    expect(t).toEqual({ tokens: env.bundle.encodePrompt('你好'), maxModelLen: 256 });
    const m = await env.host.tokenize({ messages: [{ role: 'user', content: 'hi' }], addSpecialTokens: false, addGenerationPrompt: true });
    expect(m.tokens).toEqual(env.bundle.encodeChat([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true }));
    expect(await env.host.detokenize(Array.from(t.tokens))).toEqual({ prompt: '你好' });
    await expectCode(env.host.detokenize([103424]), 'INVALID_REQUEST', 'tokens');
    await expectCode(env.host.tokenize({ addSpecialTokens: true, addGenerationPrompt: true }), 'INVALID_REQUEST');
  });
});
