// The KV pool is resident from load (native/src/model/kv_cache.cc): the memory at /ready is the memory
// under load. Before, the pool was faulted in as blocks were first used (a 4 GiB pool: RSS 204 MB at
// start, 1.97 GB and climbing after 3,000 requests).
import { expect, it } from 'vitest';
import { TestEngine, randomTokens } from './engine-helpers.js';

const MiB = 2 ** 20;
const POOL = 64 * MiB;
/** RSS less the JS heap: the engine's native memory (and the runtime's), without the garbage collector's noise. */
const native = () => {
  const m = process.memoryUsage();
  return m.rss - m.heapTotal;
};

it('a 64 MiB pool is in RSS once loaded, before any request', async () => {
  const before = native();
  const e = await TestEngine.create({ maxNumSeqs: 32 }, { kvBlocks: undefined, kvCacheMemory: POOL });
  try {
    const ready = native();
    expect(ready - before).toBeGreaterThan(0.9 * POOL);
    const total = e.engine.stats().kvBlocksTotal;
    const reqs = Array.from({ length: 200 }, (_, i) => ({ id: i + 1, prompt: randomTokens(200 + (i % 7) * 40, i), maxTokens: 24 }));
    await e.run(reqs);
    expect(e.engine.stats().kvBlocksFree).toBe(total);
    const after = native();
    console.log(`[kv] RSS less JS heap: before load ${(before / MiB).toFixed(0)} MiB, at ready ${(ready / MiB).toFixed(0)} MiB, after 200 requests ${(after / MiB).toFixed(0)} MiB`);
    // NOTE: native memory still grows by tens of MiB over these requests with the pool resident (not
    // the pool: the same with a smaller one); reported by bench:soak, not asserted here.
  } finally {
    await e.close();
  }
}, 120_000);
