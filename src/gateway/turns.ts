// Heavy steps of large requests, one per event-loop turn (issue #26). Reading a 4 MB JSON body is a few
// whole-body passes (UTF-8 decode, nesting scan, JSON.parse, then validation and encoding for the
// engine), each synchronous. Run back to back, and back to back with other large requests' passes (all
// their timers fire in the same timers phase), they held this thread for seconds on a loaded host while
// every stream it serves waited. Awaiting nextTurn() before each pass puts I/O (other requests' chunks)
// between any two passes, of this request or another.
// NOTE: module state on purpose: the event loop it paces is the process's one.

let last: Promise<void> = Promise.resolve();

/** Resolves on a later event-loop turn than every earlier caller's turn (FIFO). */
export function nextTurn(): Promise<void> {
  const turn = last.then(() => new Promise<void>((resolve) => setTimeout(resolve, 0)));
  last = turn;
  return turn;
}
