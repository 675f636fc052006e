// Stress: 300 random requests (random lengths, n, sampling), random aborts, a tiny KV pool that
// forces preemption. Every request must end (tokens or abort) and the pool must end entirely free.
import { expect, it } from 'vitest';
import { Finish } from '../../src/sidecar/engine/native-engine.js';
import { TestEngine, randomTokens } from './engine-helpers.js';

it('300 random requests with random aborts on a tiny pool all end, and every block comes back', async () => {
  const blocks = 24;
  const e = await TestEngine.create({ maxNumSeqs: 16, maxNumBatchedTokens: 96, maxModelLen: 1024 }, { kvBlocks: blocks });
  try {
    let s = 12345;
    const rnd = (n: number) => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return s % n;
    };
    const ids: number[] = [];
    const abortAfter = new Map<number, number>(); // id -> abort once this many outputs were seen
    const seen = new Map<number, number>();
    e.onOutput = (o) => {
      const k = (seen.get(o.id) ?? 0) + 1;
      seen.set(o.id, k);
      if (abortAfter.get(o.id) === k) e.engine.abort(o.id);
    };
    for (let i = 0; i < 300; i++) {
      const id = i + 1;
      const len = 1 + rnd(120);
      const n = rnd(10) === 0 ? 2 : 1;
      const maxTokens = 1 + rnd(Math.min(60, Math.floor((blocks * 16) / n) - len - 16));
      if (rnd(5) === 0) abortAfter.set(id, 1 + rnd(5));
      e.submit({ id, prompt: randomTokens(len, i), maxTokens, n, temperature: rnd(2) ? 0.7 : 0, seed: rnd(2) ? i : null });
      if (rnd(4) === 0) e.engine.abort(id); // some aborted before they even start
      ids.push(id);
      if (i % 50 === 49) await new Promise((r) => setImmediate(r));
    }
    await e.wait(ids);
    let aborted = 0;
    for (const id of ids) {
      for (const c of e.results.get(id)!) {
        expect([Finish.Length, Finish.Stop, Finish.Abort]).toContain(c.finish);
        if (c.finish === Finish.Abort) aborted++;
        else expect(c.tokens.length).toBeGreaterThan(0);
      }
    }
    const st = e.engine.stats();
    expect(st.maxRunning).toBeLessThanOrEqual(16); // forks included: --max-num-seqs holds under preemption and aborts
    console.log(`stress: 300 requests, ${aborted} choices aborted, ${st.preemptions} preemptions, ${st.steps} steps`);
    expect(aborted).toBeGreaterThan(0);
    expect(st.preemptions).toBeGreaterThan(0);
    expect([st.running, st.waiting, st.kvBlocksFree]).toEqual([0, 0, blocks]);
  } finally {
    await e.close();
  }
});
