// The grammar masks' shared buffer, one per constrained request, written by its grammar worker and read
// by the native engine's step thread (native/src/engine/request.h has the same layout). Int32 words:
//   [0, n)              ready[i]: the output length choice i's mask row is valid for (-1: none yet;
//                       MASK_FAILED: its matcher rejected a token, the engine ends the choice with an error)
//   [n + i*W, n+(i+1)*W) choice i's row: bit t % 32 of word t / 32 set = token t allowed
// W = ceil(vocab / 32) over the model's vocabulary (config.json's vocab_size, which may exceed the
// tokenizer's: the padding ids are never allowed). The worker writes a row, then publishes it with
// Atomics.store on ready[i]; the engine reads it once ready[i] equals the choice's output length.

export const MASK_FAILED = -2;

export function maskWords(vocabSize: number): number {
  return Math.ceil(vocabSize / 32);
}

/** A request's buffer: n ready words (-1) then n rows of `words`. */
export function allocateMasks(n: number, words: number): Int32Array {
  const buf = new Int32Array(new SharedArrayBuffer(4 * n * (1 + words)));
  buf.fill(-1, 0, n);
  return buf;
}

/** Choice `index`'s row in the buffer (a view). */
export function maskRow(buf: Int32Array, n: number, words: number, index: number): Int32Array {
  return buf.subarray(n + index * words, n + (index + 1) * words);
}

/**
 * A grammar worker's step counters: Float64 slots of a SharedArrayBuffer the worker alone writes and
 * the pool reads (GrammarPool.maskStats), so measuring costs no message.
 */
export const enum MaskCounter {
  Batches, // 'tokens' messages handled (one per engine step that had tokens for this worker)
  Rows, // tokens accepted and masks written
  BusyMs, // time spent accepting tokens and writing masks
  HopMs, // time from flush() posting a batch to the worker starting on it (queueing + delivery)
  Length,
}
