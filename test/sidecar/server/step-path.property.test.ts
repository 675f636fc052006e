// Property: through the batched per-step path (EngineHost → serveEngine's STEP frames → the gateway's
// FramedEngineClient, with credit flow control and engine pauses), every request receives exactly the
// tokens the engine produced for it, in order, per choice — under random concurrency, random aborts,
// slow readers (whose windows fill, so the engine pauses them) and coalescing on or off; and a request
// that ran to the end receives what the engine produces for it driven directly, alone. Seeded; the
// engine steps by hand (one step per macrotask of the driver loop): no timers, no sleeps.
import { describe, expect, it } from 'vitest';
import type { EngineEvent, SubmitRequest } from '../../../src/protocol/engine-client.js';
import { FramedEngineClient } from '../../../src/protocol/framed-client.js';
import { serveEngine } from '../../../src/protocol/serve-engine.js';
import { createTransportPair } from '../../../src/protocol/transport.js';
import { type EngineRequest, type StepOutput } from '../../../src/sidecar/engine/native-engine.js';
import { EngineHost } from '../../../src/sidecar/server/engine-host.js';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { FakeNativeEngine, type FakeNativeEngineOptions } from '../../doubles/fake-native-engine.js';
import { sampling, TOKENIZER_DIR } from './helpers.js';
import { rng } from '../../../src/cli/bench-serve/rng.js';


interface Plan {
  req: SubmitRequest;
  startTick: number;
  /** Ticks the reader waits between two events (0: reads as fast as it can). */
  readEvery: number;
  /** Stop reading (early return or signal) after this many events; null: read to the end. */
  abortAfter: number | null;
  viaSignal: boolean;
  coalesce: boolean;
}

interface Got {
  tokens: number[][];
  text: string[];
  doneTokens: number | null;
  finish: (string | undefined)[];
}

async function setup(bundle: TokenizerBundle) {
  const corpus = bundle.encodePrompt('Hello, world! 你好，世界。 The quick brown fox.', { addSpecialTokens: false });
  const starts = corpus.map((id, i) => ((bundle.tokenizer.tokenBytes(id)[0] ?? 0) >> 6 === 0b10 ? -1 : i)).filter((i) => i >= 0);
  const fakeOpts: FakeNativeEngineOptions = {
    engine: { maxNumSeqs: 48, maxNumBatchedTokens: 4096, maxModelLen: 2048, enablePrefixCaching: true, seed: 0 },
    vocabSize: 103424,
    corpus,
    starts,
    eosId: 2,
    kvBlocks: 100_000,
    blockSize: 16,
    manual: true,
  };
  // What the engine produced, per engine request id and choice, in step order.
  const produced = new Map<number, number[][]>();
  let engine!: FakeNativeEngine;
  const host = await EngineHost.start(
    {
      bundle,
      model: { id: 'm', root: TOKENIZER_DIR, maxModelLen: 2048, vocabSize: 103424, createdAt: 0, generationDefaults: {}, placeholder: true, maxNumSeqs: 1024 },
      maxNumQueuedReqs: 1000,
    },
    (onStep) => {
      engine = new FakeNativeEngine(fakeOpts, (outs: StepOutput[]) => {
        for (const o of outs) {
          const per = produced.get(o.id) ?? [];
          produced.set(o.id, per);
          (per[o.index] ??= []).push(...o.tokens);
        }
        onStep(outs);
      });
      return engine;
    },
  );
  const [gw, sc] = createTransportPair();
  serveEngine(sc, host);
  const client = new FramedEngineClient({ connect: async () => gw });
  return { host, engine: engine!, produced, client, fakeOpts };
}

/** The engine driven directly: one request alone, stepped to its end. */
function alone(opts: FakeNativeEngineOptions, r: EngineRequest): number[][] {
  const out: number[][] = [];
  const e = new FakeNativeEngine(opts, (outs) => {
    for (const o of outs) (out[o.index] ??= []).push(...o.tokens);
  });
  expect(e.submit({ ...r, id: 1 })).toBeNull();
  for (let i = 0; i < 5000 && e.stats().running + e.stats().waiting > 0; i++) e.step();
  return out;
}

