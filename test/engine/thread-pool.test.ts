// The compute thread pool's sleep/wake path: workers spin briefly between parallel regions and then
// sleep. Forward calls separated by idle gaps longer than the spin make every call wake sleeping
// workers. A lost wake-up (seen once with std::atomic::wait) leaves the step thread spinning and
// the forward() promise pending: this test then fails on its timeout instead of CI hanging.
import { expect, it } from 'vitest';
import { loadModel } from '../../src/sidecar/model/load.js';
import { TINY } from './engine-helpers.js';

it('survives 300 sleep/wake cycles of the worker pool with identical results', { timeout: 60_000 }, async () => {
  const { model } = await loadModel(TINY, { kvBlocks: 2, threads: 2 });
  try {
    const slice = { tokens: Int32Array.from([1, 5, 9]), startPos: 0, blockTable: Int32Array.from([0]), logits: 1 as const };
    const first = await model.forward([slice]);
    for (let i = 0; i < 300; i++) {
      await new Promise((r) => setTimeout(r, i % 3)); // 0-2 ms idle: around the spin window
      const again = await model.forward([slice]);
      expect(again[0]).toBe(first[0]);
    }
  } finally {
    model.close();
  }
});
