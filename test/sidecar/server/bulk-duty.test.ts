// The tokenizer pool's duty cycle (src/sidecar/server/bulk-duty.ts): while the engine has live requests and
// the scheduler keeps it waiting, a bulk worker pauses between slices; with none, or with cores to spare,
// it never pauses; the engine host sets the flag as
// requests come and go; the end of the last request wakes a paused worker. Clocks are the tests' own
// where a slice is measured; the rest asserts states (pause counts, flags, wake-ups), never durations.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BULK_PAUSE_MS, BULK_SLICE_MS, BulkDuty, hostSaturated, installDutyPacer } from '../../../src/sidecar/server/bulk-duty.js';
import { TokenizePool } from '../../../src/sidecar/server/tokenize-pool.js';
import { PACE_EVERY, pacePoint, setPacer } from '../../../src/sidecar/tokenizer/pace.js';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { TOKENIZER_DIR, makeHost, request } from './helpers.js';

afterEach(() => setPacer(null));

/**
 * A pacer on a fake clock: `work(units, msPerUnit)` runs pace points and advances the clock by each
 * unit's cost. `contended` is the host's state the pacer reads.
 */
function fakePacer(duty: BulkDuty, contended: { on: boolean } = { on: true }) {
  let clock = 0;
  const sleeps: number[] = [];
  const pacer = installDutyPacer(
    duty.buffer,
    () => clock,
    (_flag, ms) => {
      sleeps.push(ms);
      clock += ms;
    },
    () => contended.on,
  );
  const work = (units: number, msPerUnit: number) => {
    for (let i = 0; i < units; i++) {
      clock += msPerUnit;
      pacePoint();
    }
  };
  return { pacer, sleeps, work, now: () => clock };
}

describe('duty cycle (fake clock)', () => {
  it(`live and contended: a pause of ${BULK_PAUSE_MS} ms after each ${BULK_SLICE_MS} ms slice of work; not live: none`, () => {
    const duty = new BulkDuty();
    const { pacer, sleeps, work } = fakePacer(duty);
    const perUnit = BULK_SLICE_MS / (PACE_EVERY * 8); // a slice is 8 pacer runs
    work(PACE_EVERY * 8 * 10, perUnit); // 10 slices' worth, nothing live
    expect(pacer.pauses).toBe(0);
    duty.live = true;
    pacer.begin();
    work(PACE_EVERY * 8 * 10, perUnit);
    expect(pacer.pauses).toBe(10);
    expect(sleeps).toEqual(Array(10).fill(BULK_PAUSE_MS));
    expect(pacer.pausedMs).toBe(10 * BULK_PAUSE_MS);
    duty.live = false;
    work(PACE_EVERY * 8 * 10, perUnit);
    expect(pacer.pauses).toBe(10);
  });

  it('live with cores to spare: no pause; live with threads waiting for a core: a pause after each slice', () => {
    const duty = new BulkDuty();
    duty.live = true;
    const contended = { on: false };
    const { pacer, work } = fakePacer(duty, contended);
    const perUnit = BULK_SLICE_MS / (PACE_EVERY * 8);
    pacer.begin();
    work(PACE_EVERY * 8 * 10, perUnit);
    expect(pacer.pauses).toBe(0);
    contended.on = true;
    work(PACE_EVERY * 8 * 10, perUnit);
    expect(pacer.pauses).toBe(10);
  });

  it('begin() gives a job its whole first slice: a worker idle for a while does not pause at once', () => {
    const duty = new BulkDuty();
    duty.live = true;
    const { pacer, work } = fakePacer(duty);
    work(1, 1000); // a long idle stretch on the clock, then a job starts
    const before = pacer.pauses;
    pacer.begin();
    work(PACE_EVERY * 3, BULK_SLICE_MS / (PACE_EVERY * 4)); // three quarters of a slice
    expect(pacer.pauses).toBe(before);
  });
});

describe('hostSaturated', () => {
  it('reads more runnable threads than cores while spinners fill every core, and none above the host when given its thread count', async () => {
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const n = availableParallelism();
    const started = new Int32Array(new SharedArrayBuffer(4));
    const spinners = Array.from({ length: n + 1 }, () =>
      new Worker(
        `const { workerData: [s, f] } = require('node:worker_threads'); const a = new Int32Array(s), b = new Int32Array(f); Atomics.add(a, 0, 1); while (Atomics.load(b, 0) === 0);`,
        { eval: true, workerData: [started.buffer, stop.buffer] },
      ),
    );
    try {
      while (Atomics.load(started, 0) < n + 1) await new Promise((r) => setImmediate(r));
      // n + 1 spinners and this thread are runnable: more than n cores, whichever the kernel samples.
      expect(hostSaturated(n)()).toBe(true);
      expect(hostSaturated(1 << 20)()).toBe(false);
    } finally {
      Atomics.store(stop, 0, 1);
      await Promise.all(spinners.map((w) => w.terminate()));
    }
  });
});

