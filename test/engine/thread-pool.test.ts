// The compute thread pool's sleep/wake path: workers spin briefly between parallel regions and then
// sleep. Forward calls separated by idle gaps longer than the spin make every call wake sleeping
// workers. A lost wake-up (seen once with std::atomic::wait) left the step thread spinning and the
// forward() promise pending; since the caller no longer waits for workers that have not claimed a
// task, it would now show as a silent slowdown instead, so the results are checked too.
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

// More workers than cores: workers are preempted before, during and after their claims, so tasks
// are claimed by whichever thread gets there (the caller alone, often). Every task writes its own
// outputs, so the logits must not depend on that: bit-identical to one thread. Two prompts take
// turns, so a task skipped in one forward cannot hide behind the previous forward's buffers.
it('gives bit-identical logits with 1, 2, 3 and 6 threads, repeatedly', { timeout: 60_000 }, async () => {
  const prompts = [37, 53].map((m) => Int32Array.from({ length: 40 }, (_, i) => (i * m + 11) % 200));
  const slice = (i: number) => ({ tokens: prompts[i % 2]!, startPos: 0, blockTable: Int32Array.from([0, 1, 2]), logits: 2 as const });
  const run = async (threads: number, times: number): Promise<Float32Array[]> => {
    const { model } = await loadModel(TINY, { kvBlocks: 4, blockSize: 16, threads });
    try {
      const out: Float32Array[] = [];
      for (let i = 0; i < times; i++) out.push(await model.forward([slice(i)]));
      return out;
    } finally {
      model.close();
    }
  };
  const ref = await run(1, 2);
  const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  const differs = (a: Float32Array, b: Float32Array) => a.length !== b.length || bytes(a).compare(bytes(b)) !== 0;
  expect(differs(ref[0]!, ref[1]!)).toBe(true);
  for (const threads of [2, 3, 6]) {
    const outs = await run(threads, 20);
    expect(outs.map((out, i) => differs(out, ref[i % 2]!))).toEqual(outs.map(() => false));
  }
});
