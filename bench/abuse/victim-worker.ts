// The victim's reader on a thread of its own (./victim.ts): greedy streams one after another, each SSE
// frame's arrival taken on the host's monotonic clock, until told to stop; then the longest gap inside
// the window it is given, the most tokens one frame carried in it (the gateway merges the deltas of a
// stream that fell behind into one chunk: src/protocol/flow.ts), and every stream's token ids
// (return_token_ids) for the caller to check against the greedy continuation. NOTE: not on the thread
// that sends the attack: that thread uploads 4 MB bodies and drains megabyte answers, and a gap it made
// for itself would be counted as the server's.
import { parentPort, workerData } from 'node:worker_threads';
import { sseFrames } from '../../test/cli/process-helpers.js';
import { monotonicMs } from './clock.js';

export interface VictimWorkerData {
  base: string;
  model: string;
  prompt: string;
  maxTokens: number;
}
/** To the worker: the window to measure (monotonicMs at both ends). */
export interface VictimStop {
  start: number;
  end: number;
}
/** From the worker: 'streaming' once the first frame came; then the window's figures, or the stream's failure. */
export type VictimReport =
  | { type: 'streaming' }
  | { type: 'gap'; gapMs: number; gapAtMs: number; chunks: number; maxFrameTokens: number; streams: VictimStream[] }
  | { type: 'failed'; message: string };
/** One of the victim's streams: its token ids in the order received, and its finish reason (null: cut by the window's end). */
export interface VictimStream {
  ids: number[];
  finish: string | null;
}

const { base, model, prompt, maxTokens } = workerData as VictimWorkerData;
const port = parentPort!;
const ac = new AbortController();
const arrivals: number[] = [];
const frameTokens: number[] = []; // tokens each frame carried, by arrival
const streams: VictimStream[] = [];
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
  let maxFrameTokens = 0;
  for (const [i, t] of arrivals.entries()) {
    if (t <= start || t > end) continue;
    if (t - last > gapMs) [gapMs, gapAtMs] = [t - last, t - start];
    last = t;
    chunks++;
    maxFrameTokens = Math.max(maxFrameTokens, frameTokens[i]!);
  }
  if (end - last > gapMs) [gapMs, gapAtMs] = [end - last, end - start];
  port.postMessage({ type: 'gap', gapMs, gapAtMs, chunks, maxFrameTokens, streams } satisfies VictimReport);
});

try {
  let told = false;
  while (!ac.signal.aborted) {
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true, return_token_ids: true }),
      signal: ac.signal,
    });
    if (res.status !== 200) throw new Error(`the victim's request answered ${res.status}`);
    const stream: VictimStream = { ids: [], finish: null };
    streams.push(stream);
    for await (const frame of sseFrames(res)) {
      arrivals.push(monotonicMs());
      const choice = frame === '[DONE]' ? undefined : (JSON.parse(frame) as { choices: { token_ids?: number[]; finish_reason?: string | null }[] }).choices[0];
      const ids = choice?.token_ids ?? [];
      for (const id of ids) stream.ids.push(id);
      frameTokens.push(ids.length);
      if (choice?.finish_reason) stream.finish = choice.finish_reason;
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
