// The tokenizer pool's duty cycle (issue #26): while the engine has live requests, a worker tokenizing a
// large input runs BULK_SLICE_MS, then sleeps BULK_PAUSE_MS, so it holds at most a third of a core; with
// no live request it runs flat out.
// Why not the OS priority alone (./thread-priority.ts): on a 2-core host the engine's step thread keeps
// one core busy while a stream is generated, and a worker that is always runnable keeps the other; every
// serving thread (the event loops, V8's GC helpers, the client's) then waits in the run queue behind one
// of them, and nice 5 did not keep those waits short: gap.ts measured the gateway's loop waiting up to
// 200 ms and one of its GC helpers 298 ms while the worker ran, the victim's frames held back as long.
// A worker that sleeps leaves a core idle most of the time, and a woken serving thread takes it at once.
// NOTE: a third, not a half: on the 2-core host the stream being generated wants about 1.4 cores (the
// step thread one, the loops and the client the rest), so a worker at half a core still oversubscribed
// it. The cost is bulk work only: a multi-megabyte input tokenizes ~3x slower while streams run.
// Nicer levels (10, 19) were measured out before: they starved the worker for minutes instead.
// The flag lives in a SharedArrayBuffer: the main thread sets it as requests come and go, and a sleeping
// worker is woken when it drops to 0 (Atomics.notify), so the last stream's end ends the pause.

import { setPacer } from '../tokenizer/pace.js';

/** Running time of a bulk worker between two pauses while requests are live. */
export const BULK_SLICE_MS = 4;
/** A pause: the core is left to the serving threads for this long. */
export const BULK_PAUSE_MS = 8;

const LIVE = 0;

/** The main thread's side: one flag for all the pool's workers. */
export class BulkDuty {
  readonly buffer = new SharedArrayBuffer(4);
  private readonly flag = new Int32Array(this.buffer);
  /** Paused workers woken by the flag dropping to 0, all told. */
  woken = 0;

  /** Whether the engine has live requests now (cheap when unchanged). */
  set live(on: boolean) {
    const v = on ? 1 : 0;
    if (Atomics.load(this.flag, LIVE) === v) return;
    Atomics.store(this.flag, LIVE, v);
    if (v === 0) this.woken += Atomics.notify(this.flag, LIVE);
  }

  get live(): boolean {
    return Atomics.load(this.flag, LIVE) === 1;
  }
}

/** A worker's duty cycle: what it paused so far, and the call that starts a job's first slice. */
export interface DutyPacer {
  pauses: number;
  pausedMs: number;
  /** A job starts: its first slice runs in full before any pause. */
  begin(): void;
}

/**
 * A worker's side: installs the pacer that keeps the duty cycle on `buffer` (a BulkDuty's) for this
 * thread's encoders. `now` and `sleep` are the clock and the blocking wait (tests pass their own).
 */
export function installDutyPacer(
  buffer: SharedArrayBuffer,
  now: () => number = () => performance.now(),
  sleep: (flag: Int32Array, ms: number) => void = (flag, ms) => void Atomics.wait(flag, LIVE, 1, ms),
): DutyPacer {
  const flag = new Int32Array(buffer);
  let sliceStart = now();
  const duty: DutyPacer = { pauses: 0, pausedMs: 0, begin: () => (sliceStart = now()) };
  setPacer(() => {
    const t = now();
    if (Atomics.load(flag, LIVE) === 0) {
      sliceStart = t; // nothing to yield to: a slice starts whenever requests appear
      return;
    }
    if (t - sliceStart < BULK_SLICE_MS) return;
    sleep(flag, BULK_PAUSE_MS);
    sliceStart = now();
    duty.pauses++;
    duty.pausedMs += sliceStart - t;
  });
  return duty;
}
