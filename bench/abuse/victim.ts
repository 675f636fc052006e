// The victim of the large-input attacks (issue #26): greedy streams against a running `serve`, one after
// another, while an attack runs; measured by the longest gap between consecutive chunks. Shared by the
// e2e test (test/cli/abuse-engine.e2e.test.ts) and the profiling run (bench/abuse/gap.ts).
import { sibling, startTsWorker } from '../../src/sidecar/server/ts-worker.js';
import { monotonicMs } from './clock.js';
import type { VictimReport, VictimStop, VictimStream, VictimWorkerData } from './victim-worker.js';

export { monotonicMs };
export type { VictimStream };

/** The victim's prompt: greedy with ignore_eos, so every one of its streams is a prefix of one fixed continuation. */
export const VICTIM_PROMPT = 'Once upon a time';

export interface VictimGap<T> {
  /** The longest gap between two consecutive SSE frames of the victim while `during` ran. */
  gapMs: number;
  /** When that gap ended, from the start of `during`. */
  gapAtMs: number;
  /** That gap's ends on the host's monotonic clock (monotonicMs). */
  gapWindow: [number, number];
  /** Frames received while `during` ran. */
  chunks: number;
  /** The most tokens one of those frames carried (a stream that fell behind gets its deltas merged). */
  maxFrameTokens: number;
  /** Every victim stream of the call (ids as received, finish reason or null when cut at the end). */
  streams: VictimStream[];
  result: T;
}

/**
 * POST JSON; `body` may be serialized already, best as its UTF-8 bytes (jsonBytes): a 4 MB body then costs
 * the caller one block copy in a measured window, not a UTF-8 encoding pass on the event loop that
 * timestamps the victim (fetch encodes a string body synchronously, all of Promise.all's at once).
 */
export const postJson = (base: string, p: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${base}${p}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body instanceof Uint8Array ? (body as Uint8Array<ArrayBuffer>) : typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });

/** A request body serialized ahead of the window it is sent in (see postJson). */
export const jsonBytes = (body: unknown): Uint8Array<ArrayBuffer> => new TextEncoder().encode(JSON.stringify(body));

/** Reads a body to its end without parsing it (a 6 MB JSON parse here would stall this process's own clock). */
export async function drain(res: Response): Promise<{ bytes: number; head: string }> {
  const reader = res.body!.getReader();
  let bytes = 0;
  let head = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { bytes, head };
    if (bytes === 0) head = new TextDecoder().decode(value.slice(0, 200));
    bytes += value.length;
  }
}

/**
 * Greedy streams of `model`, one after another, for as long as `during` runs (one stream of
 * `maxTokens` may end before the attack does), read on a worker thread of this process
 * (./victim-worker.ts): the victim is another client than the attacker, and this thread's own work
 * (sending the attack, draining its answers) must not count as the server's. Returns the longest gap
 * between consecutive chunks while `during` ran (across stream boundaries too: a new stream's first
 * chunk comes after its request went through the same event loops), and the number of chunks in that window.
 */
export async function victimGap<T>(base: string, model: string, during: () => Promise<T>, maxTokens = 1900): Promise<VictimGap<T>> {
  const worker = startTsWorker(sibling(import.meta.url, 'victim-worker'), { base, model, prompt: VICTIM_PROMPT, maxTokens } satisfies VictimWorkerData);
  const reports: VictimReport[] = [];
  let wake: () => void = () => undefined;
  worker.on('message', (r: VictimReport) => {
    reports.push(r);
    wake();
  });
  worker.on('error', (e) => {
    reports.push({ type: 'failed', message: e.message });
    wake();
  });
  const next = async (): Promise<VictimReport> => {
    while (reports.length === 0) await new Promise<void>((r) => (wake = r));
    return reports.shift()!;
  };
  try {
    const first = await next(); // the stream is under way
    if (first.type !== 'streaming') throw new Error(`the victim failed before the attack: ${first.type === 'failed' ? first.message : first.type}`);
    const start = monotonicMs();
    const result = await during();
    const end = monotonicMs();
    worker.postMessage({ start, end } satisfies VictimStop);
    const r = await next();
    if (r.type !== 'gap') throw new Error(`the victim's stream failed: ${r.type === 'failed' ? r.message : r.type}`);
    return { gapMs: r.gapMs, gapAtMs: r.gapAtMs, gapWindow: [start + r.gapAtMs - r.gapMs, start + r.gapAtMs], chunks: r.chunks, maxFrameTokens: r.maxFrameTokens, streams: r.streams, result };
  } finally {
    await worker.terminate();
  }
}
