import { describe, expect, it } from 'vitest';
import { EngineError, type EngineEvent, type SubmitRequest } from '../../src/protocol/engine-client.js';
import { FakeEngineClient } from './fake-engine-client.js';
import { FramedEngineClient } from '../../src/protocol/framed-client.js';
import { serveEngine } from '../../src/protocol/serve-engine.js';
import { webStreamTransport } from '../../src/protocol/web-stream-transport.js';

const sampling: SubmitRequest['sampling'] = {
  maxTokens: 20, temperature: 1, topP: 1, topK: -1, minP: 0, repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0,
  logitBias: {}, seed: 5, stop: [], stopTokenIds: [], ignoreEos: false, logprobs: null, skipSpecialTokens: true,
};
const req = (over: Partial<SubmitRequest['sampling']> = {}, n = 1, id = 'r'): SubmitRequest => ({ id, prompt: { kind: 'text', text: 'p' }, sampling: { ...sampling, ...over }, n, echo: false });

async function run(engine: FakeEngineClient, r: SubmitRequest) {
  const evs: EngineEvent[] = [];
  for await (const e of engine.stream(r)) evs.push(e);
  const texts: string[] = Array.from({ length: r.n }, () => '');
  const finish: (string | undefined)[] = [];
  for (const e of evs) if (e.type === 'delta') for (const c of e.choices) {
    texts[c.index] += c.text;
    if (c.finishReason) finish[c.index] = c.finishReason;
  }
  return { evs, texts, finish };
}

describe('FakeEngineClient', () => {
  it('is deterministic per seed, differs across choices, and respects max_tokens', async () => {
    const e = new FakeEngineClient();
    const a = await run(e, req({}, 2));
    const b = await run(e, req({}, 2));
    expect(a.texts).toEqual(b.texts);
    expect(a.texts[0]).not.toBe(a.texts[1]);
    expect(a.finish).toEqual(['length', 'length']);
    expect(a.evs.at(-1)).toMatchObject({ type: 'done', usage: { completionTokens: 40 } });
    const greedy = await run(e, req({ temperature: 0, seed: null }, 2));
    expect(greedy.texts[0]).toBe(greedy.texts[1]);
  });

  it('fixedStart: every choice starts at that corpus offset, so the reply is exactly the corpus, then EOS', async () => {
    const e = new FakeEngineClient({ corpus: '<b>x</b>', fixedStart: 0 });
    const r = await run(e, req({ maxTokens: null }, 2));
    expect(r.texts).toEqual(['<b>x</b>', '<b>x</b>']);
    expect(r.finish).toEqual(['stop', 'stop']);
  });

  it('withholds stop strings, including ones split across tokens', async () => {
    const e = new FakeEngineClient();
    const full = (await run(e, req({ ignoreEos: true, maxTokens: 60 }))).texts[0]!;
    const stop = full.slice(20, 24);
    const { texts, finish, evs } = await run(e, req({ ignoreEos: true, maxTokens: 60, stop: [stop] }));
    expect(texts[0]).toBe(full.slice(0, full.indexOf(stop)));
    expect(finish[0]).toBe('stop');
    const last = evs.filter((x) => x.type === 'delta').at(-1) as Extract<EngineEvent, { type: 'delta' }>;
    expect(last.choices[0]!.stopReason).toBe(stop);
  });

  it('ends with eos after one corpus lap unless ignore_eos', async () => {
    const e = new FakeEngineClient({ corpus: 'abc' });
    expect((await run(e, req({ maxTokens: null }))).texts[0]).toHaveLength(3);
    expect((await run(e, req({ maxTokens: 7, ignoreEos: true }))).texts[0]).toHaveLength(7);
  });

  it('reports logprobs with a sorted top list whose probabilities sum below 1', async () => {
    const { evs } = await run(new FakeEngineClient(), req({ logprobs: 4, maxTokens: 5 }));
    for (const e of evs) if (e.type === 'delta') for (const lp of e.choices[0]!.logprobs!) {
      expect(lp.top).toHaveLength(4);
      expect(lp.top[0]!.tokenId).toBe(lp.tokenId);
      const ps = lp.top.map((t) => Math.exp(t.logprob));
      expect(ps.reduce((s, p) => s + p, 0)).toBeLessThan(1);
      expect([...ps].sort((x, y) => y - x)).toEqual(ps);
    }
  });

  it('queue limit, readiness, failures and stats', async () => {
    const e = new FakeEngineClient({ maxRunning: 1, maxQueued: 1 });
    const release = e.holdSteps();
    const its = [e.stream(req({}, 1, 'a')), e.stream(req({}, 1, 'b'))].map((s) => s[Symbol.asyncIterator]());
    await Promise.all(its.map((it) => it.next()));
    await expect(run(e, req({}, 1, 'c'))).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    expect(await e.stats()).toMatchObject({ running: 1, waiting: 1 });
    release();
    for (const it of its) while (!(await it.next()).done);
    e.setReady(false);
    await expect(run(e, req())).rejects.toMatchObject({ code: 'NOT_READY' });
    e.setReady(true);
    e.failNext(new EngineError('INVALID_REQUEST', 'x'));
    await expect(run(e, req())).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    expect((await run(e, req())).finish).toEqual(['length']);
    expect((await e.stats()).generationTokens).toBe(60);
  });
});

describe('webStreamTransport (Workers connect() shape)', () => {
  it('carries the protocol over a pair of web stream duplexes', async () => {
    const up = new TransformStream<Uint8Array, Uint8Array>();
    const down = new TransformStream<Uint8Array, Uint8Array>();
    const close = async () => undefined;
    serveEngine(webStreamTransport({ readable: up.readable, writable: down.writable, close }), new FakeEngineClient(), { secret: 's' });
    const client = new FramedEngineClient({ secret: 's', connect: async () => webStreamTransport({ readable: down.readable, writable: up.writable, close }) });
    const evs: EngineEvent[] = [];
    for await (const ev of client.stream(req())) evs.push(ev);
    expect(evs.at(-1)).toMatchObject({ type: 'done', usage: { completionTokens: 20 } });
  });
});