describe('BulkDuty', () => {
  it('the last request ending wakes a worker paused on the flag', async () => {
    const duty = new BulkDuty();
    duty.live = true;
    // The worker blocks the way the pacer does (Atomics.wait while the flag is 1), for far longer than
    // this test may take: it answers only once woken ('ok'). A wait that begins while the flag is 0
    // returns at once ('not-equal') and is begun again.
    const worker = new Worker(
      `const { workerData, parentPort } = require('node:worker_threads');
       const flag = new Int32Array(workerData);
       parentPort.postMessage('started');
       while (Atomics.wait(flag, 0, 1, 600000) !== 'ok');
       parentPort.postMessage('woken');`,
      { eval: true, workerData: duty.buffer },
    );
    const message = (want: string) => new Promise<void>((resolve) => worker.on('message', (m: string) => m === want && resolve()));
    const woken = message('woken');
    await message('started');
    // The request ends (the flag drops) until a drop finds the worker waiting: then it must be woken.
    while (duty.woken === 0) {
      duty.live = false;
      if (duty.woken > 0) break;
      duty.live = true;
      await new Promise((r) => setImmediate(r));
    }
    await woken;
    expect(duty.woken).toBe(1);
    expect(duty.live).toBe(false);
    await worker.terminate();
  });
});

describe('tokenize pool and engine host', () => {
  let pool: TokenizePool;
  let bundle: TokenizerBundle;
  beforeAll(async () => {
    bundle = await loadTokenizerBundle(TOKENIZER_DIR, { maxModelLen: 1 << 20 });
    pool = await TokenizePool.start({ dir: TOKENIZER_DIR, options: { maxModelLen: 1 << 20 }, vocabSize: 103424 }, 1);
  });
  afterAll(() => pool.close());
  const big = 'Streams first, megabytes after: 你好，世界。 '.repeat(8000); // ~300 k characters: tens of slices

  /** Runs `work` with every core kept busy by threads at this thread's priority (above the worker's). */
  async function saturated<T>(work: () => Promise<T>): Promise<T> {
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const spinners = Array.from({ length: availableParallelism() }, () =>
      new Worker(`const f = new Int32Array(require('node:worker_threads').workerData); while (Atomics.load(f, 0) === 0);`, { eval: true, workerData: stop.buffer }),
    );
    try {
      return await work();
    } finally {
      Atomics.store(stop, 0, 1);
      await Promise.all(spinners.map((w) => w.terminate()));
    }
  }

  it('a large job on a saturated host pauses while requests are live, never when none is, and gives the same ids', async () => {
    const want = bundle.tokenize({ prompt: big, addSpecialTokens: true }).tokens;
    const job = () => pool.tokenize({ prompt: big, addSpecialTokens: true }, big.length);
    pool.duty.live = false;
    let before = pool.pauses;
    expect(Array.from(await saturated(job))).toEqual(want);
    expect(pool.pauses).toBe(before);
    pool.duty.live = true;
    before = pool.pauses;
    expect(Array.from(await saturated(job))).toEqual(want);
    expect(pool.pauses).toBeGreaterThan(before);
    pool.duty.live = false;
  });

  it('the engine host sets the flag while a request is in its table and clears it when the last one ends', async () => {
    const env = await makeHost({ tokenizePool: pool });
    pool.duty.live = false;
    const a = env.host.stream(request({ sampling: { maxTokens: 2 } }))[Symbol.asyncIterator]();
    const b = env.host.stream(request({ sampling: { maxTokens: 4 } }))[Symbol.asyncIterator]();
    expect((await a.next()).value).toMatchObject({ type: 'accepted' });
    expect((await b.next()).value).toMatchObject({ type: 'accepted' });
    expect(pool.duty.live).toBe(true);
    env.engine.step();
    env.engine.step(); // a is done, b is not
    for (let r = await a.next(); !r.done; r = await a.next());
    expect(pool.duty.live).toBe(true);
    while (env.engine.step().length > 0);
    for (let r = await b.next(); !r.done; r = await b.next());
    expect(pool.duty.live).toBe(false);
  });
});
