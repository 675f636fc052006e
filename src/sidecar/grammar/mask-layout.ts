// The grammar's shared buffer, one per constrained request, between its grammar worker and the native
// engine's step thread (native/src/engine/request.h has the same layout). Int32 words, n choices:
//   [0, n)              ready[i]: the output length choice i's mask row is valid for (-1: none yet;
//                       MASK_FAILED: its matcher rejected a token, the engine ends the choice with an error)
//   [n, 2n)             posted[i]: choice i's output length after its latest token (0: none yet)
//   [2n, 3n)            token[i]: that token
//   [3n + i*W, …+W)     choice i's row: bit t % 32 of word t / 32 set = token t allowed
// W = ceil(vocab / 32) over the model's vocabulary (config.json's vocab_size, which may exceed the
// tokenizer's: the padding ids are never allowed). The worker writes a row, then publishes it with
// Atomics.store on ready[i]; the engine reads it once ready[i] equals the choice's output length.
// After each step the engine writes every constrained choice that goes on its new token, then
// posted[i] (a release store), and rings the process's grammar bell (native/src/engine/grammar_bell.h):
// the workers wake, accept the tokens and publish the next rows without the sidecar's main thread.

export const MASK_FAILED = -2;
/** Words per choice before the rows: ready, posted, token. */
export const MASK_HEADER = 3;

export function maskWords(vocabSize: number): number {
  return Math.ceil(vocabSize / 32);
}

/** A request's buffer: n ready words (-1), n posted and n token words (0), then n rows of `words`. */
export function allocateMasks(n: number, words: number): Int32Array {
  const buf = new Int32Array(new SharedArrayBuffer(4 * n * (MASK_HEADER + words)));
  buf.fill(-1, 0, n);
  return buf;
}

/** Where choice `index`'s row starts in the buffer. */
export function maskRowStart(n: number, words: number, index: number): number {
  return MASK_HEADER * n + index * words;
}

/** Choice `index`'s row in the buffer (a view). */
export function maskRow(buf: Int32Array, n: number, words: number, index: number): Int32Array {
  const at = maskRowStart(n, words, index);
  return buf.subarray(at, at + words);
}

/** Choice `index`'s latest posted token and the output length it makes (0: none yet). */
export function postedToken(buf: Int32Array, n: number, index: number): { posted: number; token: number } {
  const posted = Atomics.load(buf, n + index); // before the token: the engine stores the token first
  return { posted, token: Atomics.load(buf, 2 * n + index) };
}

/** The engine's part (native RequestSpec::post_token), for tests that play the engine. */
export function postToken(buf: Int32Array, n: number, index: number, token: number, outputs: number): void {
  Atomics.store(buf, 2 * n + index, token);
  Atomics.store(buf, n + index, outputs);
}

/**
 * A grammar worker's step counters: Float64 slots of a SharedArrayBuffer the worker alone writes and
 * the pool reads (GrammarPool.maskStats), so measuring costs no message.
 */
export const enum MaskCounter {
  Batches, // wake-ups that found posted tokens (one per engine step that had tokens for this worker)
  Rows, // tokens accepted and masks written
  BusyMs, // time spent accepting tokens and writing masks
  HopMs, // time from the engine ringing the bell to the worker starting on the step's tokens
  Length,
}
