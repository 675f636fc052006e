import { describe, expect, it } from 'vitest';
import { EngineError, type EngineEvent, type SubmitRequest } from '../../src/protocol/engine-client.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';
import { FramedEngineClient } from '../../src/protocol/framed-client.js';
import { FrameDecoder } from '../../src/protocol/framing.js';
import { decodeMessage, encodeMessage, PROTOCOL_VERSION } from '../../src/protocol/messages.js';
import { serveEngine, type ServedConnection } from '../../src/protocol/serve-engine.js';
import { createTransportPair, type ByteTransport } from '../../src/protocol/transport.js';

const sampling: SubmitRequest['sampling'] = {
  maxTokens: 6, temperature: 0, topP: 1, topK: -1, minP: 0, repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0,
  logitBias: {}, seed: null, stop: [], stopTokenIds: [], ignoreEos: true, logprobs: null, skipSpecialTokens: true,
};
const req = (id: string, maxTokens = 6): SubmitRequest => ({ id, prompt: { kind: 'text', text: 'hello' }, sampling: { ...sampling, maxTokens }, n: 1, echo: false });

/** A client whose connector serves `engine` over a fresh in-memory pair per connection. */
function harness(opts: { secret?: string; clientSecret?: string; failConnects?: number } = {}) {
  const engine = new FakeEngineClient();
  const served: { server: ServedConnection; transport: ByteTransport }[] = [];
  const delays: number[] = [];
  let connects = 0;
  let failures = opts.failConnects ?? 0;
  const client = new FramedEngineClient({
    secret: opts.clientSecret,
    connect: async () => {
      connects++;
      if (failures-- > 0) throw new Error('ECONNREFUSED');
      const [a, b] = createTransportPair();
      served.push({ server: serveEngine(b, engine, { secret: opts.secret }), transport: b });
      return a;
    },
    retry: { attempts: 4, initialDelayMs: 50, maxDelayMs: 120 },
    sleep: async (ms) => void delays.push(ms),
  });
  return { engine, client, served, delays, connects: () => connects };
}

async function collect(it: AsyncIterable<EngineEvent>): Promise<EngineEvent[]> {
  const out: EngineEvent[] = [];
  for await (const ev of it) out.push(ev);
  return out;
}
const text = (evs: EngineEvent[]) => evs.flatMap((e) => (e.type === 'delta' ? e.choices.map((c) => c.text) : [])).join('');

