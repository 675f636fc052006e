// A probe of this thread's event loop in CPU time, for tests and benchmarks (issue #26): how long the
// loop ran JS or native work without getting back to its timers, whatever the host's load.
//
// A timer every INTERVAL_MS reads the thread's own /proc/thread-self/schedstat ("ns on a CPU, ns
// runnable but waiting for one, timeslices"). The CPU time between two consecutive ticks is the work the
// loop did in between: a callback that holds the loop for 300 ms of CPU shows as one 300 ms interval,
// however long the host kept the thread waiting, and many short callbacks show as many short ones
// (a tick runs in every loop iteration once due, so an interval holds at most INTERVAL_MS of wall
// time plus one iteration's work). The run-queue wait of the same intervals is reported apart: it is
// the host's (a runnable thread not given a core), not the server's. The kernel brings a running
// thread's counter up to date at each scheduler tick (4 ms at HZ 250) and at each switch, so a figure
// is good to about one tick. A stretch can also be catch-up: work that queued while the host kept the
// thread off a core (the engine's step results), done in one go once it is back.
//
// Off unless ERNIE_EDGE_LOOP_PROBE=1 (main.ts, every role; `serve`'s sidecar child inherits it). Then
// each SIGUSR2 logs one line `loop probe` with the figures since the previous one (or since start) and
// starts a new window, so a test brackets an attack with two signals to each process.
// Linux only (/proc/thread-self, 3.17+, with schedstats); elsewhere the line says why there are no figures.

import { closeSync, openSync, readSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import type { Logger } from '../protocol/logger.js';

/** Tick period of the probe's timer (ms): an interval's CPU time overstates the longest single run by at most about this. */
export const INTERVAL_MS = 2;

/**
 * How far a figure can be off (ms): the kernel updates a running thread's counter at its scheduler
 * tick (HZ 100 at the coarsest: 10 ms) and at each switch, so one interval can read CPU time that ran
 * in the one before it, and an interval's CPU time can exceed its wall time by up to this.
 */
export const COUNTER_RESOLUTION_MS = 10;

/** A thread's scheduler counters, ns. */
export interface Schedstat {
  runNs: number;
  waitNs: number;
}

/** The figures of one window (ms). */
export interface LoopProbeWindow {
  /** Wall time of the window. */
  windowMs: number;
  /** Ticks of the probe in the window (intervals measured). */
  turns: number;
  /** The most CPU time the thread spent between two consecutive ticks: its longest run of work without yielding to the loop's timers. */
  maxCpuMs: number;
  /** That interval's wall time (CPU + run-queue wait + time blocked, e.g. idle in epoll). */
  maxCpuWallMs: number;
  /** The most run-queue wait in one interval: how long the host kept the runnable thread off a core. */
  maxWaitMs: number;
  /** CPU time and run-queue wait over the whole window. */
  cpuMs: number;
  waitMs: number;
  /**
   * With a GC log: the longest stretch less the garbage collector's pauses inside it (V8's, on this
   * thread: on a host whose cores are taken, the collector's helper threads get no core and its work
   * lands on the main thread), the GC pause time inside the longest stretch, and all pauses in the window.
   */
  maxCpuLessGcMs?: number;
  maxCpuGcMs?: number;
  gcMs?: number;
}

/** Garbage-collector pauses of this thread (performance.now() times), from a PerformanceObserver. */
export class GcLog {
  private readonly pauses: { start: number; end: number }[] = [];
  private readonly observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) this.pauses.push({ start: e.startTime, end: e.startTime + e.duration });
    const cut = this.pauses.findIndex((p) => p.end > performance.now() - GC_KEEP_MS);
    if (cut > 0) this.pauses.splice(0, cut);
  });

  constructor() {
    this.observer.observe({ entryTypes: ['gc'] });
  }

  /** Pause time (ms) inside [from, to]. */
  within(from: number, to: number): number {
    let ms = 0;
    for (const p of this.pauses) ms += Math.max(0, Math.min(to, p.end) - Math.max(from, p.start));
    return ms;
  }

  close(): void {
    this.observer.disconnect();
  }
}

/** How long the GC log keeps pauses (ms): longer than any window a test or benchmark takes. */
const GC_KEEP_MS = 600_000;
/** Intervals of more CPU than this (ms) are kept for the GC accounting; the rest only raise a maximum. */
const LONG_INTERVAL_MS = 10;
/** At most this many long intervals per window (the longest kept). */
const MAX_LONG_INTERVALS = 256;

/** Reads the calling thread's schedstat, through a descriptor opened on this thread (it stays that thread's). Null where there is none. */
export function threadSchedstat(): { read: () => Schedstat; close: () => void } | null {
  let fd: number;
  try {
    fd = openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    return null;
  }
  const buf = Buffer.alloc(96);
  return {
    // NOTE: a positioned read at 0 regenerates a /proc seq file: one syscall per sample, no open/close.
    read: () => {
      const text = buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, 0));
      const sp = text.indexOf(' ');
      return { runNs: Number(text.slice(0, sp)), waitNs: Number(text.slice(sp + 1, text.indexOf(' ', sp + 1))) };
    },
    close: () => closeSync(fd),
  };
}

