// Limits that hold in the native engine (issue #26): --max-num-seqs counts forks, a request that can
// never run is refused up front, and fair admission seats a small request next to a big one within
// a bounded number of steps. Numbers come from the engine's own per-step counters (stats().maxRunning,
// lastStepSeqs), not from sampling; step bounds are read from the big request's progress in the step
// that carries the small one's first token, so they do not depend on how late Node sees the steps.
import { afterEach, describe, expect, it } from 'vitest';
import { TestEngine, randomTokens, request } from './engine-helpers.js';

let engines: TestEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
});
async function engine(...args: Parameters<typeof TestEngine.create>): Promise<TestEngine> {
  const e = await TestEngine.create(...args);
  engines.push(e);
  return e;
}

describe('engine limits: --max-num-seqs counts forks', () => {
  it('refuses n above max_num_seqs up front, with the reason', async () => {
    const e = await engine({ maxNumSeqs: 8 });
    expect(e.engine.submit(request({ id: 1, prompt: [1, 2, 3], n: 16 }))).toBe('n=16 choices need 16 sequences running together but max_num_seqs is 8');
  });

  it('8 requests with n=4..8 on max_num_seqs 8: no step runs more than 8 sequences, and every choice completes', async () => {
    const e = await engine({ maxNumSeqs: 8 });
    const reqs = Array.from({ length: 8 }, (_, i) => ({ id: i + 1, prompt: randomTokens(10 + i, 30 + i), maxTokens: 12, n: 4 + (i % 5) }));
    await e.run(reqs);
    for (const r of reqs) expect(e.results.get(r.id)!.filter((c) => c.finish === 2)).toHaveLength(r.n);
    const s = e.engine.stats();
    expect(s.maxRunning).toBe(8); // reached, never passed
    expect(Math.max(...e.statsAfterStep.map((x) => x.lastStepSeqs))).toBeLessThanOrEqual(8);
    expect(s.kvBlocksFree).toBe(s.kvBlocksTotal);
  });

  it('createEngine refuses a maxNumSeqs larger than the step buffers were sized for', async () => {
    await expect(TestEngine.create({ maxNumSeqs: 64 }, { maxNumSeqs: 32 })).rejects.toThrow(
      new TypeError('createEngine: engineOptions.maxNumSeqs (64) exceeds loadOptions.maxNumSeqs (32), which sizes the step buffers'),
    );
  });
});

describe('engine limits: fair admission', () => {
  // The big request fills every slot once its choices fork; the small one, submitted with it, must
  // get its first token within a few steps (FCFS alone would hold it until the big one finished).
  const big = { prompt: randomTokens(24, 5), maxTokens: 48 };
  const run = async (bigs: { n: number; count: number }, maxNumSeqs: number) => {
    const e = await engine({ maxNumSeqs });
    const ids = Array.from({ length: bigs.count }, (_, i) => i + 1);
    let bigTokensAtSmallFirst = -1;
    e.onOutput = (o) => {
      if (o.id === 100 && bigTokensAtSmallFirst < 0) bigTokensAtSmallFirst = e.results.get(1)![0]!.tokens.length;
    };
    for (const id of ids) e.submit({ id, ...big, n: bigs.n });
    e.submit({ id: 100, prompt: randomTokens(6, 9), maxTokens: 4 });
    await e.wait([...ids, 100]);
    return { e, bigTokensAtSmallFirst };
  };

  it('one request holding every slot gives one up: the small request starts within 3 steps', async () => {
    const { e, bigTokensAtSmallFirst } = await run({ n: 16, count: 1 }, 16);
    expect(bigTokensAtSmallFirst).toBeGreaterThanOrEqual(0);
    expect(bigTokensAtSmallFirst).toBeLessThanOrEqual(3);
    const s = e.engine.stats();
    expect(s.fairPreemptions).toBeGreaterThanOrEqual(1);
    expect(s.maxRunning).toBeLessThanOrEqual(16);
    // Preemption changes when, not what: greedy choices of one prompt are identical.
    const alone = await engine({ maxNumSeqs: 16 });
    await alone.run([{ id: 1, ...big, n: 16 }]);
    expect(e.results.get(1)!.map((c) => c.tokens)).toEqual(alone.results.get(1)!.map((c) => c.tokens));
  });

  it('4 prompts x n=4 filling 16 slots: the small request starts within 3 steps', async () => {
    const { e, bigTokensAtSmallFirst } = await run({ n: 4, count: 4 }, 16);
    expect(bigTokensAtSmallFirst).toBeLessThanOrEqual(3);
    expect(e.engine.stats().maxRunning).toBeLessThanOrEqual(16);
  });

  it('a request alone may use every slot (work-conserving)', async () => {
    const e = await engine({ maxNumSeqs: 16 });
    await e.run([{ id: 1, ...big, n: 16 }]);
    expect(e.engine.stats().maxRunning).toBe(16);
    expect(e.engine.stats().fairPreemptions).toBe(0);
  });
});
