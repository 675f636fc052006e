// Bulk threads (the tokenizer pool's workers: seconds of CPU for a multi-megabyte prompt) run at a lower
// OS priority than the threads that serve streams (the engine's step thread, the sidecar's and the
// gateway's event loops). Without it, a tokenizing worker takes its fair share of a core for as long as
// it runs, and on a host with no spare core every stream's next frame queues behind it (issue #26); a
// few nice levels lower, the scheduler runs a woken serving thread first, and the worker still has
// every cycle the serving threads leave idle.
// NOTE: this is setpriority(2) on the calling thread's own id, through Node's os.setPriority (libuv's
// uv_os_setpriority is setpriority(PRIO_PROCESS, who, prio)); no native code is needed. On Linux the
// nice value is a per-thread attribute (NPTL; setpriority(2), "BUGS"), so the id from /proc/thread-self
// lowers this thread alone. Where that file is missing (not Linux), setpriority would act on the whole
// process, serving threads included, so nothing is changed: the pool's size is then the only bound.
// Nice values count within the process's scheduling group (Linux autogroup: its session), which is the
// competition that matters here: the sidecar's own threads, the gateway's, their clients'.

import { readlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';

/**
 * How many nice levels a bulk thread sits below the thread that started it (whose value it inherits;
 * a sidecar run under `nice` keeps the same distance). Each level is ~1.25x less CPU when threads
 * contend: at 5, a serving thread woken beside a busy worker gets ~3x its share and runs first.
 * NOTE: not 19. With 19 (and 10), a worker beside an engine that steps without pause (a stream being
 * generated) got almost no CPU on a loaded host, and 4 x /tokenize of 4 MB took minutes
 * (bench/results/abuse-gap.json): bulk work must be slower under contention, not stopped.
 */
export const BULK_NICE = 5;

export type ThreadPriority = { tid: number; nice: number } | { tid: null; reason: string };

/** The calling thread's kernel id (Linux), or null where /proc/thread-self does not exist. */
export function threadId(): number | null {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').at(-1)); // "PID/task/TID"
    return Number.isInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/**
 * Lowers the calling thread by BULK_NICE levels and names it (`top -H`, /proc/PID/task/TID/comm: at most 15
 * bytes). Never throws: where the priority cannot be set, the reason comes back.
 */
export function becomeBulkThread(name: string): ThreadPriority {
  // Once per thread: a worker started as a bulk thread (./ts-worker.ts) calls it again from its entry.
  // NOTE: module state is per thread here (each worker loads its own copy of this module).
  return (lowered ??= lower(name));
}

let lowered: ThreadPriority | undefined;

function lower(name: string): ThreadPriority {
  const tid = threadId();
  if (tid === null) return { tid: null, reason: 'no per-thread priority on this platform (/proc/thread-self is missing)' };
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15));
  } catch {
    // a name is a convenience for whoever inspects the threads; the priority below is what matters
  }
  try {
    os.setPriority(tid, Math.min(19, os.getPriority(tid) + BULK_NICE));
    return { tid, nice: os.getPriority(tid) };
  } catch (err) {
    return { tid: null, reason: `setpriority failed: ${(err as Error).message}` };
  }
}
