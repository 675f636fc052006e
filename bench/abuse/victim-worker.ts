// The victim's reader on a thread of its own (./victim.ts): greedy streams one after another, each SSE
// frame's arrival taken on the host's monotonic clock, until told to stop; then the longest gap inside
// the window it is given. NOTE: not on the thread that sends the attack: that thread uploads 4 MB bodies
// and drains megabyte answers, and a gap it made for itself would be counted as the server's.
import { parentPort, workerData } from 'node:worker_threads';
import { sseFrames } from '../../test/cli/process-helpers.js';
import { monotonicMs } from './clock.js';

export interface VictimWorkerData {
  base: string;
  model: string;
  maxTokens: number;
}
/** To the worker: the window to measure (monotonicMs at both ends). */
export interface VictimStop {
  start: number;
  end: number;
}
/** From the worker: 'streaming' once the first frame came; then the window's figures, or the stream's failure. */
export type VictimReport = { type: 'streaming' } | { type: 'gap'; gapMs: number; gapAtMs: number; chunks: number } | { type: 'failed'; message: string };

const { base, model, maxTokens } = workerData as VictimWorkerData;
const port = parentPort!;
const ac = new AbortController();
const arrivals: number[] = [];
let failure: string | null = null;

port.once('message', ({ start, end }: VictimStop) => {
  ac.abort();
  if (failure) return port.postMessage({ type: 'failed', message: failure } satisfies VictimReport);
  // As the reader on the attack's thread measured it: from the window's start, each frame's gap to the
  // one before, and a stall still open at the window's end.
  let last = start;
  let gapMs = 0;
  let gapAtMs = 0;
  let chunks = 0;
  for (const t of arrivals) {
    if (t <= start || t > end) continue;
    if (t - last > gapMs) [gapMs, gapAtMs] = [t - last, t - start];
    last = t;
    chunks++;
  }
  if (end - last > gapMs) [gapMs, gapAtMs] = [end - last, end - start];
  port.postMessage({ type: 'gap', gapMs, gapAtMs, chunks } satisfies VictimReport);
});

try {
  let told = false;
  while (!ac.signal.aborted) {
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, prompt: 'Once upon a time', max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true }),
      signal: ac.signal,
    });
    if (res.status !== 200) throw new Error(`the victim's request answered ${res.status}`);
    for await (const _ of sseFrames(res)) {
      arrivals.push(monotonicMs());
      if (!told) {
        told = true;
        port.postMessage({ type: 'streaming' } satisfies VictimReport);
      }
    }
  }
} catch (e) {
  if (!ac.signal.aborted) {
    failure = (e as Error).message;
    port.postMessage({ type: 'failed', message: failure } satisfies VictimReport);
  }
}
