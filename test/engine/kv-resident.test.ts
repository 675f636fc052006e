// The KV pool is resident from load (native/src/model/kv_cache.cc): the memory at /ready is the memory
// under load. Before, the pool was faulted in as blocks were first used (a 4 GiB pool: RSS 204 MB at
// start, 1.97 GB and climbing after 3,000 requests). So is a step's scratch (ModelRunner::reserve, for
// --max-num-batched-tokens tokens): before, it grew into RSS with the first large steps, ~70 MiB at
// this test's 2,048-token budget, then stayed (a high-water mark, not a leak: flat from 200 to 1,600
// requests, with any MALLOC_ARENA_MAX).
import { expect, it } from 'vitest';
import { TestEngine, randomTokens } from './engine-helpers.js';

const MiB = 2 ** 20;
const POOL = 64 * MiB;
/** RSS less the JS heap: the engine's native memory (and the runtime's), without the garbage collector's noise. */
/** What 400 requests may add to it after load: allocator bookkeeping and this process's own buffers. */
const MAX_GROWTH = 24 * MiB;
const native = () => {
  const m = process.memoryUsage();
  return m.rss - m.heapTotal;
};

it('a 64 MiB pool and the step scratch are in RSS once loaded; 400 requests later native memory has not grown past a small bound', async () => {
  const before = native();
  const e = await TestEngine.create({ maxNumSeqs: 32 }, { kvBlocks: undefined, kvCacheMemory: POOL });
  try {
    const ready = native();
    expect(ready - before).toBeGreaterThan(0.9 * POOL);
    const total = e.engine.stats().kvBlocksTotal;
    const after: number[] = [];
    for (let round = 0; round < 2; round++) {
      // 200 at once: the scheduler fills every step to the token budget (prefill chunks of 2,048 tokens).
      const reqs = Array.from({ length: 200 }, (_, i) => ({ id: round * 200 + i + 1, prompt: randomTokens(200 + (i % 7) * 40, i), maxTokens: 24 }));
      await e.run(reqs);
      expect(e.engine.stats().kvBlocksFree).toBe(total);
      after.push(native());
    }
    console.log(`[kv] RSS less JS heap: before load ${(before / MiB).toFixed(0)} MiB, at ready ${(ready / MiB).toFixed(0)} MiB, after 200 / 400 requests ${after.map((a) => (a / MiB).toFixed(0)).join(' / ')} MiB`);
    expect(Math.max(...after) - ready).toBeLessThan(MAX_GROWTH);
  } finally {
    await e.close();
  }
}, 240_000);
