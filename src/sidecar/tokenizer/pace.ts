// Pace points for bulk tokenizing. A multi-megabyte input is one synchronous encode call (SentencePiece
// BPE merges the whole run at once), so a worker that must yield the CPU part of the time (the tokenizer
// pool's duty cycle while streams are live: ../server/bulk-duty.ts) can only do it from inside the
// encoder's loops. The encoders call `pacePoint()` once per unit of work (a symbol, a merge, a word);
// every PACE_EVERY calls it runs the thread's pacer, which may block the thread for a while (a worker
// may block; nothing else installs a pacer).
// Cost where no pacer is installed (the main thread, inline tokenizing): one null check per call.

/** Calls to pacePoint between two pacer runs: ~50-100 us of BPE work, so a pacer's clock reads are rare. */
export const PACE_EVERY = 1024;

let pacer: (() => void) | null = null;
let countdown = PACE_EVERY;

/** Installs this thread's pacer (null removes it). */
export function setPacer(fn: (() => void) | null): void {
  pacer = fn;
  countdown = PACE_EVERY;
}

/** One unit of encoder work done; every PACE_EVERY units the pacer runs (and may block this thread). */
export function pacePoint(): void {
  if (pacer !== null && --countdown <= 0) {
    countdown = PACE_EVERY;
    pacer();
  }
}
