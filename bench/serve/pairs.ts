// bench:serve's TTFT requests: for each prompt, one request straight into the in-process engine and
// the same prompt through each server under test (the checkout's; with --against, also another
// checkout's), one request at a time. The order within a tuple rotates through every permutation, so
// no arm always runs first (after an idle gap) or right after another arm's engine step.
import type { NativeEngine, StepOutput } from '../../src/sidecar/engine/native-engine.js';
import type { BenchRequest } from '../engine/workload.js';
import { directOne, type DirectTiming } from './direct.js';
import { streamOne, type StreamCall, type StreamTiming } from './http.js';

export interface Tuples {
  direct: DirectTiming[];
  /** Per server, in the order of `bases`: its timing of each prompt, aligned with `direct`. */
  http: StreamTiming[][];
}

/** Every ordering of 0..n-1 (n ≤ 4 here), in a fixed order. */
export function permutations(n: number): number[][] {
  if (n <= 1) return [[0]];
  return permutations(n - 1).flatMap((p) => Array.from({ length: n }, (_, at) => [...p.slice(0, at), n - 1, ...p.slice(at)]));
}

/**
 * Runs `prompts` (the first `warmup` of them unrecorded) against the engine and every base URL.
 * `measuring()` is awaited once, before the first recorded tuple (bench:serve --sched starts perf there).
 */
export async function runTuples(
  engine: NativeEngine,
  setSink: (f: (outs: StepOutput[]) => void) => void,
  prompts: { call: StreamCall; direct: BenchRequest }[],
  bases: string[],
  warmup: number,
  firstId: number,
  measuring: () => Promise<void> = async () => undefined,
): Promise<Tuples> {
  const out: Tuples = { direct: [], http: bases.map(() => []) };
  // Arm 0 is the engine, arm k > 0 the server bases[k - 1].
  const orders = permutations(1 + bases.length);
  for (let i = 0; i < prompts.length; i++) {
    if (i === warmup) await measuring();
    const { call, direct } = prompts[i]!;
    let d: DirectTiming | null = null;
    const h: StreamTiming[] = [];
    for (const arm of orders[i % orders.length]!) {
      if (arm === 0) d = await directOne(engine, setSink, direct, firstId + i);
      else h[arm - 1] = await streamOne(bases[arm - 1]!, call);
    }
    if (i < warmup) continue;
    out.direct.push(d!);
    h.forEach((t, k) => out.http[k]!.push(t));
  }
  return out;
}