export class LoopProbe {
  private timer: NodeJS.Timeout | null = null;
  private last: Schedstat & { at: number };
  private w!: LoopProbeWindow & { startedAt: number };

  // This window's intervals of more than LONG_INTERVAL_MS of CPU, and the most CPU of the others.
  private long: { cpu: number; from: number; to: number }[] = [];
  private shortMax = 0;

  constructor(
    private readonly stat: { read: () => Schedstat },
    private readonly intervalMs = INTERVAL_MS,
    private readonly gc: Pick<GcLog, 'within'> | null = null,
  ) {
    this.last = { ...stat.read(), at: performance.now() };
    this.reset();
  }

  /** Starts ticking (the timer does not keep the process alive). */
  start(): this {
    this.timer ??= setInterval(() => this.sample(), this.intervalMs).unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Closes the current interval and returns the window's figures; a new window starts. */
  take(): LoopProbeWindow {
    this.sample();
    const { startedAt, ...w } = this.w;
    this.reset();
    const ms = (x: number) => +x.toFixed(2);
    const out: LoopProbeWindow = { windowMs: ms(this.last.at - startedAt), turns: w.turns, maxCpuMs: ms(w.maxCpuMs), maxCpuWallMs: ms(w.maxCpuWallMs), maxWaitMs: ms(w.maxWaitMs), cpuMs: ms(w.cpuMs), waitMs: ms(w.waitMs) };
    if (this.gc) {
      // Pauses are reported after they end, so they are matched to intervals here, not as they close.
      const gc = this.gc;
      const top = this.long.reduce((a, b) => (b.cpu > a.cpu ? b : a), { cpu: 0, from: 0, to: 0 });
      // A pause is wall time: where the host kept the thread waiting during it, this subtracts that wait
      // too (lenient by at most the interval's run-queue wait; the figure with pauses stays beside it).
      const lessGc = this.long.reduce((m, i) => Math.max(m, i.cpu - gc.within(i.from, i.to)), this.shortMax);
      Object.assign(out, { maxCpuLessGcMs: ms(lessGc), maxCpuGcMs: ms(top.cpu > 0 ? gc.within(top.from, top.to) : 0), gcMs: ms(gc.within(startedAt, this.last.at)) });
    }
    this.long = [];
    this.shortMax = 0;
    return out;
  }

  private reset(): void {
    this.w = { startedAt: this.last.at, windowMs: 0, turns: 0, maxCpuMs: 0, maxCpuWallMs: 0, maxWaitMs: 0, cpuMs: 0, waitMs: 0 };
  }

  private sample(): void {
    const now = { ...this.stat.read(), at: performance.now() };
    const cpu = (now.runNs - this.last.runNs) / 1e6;
    const wait = (now.waitNs - this.last.waitNs) / 1e6;
    const w = this.w;
    w.turns++;
    w.cpuMs += cpu;
    w.waitMs += wait;
    if (cpu > w.maxCpuMs) [w.maxCpuMs, w.maxCpuWallMs] = [cpu, now.at - this.last.at];
    if (this.gc) {
      if (cpu <= LONG_INTERVAL_MS) this.shortMax = Math.max(this.shortMax, cpu);
      else {
        this.long.push({ cpu, from: this.last.at, to: now.at });
        if (this.long.length > MAX_LONG_INTERVALS) this.long.splice(this.long.reduce((m, x, i, a) => (x.cpu < a[m]!.cpu ? i : m), 0), 1);
      }
    }
    if (wait > w.maxWaitMs) w.maxWaitMs = wait;
    this.last = now;
  }
}

/** The variable that turns the probe on. */
export const LOOP_PROBE_ENV = 'ERNIE_EDGE_LOOP_PROBE';

/** With ERNIE_EDGE_LOOP_PROBE=1: probes this (main) thread's loop and logs a window at each SIGUSR2. Returns the probe, or null when off. */
export function startLoopProbeFromEnv(env: NodeJS.ProcessEnv, logger: Logger): LoopProbe | null {
  if (env[LOOP_PROBE_ENV] !== '1') return null;
  const stat = threadSchedstat();
  const probe = stat ? new LoopProbe(stat, INTERVAL_MS, new GcLog()).start() : null;
  process.on('SIGUSR2', () => {
    if (probe) logger.info({ loopProbe: probe.take() }, 'loop probe');
    else logger.warn({ loopProbe: null }, 'loop probe: no figures (/proc/thread-self/schedstat cannot be read on this host)');
  });
  logger.info({ intervalMs: INTERVAL_MS, available: probe !== null }, `loop probe on (${LOOP_PROBE_ENV}): SIGUSR2 logs this thread's longest CPU stretch between event-loop turns`);
  return probe;
}
