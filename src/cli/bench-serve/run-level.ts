// One level of a sweep: requests released at their arrival offsets (./rng.ts arrivalOffsetsMs), at
// most `maxConcurrency` in flight (a request that arrives while the limit is reached waits for a slot,
// as vLLM's semaphore), each run by the executor. Records when each started and what it returned.

import type { BenchPrompt } from './dataset.js';
import type { Executor } from './executor.js';
import type { RequestResult } from './request.js';

export interface TimedResult extends RequestResult {
  /** ms after the level started when the request was sent (after any wait for a slot). */
  startMs: number;
  /** Prompt tokens as the dataset built them (the fallback when the server reports no usage). */
  datasetPromptTokens: number;
}

export interface LevelRun {
  results: TimedResult[];
  durationS: number;
  /** Most requests in flight at once. */
  peakInFlight: number;
  /** Client CPU time (user + system, all threads) over the level, and the utilisation of each client thread. */
  cpuS: number;
  threadUtilisation: number[];
  /** Client threads that ran requests (1: the main thread alone). */
  threads: number;
}

export async function runLevel(
  prompts: readonly BenchPrompt[],
  arrivalsMs: readonly number[],
  maxConcurrency: number | null,
  executor: Executor,
  onDone: (r: TimedResult) => void = () => {},
): Promise<LevelRun> {
  const limit = maxConcurrency ?? Infinity;
  const waiting: (() => void)[] = [];
  let inFlight = 0;
  let peak = 0;
  const results: TimedResult[] = new Array<TimedResult>(prompts.length);
  await executor.utilisation(); // resets the per-thread counters
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();

  const slot = (): Promise<void> => {
    if (inFlight < limit) {
      inFlight++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => waiting.push(resolve)); // inFlight handed over by release()
  };
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else inFlight--;
  };

  const runs: Promise<void>[] = [];
  for (let i = 0; i < prompts.length; i++) {
    // Timers fire on the loop's cached millisecond clock, up to a millisecond early: re-check.
    for (let wait = t0 + arrivalsMs[i]! - performance.now(); wait > 0; wait = t0 + arrivalsMs[i]! - performance.now()) {
      await new Promise((r) => setTimeout(r, Math.ceil(wait)));
    }
    const p = prompts[i]!;
    runs.push(
      slot().then(async () => {
        peak = Math.max(peak, inFlight);
        const startMs = performance.now() - t0;
        const r = await executor.send(p);
        release();
        results[i] = { ...r, startMs, datasetPromptTokens: p.promptTokens };
        onDone(results[i]);
      }),
    );
  }
  await Promise.all(runs);
  const durationS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { results, durationS, peakInFlight: peak, cpuS: (cpu.user + cpu.system) / 1e6, threadUtilisation: await executor.utilisation(), threads: executor.threads };
}
