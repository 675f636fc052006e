// Per-thread CPU time and run-queue wait of a few processes, sampled from /proc (Linux only):
// /proc/PID/task/TID/schedstat is "ns on a CPU, ns runnable but waiting for one, timeslices", and
// /proc/PID/task/TID/comm the thread's name. A stream stall seen by a client is one of: a thread on
// its path busy without a break (run time fills the stall: bench/abuse/stalls.ts says on what), or
// that thread runnable but not running (wait time fills it: the host's scheduling).
// Thread names: Node names every thread "node"; the sidecar's tokenizer workers name themselves
// (src/sidecar/server/thread-priority.ts), the main thread's tid is its pid.
import { readdirSync, readFileSync } from 'node:fs';
import { monotonicMs } from './victim.js';

export interface ThreadUse {
  pid: number;
  tid: number;
  name: string;
  runMs: number;
  waitMs: number;
}

interface Sample {
  atMs: number; // host monotonic clock (process.hrtime)
  threads: Map<number, { pid: number; name: string; run: number; wait: number }>;
}

function read(pid: number, into: Sample['threads']): void {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return; // exited
  }
  for (const t of tids) {
    try {
      const [run, wait] = readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ').map(Number);
      const name = Number(t) === pid ? 'main' : readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
      into.set(Number(t), { pid, name, run: run! / 1e6, wait: wait! / 1e6 });
    } catch {
      // the thread ended between the listing and the read
    }
  }
}

/** Samples every `everyMs` until stop(); use(from, to) is each thread's share of a window. */
export class ThreadSampler {
  private samples: Sample[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly pids: number[],
    private readonly everyMs = 10,
  ) {}

  get startedMs(): number {
    return this.samples[0]?.atMs ?? 0;
  }

  get stoppedMs(): number {
    return this.samples.at(-1)?.atMs ?? 0;
  }

  start(): this {
    this.tick();
    this.timer = setInterval(() => this.tick(), this.everyMs);
    return this;
  }

  /** Stops sampling after a last sample. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.timer) this.tick();
    this.timer = null;
  }

  private tick(): void {
    const s: Sample = { atMs: monotonicMs(), threads: new Map() };
    for (const pid of this.pids) read(pid, s.threads);
    this.samples.push(s);
  }

  /** Each thread's run and wait time between the last sample at or before `from` and the first at or after `to`, busiest first. */
  use(fromMs: number, toMs: number): { fromMs: number; toMs: number; threads: ThreadUse[] } {
    const a = [...this.samples].reverse().find((s) => s.atMs <= fromMs) ?? this.samples[0]!;
    const b = this.samples.find((s) => s.atMs >= toMs) ?? this.samples.at(-1)!;
    const threads: ThreadUse[] = [];
    for (const [tid, end] of b.threads) {
      const begin = a.threads.get(tid) ?? { run: 0, wait: 0 };
      const runMs = end.run - begin.run;
      const waitMs = end.wait - begin.wait;
      if (runMs + waitMs >= 1) threads.push({ pid: end.pid, tid, name: end.name, runMs: +runMs.toFixed(1), waitMs: +waitMs.toFixed(1) });
    }
    return { fromMs: +(a.atMs - fromMs).toFixed(1), toMs: +(b.atMs - toMs).toFixed(1), threads: threads.sort((x, y) => y.runMs + y.waitMs - (x.runMs + x.waitMs)) };
  }
}
