import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EngineEvent, SubmitRequest } from '../../src/protocol/engine-client.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';
import { createTcpEngineClient, createUnixEngineClient, listenTcp, listenUnix, type EngineSocketServer } from '../../src/protocol/node-socket.js';

const sampling: SubmitRequest['sampling'] = {
  maxTokens: 5, temperature: 0, topP: 1, topK: -1, minP: 0, repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0,
  logitBias: {}, seed: null, stop: [], stopTokenIds: [], ignoreEos: true, logprobs: 3, skipSpecialTokens: true,
};
const req = (id: string, maxTokens = 5): SubmitRequest => ({ id, prompt: { kind: 'text', text: '你好' }, sampling: { ...sampling, maxTokens }, n: 2, echo: true });
const noSleep = async () => undefined;

async function collect(it: AsyncIterable<EngineEvent>) {
  const out: EngineEvent[] = [];
  for await (const ev of it) out.push(ev);
  return out;
}

let dir: string;
const servers: EngineSocketServer[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ernie-edge-sock-'));
});
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  await rm(dir, { recursive: true, force: true });
});

describe('Unix socket', () => {
  it('serves with mode 0600 and streams end to end', async () => {
    const path = join(dir, 'engine.sock');
    const engine = new FakeEngineClient();
    servers.push(await listenUnix(path, engine));
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const client = createUnixEngineClient(path, { sleep: noSleep });
    const evs = await collect(client.stream(req('u1')));
    expect(evs.map((e) => e.type)).toEqual(['accepted', 'delta', 'delta', 'delta', 'delta', 'delta', 'done']);
    expect(evs[0]).toMatchObject({ promptText: '你好', promptTokenIds: expect.any(Array) });
    const direct = await collect(new FakeEngineClient().stream(req('u1')));
    expect(evs.slice(1, -1)).toEqual(direct.slice(1, -1));
    await client.close();
  });

  it('a slow reader does not stall a concurrent request on the same socket', async () => {
    const path = join(dir, 'engine.sock');
    servers.push(await listenUnix(path, new FakeEngineClient({ tokensPerStep: 4 })));
    const client = createUnixEngineClient(path, { sleep: noSleep });
    const slow = client.stream(req('slow', 2000))[Symbol.asyncIterator]();
    await slow.next();
    const fast = await collect(client.stream(req('fast', 40)));
    expect(fast.at(-1)).toMatchObject({ type: 'done', usage: { completionTokens: 80 } });
    let last: EngineEvent | undefined;
    for (let r = await slow.next(); !r.done; r = await slow.next()) last = r.value;
    expect(last).toMatchObject({ type: 'done', usage: { completionTokens: 4000 } });
    await client.close();
  });

  it('a sidecar restart: open streams get ENGINE_DEAD, the next call reconnects', async () => {
    const path = join(dir, 'engine.sock');
    const engine = new FakeEngineClient();
    const first = await listenUnix(path, engine);
    const client = createUnixEngineClient(path, { sleep: noSleep, retry: { attempts: 3 } });
    const release = engine.holdSteps();
    const open = client.stream(req('o1', 50))[Symbol.asyncIterator]();
    await open.next();
    await first.close();
    await expect(open.next()).rejects.toMatchObject({ code: 'ENGINE_DEAD' });
    expect(engine.abortedIds()).toEqual(['o1']); // the server aborted what the dead connection had open
    release();
    await expect(client.stats()).rejects.toMatchObject({ code: 'ENGINE_DEAD' }); // nothing listening
    servers.push(await listenUnix(path, engine)); // restarted (stale socket file replaced)
    expect((await client.model()).id).toBe(engine.info.id);
    expect((await collect(client.stream(req('o2')))).at(-1)?.type).toBe('done');
    expect(client.connections).toBe(2);
    await client.close();
  });

  it('refuses to start over a live server', async () => {
    const path = join(dir, 'engine.sock');
    servers.push(await listenUnix(path, new FakeEngineClient()));
    await expect(listenUnix(path, new FakeEngineClient())).rejects.toThrow(/already listening/);
  });
});

describe('TCP', () => {
  it('requires a secret, and checks it', async () => {
    const engine = new FakeEngineClient();
    await expect(listenTcp('127.0.0.1', 0, engine, { secret: '' })).rejects.toThrow(/secret/);
    const server = await listenTcp('127.0.0.1', 0, engine, { secret: 'topsecret' });
    servers.push(server);
    const { host, port } = server.address as { host: string; port: number };
    expect(port).toBeGreaterThan(0);
    const good = createTcpEngineClient(host, port, 'topsecret', { sleep: noSleep });
    expect((await collect(good.stream(req('t1')))).at(-1)?.type).toBe('done');
    const bad = createTcpEngineClient(host, port, 'guess', { sleep: noSleep });
    await expect(bad.health()).rejects.toMatchObject({ code: 'ENGINE_DEAD', message: expect.stringMatching(/secret/) });
    await good.close();
    await bad.close();
  });
});