describe('the per-step serving path (property)', () => {
  for (const seed of [1, 2, 3, 4]) {
    it(`seed ${seed}: each request gets exactly the engine's tokens, in order, whatever the readers do`, async () => {
      const bundle = await loadTokenizerBundle(TOKENIZER_DIR);
      const env = await setup(bundle);
      const rand = rng(seed);
      const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
      const count = int(12, 40);
      const plans: Plan[] = Array.from({ length: count }, (_, i) => {
        const slow = rand() < 0.3;
        const logprobs = rand() < 0.5 ? int(0, 5) : null;
        return {
          req: {
            id: `r${i}`,
            // The first id names the plan (the engine's request ids are the sidecar's own).
            prompt: { kind: 'tokens', ids: [10_000 + i, ...Array.from({ length: int(0, 24) }, () => int(10, 2000))] },
            // Slow readers ask for enough to fill their window (STREAM_WINDOW_UNITS per choice).
            sampling: sampling({ maxTokens: slow ? int(200, 700) : int(1, 80), ignoreEos: rand() < 0.7, logprobs, temperature: rand() < 0.5 ? 0 : 1, seed: int(0, 1000) }),
            n: int(1, 3),
            echo: false,
          },
          startTick: int(0, 60),
          readEvery: slow ? int(3, 12) : 0,
          abortAfter: rand() < 0.25 ? int(0, 30) : null,
          viaSignal: rand() < 0.5,
          coalesce: rand() < 0.5,
        };
      });

      let tick = 0;
      const tickWaiters: { at: number; resolve: () => void }[] = [];
      const untilTick = (at: number) => new Promise<void>((resolve) => (at <= tick ? resolve() : tickWaiters.push({ at, resolve })));
      const got = new Map<string, Got>();
      const run = async (p: Plan): Promise<void> => {
        await untilTick(p.startTick);
        const g: Got = { tokens: [], text: [], doneTokens: null, finish: [] };
        got.set(p.req.id, g);
        const ctl = new AbortController();
        let events = 0;
        for await (const ev of env.client.stream(p.req, ctl.signal, { coalesce: p.coalesce }) as AsyncIterable<EngineEvent>) {
          if (ev.type === 'delta') {
            for (const c of ev.choices) {
              (g.tokens[c.index] ??= []).push(...c.tokenIds);
              g.text[c.index] = (g.text[c.index] ?? '') + c.text;
              if (c.finishReason) g.finish[c.index] = c.finishReason;
            }
          }
          if (ev.type === 'done') g.doneTokens = ev.usage.completionTokens;
          events++;
          if (p.abortAfter !== null && events > p.abortAfter) {
            if (!p.viaSignal) break;
            ctl.abort();
          }
          if (p.readEvery > 0) await untilTick(tick + p.readEvery);
        }
      };
      const all = Promise.all(plans.map(run));
      let settled = false;
      void all.finally(() => (settled = true));
      for (; !settled; tick++) {
        if (tick > 40_000) throw new Error('the run did not finish');
        env.engine.step();
        for (const w of tickWaiters.splice(0)) {
          if (w.at <= tick) w.resolve();
          else tickWaiters.push(w);
        }
        await new Promise<void>((r) => setImmediate(r));
      }
      await all;

      expect(env.engine.submitted.length).toBe(plans.length);
      let fullRuns = 0;
      for (const r of env.engine.submitted) {
        const p = plans[r.prompt[0]! - 10_000]!;
        const g = got.get(p.req.id)!;
        const engineTokens = env.produced.get(r.id) ?? [];
        const complete = p.abortAfter === null;
        for (let c = 0; c < p.req.n; c++) {
          const want = engineTokens[c] ?? [];
          const have = g.tokens[c] ?? [];
          // Read to the end: exactly what the engine produced, in order. Stopped early: a prefix of it
          // (the engine may produce a few more tokens before the abort reaches it).
          if (complete) expect(have, `${p.req.id} choice ${c}`).toEqual(want);
          else expect(have, `${p.req.id} choice ${c} (aborted)`).toEqual(want.slice(0, have.length));
        }
        if (complete) {
          fullRuns++;
          const ref = alone(env.fakeOpts, r);
          expect(g.tokens, `${p.req.id} against the engine alone`).toEqual(ref);
          expect(g.doneTokens).toBe(ref.reduce((s, t) => s + t.length, 0));
          for (let c = 0; c < p.req.n; c++) {
            expect(g.text[c]).toBe(bundle.tokenizer.decode(g.tokens[c]!, { skipSpecialTokens: true }));
          }
        }
      }
      expect(fullRuns).toBeGreaterThan(0);
      expect(env.engine.pauses, 'slow readers filled their windows and were paused').toBeGreaterThan(0);
      expect(env.host.liveRequests).toBe(0);
    }, 120_000);
  }
});