describe('FramedEngineClient over serveEngine', () => {
  it('streams the same events as the engine in-process', async () => {
    const { client } = harness();
    const direct = await collect(new FakeEngineClient().stream(req('a')));
    const remote = await collect(client.stream(req('a')));
    expect(remote.map((e) => e.type)).toEqual(direct.map((e) => e.type));
    expect(text(remote)).toBe(text(direct));
    expect(remote.at(-1)).toMatchObject({ type: 'done', usage: { completionTokens: 6 } });
  });

  it('answers the unary calls and carries engine errors as values', async () => {
    const { client, engine } = harness();
    expect((await client.model()).id).toBe(engine.info.id);
    expect((await client.health()).ready).toBe(true);
    expect((await client.stats()).kvBlocksTotal).toBe(1024);
    const t = await client.tokenize({ prompt: 'ab', addSpecialTokens: false, addGenerationPrompt: false });
    expect(await client.detokenize(Array.from(t.tokens))).toEqual({ prompt: 'ab' });
    await expect(client.detokenize([-5 + 10 ** 9])).rejects.toMatchObject({ code: 'INVALID_REQUEST', param: 'tokens' });
    engine.setReady(false);
    await expect(collect(client.stream(req('x')))).rejects.toMatchObject({ code: 'NOT_READY' });
  });

  it('multiplexes: a slow reader on one request does not stall another', async () => {
    const { client } = harness();
    const slow = client.stream(req('slow', 200))[Symbol.asyncIterator]();
    expect((await slow.next()).value).toMatchObject({ type: 'accepted' });
    // never pull `slow` while `fast` runs to completion on the same connection
    const fast = await collect(client.stream(req('fast', 50)));
    expect(fast.at(-1)?.type).toBe('done');
    const rest: EngineEvent[] = [];
    for (let r = await slow.next(); !r.done; r = await slow.next()) rest.push(r.value);
    expect(rest.at(-1)).toMatchObject({ type: 'done', usage: { completionTokens: 200 } });
  });

  it('an abort (signal or early return) reaches the served engine', async () => {
    const { client, engine } = harness();
    const release = engine.holdSteps();
    const ctl = new AbortController();
    const it = client.stream(req('s1', 100), ctl.signal)[Symbol.asyncIterator]();
    await it.next();
    ctl.abort();
    release();
    const evs: EngineEvent[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) evs.push(r.value);
    expect(evs.at(-1)?.type).toBe('done');
    expect(engine.abortedIds()).toContain('s1');
    const it2 = client.stream(req('s2', 100))[Symbol.asyncIterator]();
    await it2.next();
    await it2.return?.();
    await client.stats(); // a round trip after the ABORT frame
    expect(engine.abortedIds()).toContain('s2');
  });

  it('connection loss ends every open stream with ENGINE_DEAD, aborts them server-side, then reconnects', async () => {
    const { client, engine, served } = harness();
    const release = engine.holdSteps();
    const a = client.stream(req('a', 100))[Symbol.asyncIterator]();
    const b = client.stream(req('b', 100))[Symbol.asyncIterator]();
    await a.next();
    await b.next();
    served[0]!.transport.close();
    await expect(a.next()).rejects.toMatchObject({ name: 'EngineError', code: 'ENGINE_DEAD' });
    await expect(b.next()).rejects.toBeInstanceOf(EngineError);
    await served[0]!.server.done;
    expect(engine.abortedIds().sort()).toEqual(['a', 'b']);
    release();
    // the next call reconnects
    const evs = await collect(client.stream(req('c', 3)));
    expect(evs.at(-1)?.type).toBe('done');
    expect(client.connections).toBe(2);
  });

  it('retries connecting with exponential backoff, then gives up with ENGINE_DEAD', async () => {
    const ok = harness({ failConnects: 2 });
    expect((await ok.client.model()).id).toBe(ok.engine.info.id);
    expect(ok.delays).toEqual([50, 100]);
    expect(ok.connects()).toBe(3);
    const down = harness({ failConnects: 100 });
    await expect(down.client.model()).rejects.toMatchObject({ code: 'ENGINE_DEAD' });
    expect(down.delays).toEqual([50, 100, 120]);
    // readiness probes make a single attempt
    const probe = harness({ failConnects: 100 });
    await expect(probe.client.health()).rejects.toMatchObject({ code: 'ENGINE_DEAD' });
    expect(probe.connects()).toBe(1);
  });

  it('a wrong or missing secret is refused once, without retries', async () => {
    const wrong = harness({ secret: 'right', clientSecret: 'wrong' });
    await expect(wrong.client.model()).rejects.toMatchObject({ code: 'ENGINE_DEAD', message: expect.stringMatching(/secret/) });
    expect(wrong.connects()).toBe(1);
    const missing = harness({ secret: 'right' });
    await expect(missing.client.stats()).rejects.toMatchObject({ code: 'ENGINE_DEAD' });
    const good = harness({ secret: 'right', clientSecret: 'right' });
    expect((await good.client.health()).ready).toBe(true);
  });

  it('the server refuses a protocol version mismatch and closes', async () => {
    const [a, b] = createTransportPair();
    serveEngine(b, new FakeEngineClient());
    const dec = new FrameDecoder();
    const got: unknown[] = [];
    let closed = false;
    a.onData((chunk) => dec.push(chunk).forEach((f) => got.push(decodeMessage(f))));
    const closing = new Promise<void>((r) =>
      a.onClose(() => {
        closed = true;
        r();
      }),
    );
    await a.write(encodeMessage('HELLO', { version: 99 }));
    await closing; // the server answers HELLO_ERR, then closes
    expect(got).toEqual([{ type: 'HELLO_ERR', body: { version: PROTOCOL_VERSION, code: 'INVALID_REQUEST', message: expect.stringMatching(/version mismatch/) } }]);
    expect(closed).toBe(true);
  });

  it('the server drops a peer that sends garbage or skips the handshake', async () => {
    const [a, b] = createTransportPair();
    const engine = new FakeEngineClient();
    const served = serveEngine(b, engine);
    await a.write(encodeMessage('STATS', { cid: 1 }));
    await served.done;
    const [c, d] = createTransportPair();
    const served2 = serveEngine(d, engine);
    await c.write(new Uint8Array([0x12, 0xff, 0xff, 0xff, 0xff]));
    await served2.done;
  });
});
