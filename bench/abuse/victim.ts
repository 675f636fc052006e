// The victim of the large-input attacks (issue #26): greedy streams against a running `serve`, one after
// another, while an attack runs; measured by the longest gap between consecutive chunks. Shared by the
// e2e test (test/cli/abuse-engine.e2e.test.ts) and the profiling run (bench/abuse/gap.ts).
import { sseFrames } from '../../test/cli/process-helpers.js';

/** The host's monotonic clock in ms (process.hrtime: CLOCK_MONOTONIC, the clock of V8's CPU profiles and /proc samples). */
export const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

export interface VictimGap<T> {
  /** The longest gap between two consecutive SSE frames of the victim while `during` ran. */
  gapMs: number;
  /** When that gap ended, from the start of `during`. */
  gapAtMs: number;
  /** That gap's ends on the host's monotonic clock (monotonicMs). */
  gapWindow: [number, number];
  /** Frames received while `during` ran. */
  chunks: number;
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
 * `maxTokens` may end before the attack does). Returns the longest gap between consecutive chunks
 * while `during` ran (across stream boundaries too: a new stream's first chunk comes after its request
 * went through the same event loops), and the number of chunks in that window.
 */
export async function victimGap<T>(base: string, model: string, during: () => Promise<T>, maxTokens = 1900): Promise<VictimGap<T>> {
  const ac = new AbortController();
  const stream = async function* () {
    while (!ac.signal.aborted) {
      const res = await postJson(base, '/v1/completions', { model, prompt: 'Once upon a time', max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true }, ac.signal);
      if (res.status !== 200) throw new Error(`the victim's request answered ${res.status}`);
      yield* sseFrames(res);
    }
  };
  const frames = stream();
  await frames.next(); // the stream is under way
  let window = false;
  let last = 0;
  let gapMs = 0;
  let gapAtMs = 0;
  let start = 0;
  let chunks = 0;
  let failure: unknown = null;
  const reading = (async () => {
    try {
      for await (const _ of frames) {
        const now = monotonicMs();
        if (window) {
          if (now - last > gapMs) [gapMs, gapAtMs] = [now - last, now - start];
          chunks++;
        }
        last = now;
      }
    } catch (e) {
      if (!ac.signal.aborted) failure = e;
    }
  })();
  last = start = monotonicMs();
  window = true;
  const result = await during();
  window = false;
  const end = monotonicMs();
  if (end - last > gapMs) [gapMs, gapAtMs] = [end - last, end - start]; // a stall still open at the end counts too
  ac.abort();
  await reading;
  if (failure) throw failure;
  return { gapMs, gapAtMs, gapWindow: [start + gapAtMs - gapMs, start + gapAtMs], chunks, result };
}
