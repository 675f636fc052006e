// The sidecar's response store: LRU by count and by bytes with exact contents after every operation,
// and the same store reached over the engine protocol by two clients (two gateways of one sidecar).
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../../src/protocol/engine-client.js';
import { FramedEngineClient } from '../../../src/protocol/framed-client.js';
import { serveEngine } from '../../../src/protocol/serve-engine.js';
import { createTransportPair } from '../../../src/protocol/transport.js';
import { LoadingBackend } from '../../../src/sidecar/server/loading-backend.js';
import { MemoryResponseStore } from '../../../src/sidecar/server/response-store.js';
import { FakeEngineClient } from '../../doubles/fake-engine-client.js';

/** The store's ids, least recently used first. */
async function ids(store: MemoryResponseStore, all: string[]): Promise<string[]> {
  const present: string[] = [];
  for (const id of all) if ((await store.get(id)) !== null) present.push(id);
  return present;
}

describe('MemoryResponseStore', () => {
  it('drops the least recently used past the count limit; a read counts as a use', async () => {
    const s = new MemoryResponseStore({ maxEntries: 3, maxBytes: 1 << 20 });
    for (const id of ['a', 'b', 'c']) await s.put(id, `v${id}`);
    expect(await s.get('a')).toBe('va'); // a is now the most recent: b is the oldest
    await s.put('d', 'vd');
    expect(s.size).toBe(3);
    expect(await s.get('b')).toBeNull();
    expect(await ids(s, ['a', 'c', 'd'])).toEqual(['a', 'c', 'd']);
  });

  it('drops the oldest until the bytes fit; replacing an entry counts its new size only', async () => {
    // 2 bytes per UTF-16 unit of id + value: 'a' + 9 chars = 20 bytes.
    const s = new MemoryResponseStore({ maxEntries: 100, maxBytes: 60 });
    for (const id of ['a', 'b', 'c']) await s.put(id, 'x'.repeat(9));
    expect(s.usedBytes).toBe(60);
    await s.put('b', 'y'.repeat(4)); // 10 bytes instead of 20
    expect(s.usedBytes).toBe(50);
    await s.put('d', 'z'.repeat(19)); // 40 bytes: a and c (the oldest) must go
    expect(await s.get('a')).toBeNull();
    expect(await s.get('c')).toBeNull();
    expect(await s.get('b')).toBe('yyyy');
    expect(s.usedBytes).toBe(50);
    await expect(s.put('huge', 'x'.repeat(100))).rejects.toBeInstanceOf(EngineError);
    expect(s.size).toBe(2);
  });

  it('delete says whether there was something to delete', async () => {
    const s = new MemoryResponseStore();
    await s.put('a', '1');
    expect(await s.delete('a')).toBe(true);
    expect(await s.delete('a')).toBe(false);
    expect(s.usedBytes).toBe(0);
  });
});

describe('the store over the engine protocol', () => {
  const client = (backend: Parameters<typeof serveEngine>[1]) =>
    new FramedEngineClient({
      connect: async () => {
        const [a, b] = createTransportPair();
        serveEngine(b, backend);
        return a;
      },
    });

  it("two gateways of one sidecar share it (the sidecar's backend keeps one store)", async () => {
    expect(new LoadingBackend().responses).toBeInstanceOf(MemoryResponseStore);
    const backend = new FakeEngineClient();
    const [g1, g2] = [client(backend), client(backend)];
    await g1.responses.put('resp_1', '{"x":1}');
    expect(await g2.responses.get('resp_1')).toBe('{"x":1}');
    expect(await g2.responses.delete('resp_1')).toBe(true);
    expect(await g1.responses.get('resp_1')).toBeNull();
    await Promise.all([g1.close(), g2.close()]);
  });

  it('a backend without a store answers with an INVALID_REQUEST error', async () => {
    const g = client(new FakeEngineClient({ responseStore: false }));
    await expect(g.responses.get('resp_1')).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await g.close();
  });
});
