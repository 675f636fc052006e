// The tokenizer pool's duty cycle (issue #26): while the engine has live requests, a worker tokenizing a
// large input checks after each BULK_SLICE_MS of work whether it had its core to itself; if the
// scheduler kept it waiting (some other thread wanted that core: the host is saturated), it sleeps
// BULK_PAUSE_MS before going on, so under contention it holds at most a third of a core. With no live
// request, or cores to spare, it runs flat out.
// Why not the OS priority alone (./thread-priority.ts): on a 2-core host the engine's step thread keeps
// one core busy while a stream is generated, and a worker that is always runnable keeps the other; every
// serving thread (the event loops, V8's GC helpers, the client's) then waits in the run queue behind one
// of them, and nice 5 did not keep those waits short: gap.ts measured the gateway's loop waiting up to
// 200 ms and one of its GC helpers 298 ms while the worker ran, the victim's frames held back as long.
// A worker that sleeps leaves a core idle most of the time, and a woken serving thread takes it at once.
// NOTE: a third, not a half: on the 2-core host the stream being generated wants about 1.4 cores (the
// step thread one, the loops and the client the rest), so a worker at half a core still oversubscribed
// it. Nicer levels (10, 19) were measured out before: they starved the worker for minutes instead.
// Why only when contended: a serving host has streams live nearly always, and pausing regardless made
// every large prompt (a long RAG context over the pool's 16 Ki-character threshold) tokenize 3x slower
// on hosts with idle cores. Contended means more runnable threads than this process's cores: the
// kernel's count of runnable threads (/proc/loadavg's fourth field, host-wide) against
// os.availableParallelism(); where that file is missing the worker pauses whenever requests are live.
// NOTE: not the worker's own run-queue wait (schedstat): measured, the worker ran 124 ms with no wait
// at all while the gateway's loop and the client waited 114 ms on the other core, so the waits it
// causes need not show on its own counter.
// The flag lives in a SharedArrayBuffer: the main thread sets it as requests come and go, and a sleeping
// worker is woken when it drops to 0 (Atomics.notify), so the last stream's end ends the pause.

import { openSync, readSync } from 'node:fs';
import { availableParallelism } from 'node:os';
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
 * thread's encoders. `now`, `sleep` and `contended` (whether threads wait for a core now) are the
 * clock, the blocking wait and the host's state (tests pass their own).
 */
export function installDutyPacer(
  buffer: SharedArrayBuffer,
  now: () => number = () => performance.now(),
  sleep: (flag: Int32Array, ms: number) => void = (flag, ms) => void Atomics.wait(flag, LIVE, 1, ms),
  contended: () => boolean = hostSaturated(),
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
    if (!contended()) {
      sliceStart = t; // cores to spare: nobody to yield to
      return;
    }
    sleep(flag, BULK_PAUSE_MS);
    sliceStart = now();
    duty.pauses++;
    duty.pausedMs += sliceStart - t;
  });
  return duty;
}

/**
 * Whether more threads are runnable on the host than this process has cores (this thread included):
 * /proc/loadavg's "running/total" field, read through a descriptor kept open (one syscall a call).
 * Where it cannot be read, always true.
 */
export function hostSaturated(cores: number = availableParallelism()): () => boolean {
  let fd: number;
  try {
    fd = openSync('/proc/loadavg', 'r');
  } catch {
    return () => true;
  }
  const buf = Buffer.alloc(128);
  return () => {
    const text = buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, 0));
    const running = Number(/ (\d+)\//.exec(text)?.[1] ?? Infinity);
    return running > cores;
  };
}
