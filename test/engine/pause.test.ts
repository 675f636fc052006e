// The engine's paused state (flow control: src/protocol/flow.ts): a paused request keeps its KV blocks
// and is left out of every step until resumed, the other requests run meanwhile, and a resumed request
// yields the tokens it yields when never paused. The same scheduler serves the CPU and CUDA backends.
import { describe, expect, it } from 'vitest';
import { Finish } from '../../src/sidecar/engine/native-engine.js';
import { engineFixture, randomTokens } from './engine-helpers.js';

const engine = engineFixture();

describe('engine: pause', () => {
  it('a paused request keeps its blocks and gets no tokens while others run; resumed, it yields its unpaused tokens', async () => {
    const kvBlocks = 64;
    const e = await engine({}, { kvBlocks });
    const a = { id: 1, prompt: randomTokens(40, 1), maxTokens: 48, n: 2 };
    const b = { id: 2, prompt: randomTokens(20, 2), maxTokens: 24 };
    let atBFirst = -1; // A's tokens when B's first token arrived
    let atBDone = -1;
    let pausedStats: ReturnType<typeof e.engine.stats> | null = null;
    let started = false;
    const bDone = new Promise<void>((resolve) => {
      e.onOutput = (o) => {
        const countA = () => (e.results.get(1) ?? []).reduce((s, c) => s + (c?.tokens.length ?? 0), 0);
        if (o.id === 1 && !started && o.tokens.length > 0) {
          started = true;
          // A has been prefilled (it holds blocks): pause it, then start B. Every step that makes a token
          // of B drained the pause first (it was queued before B), so A gets nothing in those steps.
          e.engine.pause(1, true);
          e.submit(b);
        }
        if (o.id === 2 && atBFirst < 0) atBFirst = countA();
        if (o.id === 2 && o.finish) {
          atBDone = countA();
          pausedStats = e.engine.stats();
          resolve();
        }
      };
    });
    e.submit(a);
    await bDone;
    expect(e.results.get(2)![0]!.tokens).toHaveLength(24);
    expect(atBDone).toBe(atBFirst);
    expect(e.done(1)).toBe(false);
    // B's blocks are back; A's are held while it is paused.
    expect(pausedStats!.kvBlocksFree).toBeLessThan(kvBlocks);
    expect(pausedStats!.running).toBe(2); // A's two choices, paused, still running (KV kept)

    e.engine.pause(1, false);
    await e.wait([1], 2);
    const paused = e.results.get(1)!;
    expect(paused.map((c) => [c.finish, c.tokens.length])).toEqual([
      [Finish.Length, 48],
      [Finish.Length, 48],
    ]);
    expect(e.engine.stats().kvBlocksFree).toBe(kvBlocks);

    const alone = await engine({}, { kvBlocks });
    const ref = await alone.run([a]);
    expect(paused.map((c) => c.tokens)).toEqual(ref.get(1)!.map((c) => c.tokens));
  });

  it('a request paused before it was scheduled waits without blocking the queue behind it; pause of unknown ids is ignored', async () => {
    const e = await engine({ maxNumSeqs: 4 }, { kvBlocks: 64 });
    e.submit({ id: 1, prompt: randomTokens(10, 1), maxTokens: 16 });
    e.engine.pause(1, true); // queued with the submit: at most its first step may run before it lands
    e.engine.pause(777, true);
    await e.run([{ id: 2, prompt: randomTokens(10, 2), maxTokens: 16 }]);
    expect((e.results.get(1)?.[0]?.tokens.length ?? 0) <= 1).toBe(true);
    expect(e.done(1)).toBe(false);
    e.engine.pause(1, false);
    await e.wait([1]);
    expect(e.results.get(1)![0]!.tokens).toHaveLength(16);
  });
});
