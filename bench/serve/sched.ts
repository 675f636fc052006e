// bench:serve --sched: which threads run on the cores while the engine computes a first token.
// `perf record` of the kernel's sched_switch events (every core, CLOCK_MONOTONIC: the clock of the
// trace marks and of the client's timings) around the paired TTFT requests; then, for each request's
// engine window (HTTP: sc.submitted → sc.step; in-process: submit → step callback), each thread's time
// on a core inside it. On 2 cores the engine's 2 threads want both for the whole step: any other
// thread's time there is engine time lost, and which thread it was says what to move out of the step.
// Linux with perf only (as root, or perf_event_paranoid permitting system-wide tracepoints).
import { readdirSync, readFileSync } from 'node:fs';
import { perfRecord } from './perf-record.js';

/** Per core: when each thread started running there (ascending), the thread id (0: idle). */
export interface Timeline {
  cpus: { at: Float64Array; tid: Int32Array }[];
  names: Map<number, string>;
}

export interface SchedRecorder {
  stop(): Promise<Timeline>;
}

/** Starts `perf record` system-wide; resolves once it writes its file. */
export async function recordSched(file: string): Promise<SchedRecorder> {
  const rec = await perfRecord(file, ['-e', 'sched:sched_switch', '-a'], 'cpu,time,trace');
  return { stop: async () => parseSwitches(await rec.stop()) };
}

const LINE = /^\s*\[(\d+)\]\s+([\d.]+):\s+prev_comm=(.*) prev_pid=(\d+) .* ==> next_comm=(.*) next_pid=(\d+) next_prio=/;

/** `perf script -F cpu,time,trace` of sched_switch events → per-core timelines. */
export function parseSwitches(text: string): Timeline {
  const per = new Map<number, { at: number[]; tid: number[] }>();
  const names = new Map<number, string>();
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const cpu = Number(m[1]);
    const c = per.get(cpu) ?? { at: [], tid: [] };
    per.set(cpu, c);
    c.at.push(Number(m[2]) * 1000);
    c.tid.push(Number(m[6]));
    names.set(Number(m[4]), m[3]!);
    names.set(Number(m[6]), m[5]!);
  }
  const cpus = [...per.keys()].sort((a, b) => a - b).map((k) => ({ at: Float64Array.from(per.get(k)!.at), tid: Int32Array.from(per.get(k)!.tid) }));
  return { cpus, names };
}

/** Each thread's time on a core inside [from, to] (ms), summed over the cores. */
export function onCpu(tl: Timeline, from: number, to: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const { at, tid } of tl.cpus) {
    // The last switch at or before `from`: its thread holds the core when the window opens.
    let lo = 0;
    let hi = at.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (at[mid]! <= from) lo = mid;
      else hi = mid - 1;
    }
    for (let i = lo; i < at.length && at[i]! < to; i++) {
      const a = Math.max(from, at[i]!);
      const b = Math.min(to, i + 1 < at.length ? at[i + 1]! : to);
      if (b > a) out.set(tid[i]!, (out.get(tid[i]!) ?? 0) + (b - a));
    }
  }
  return out;
}

/** Thread id → "role/main" or "role/name:tid" for the threads of the given processes (read while they live). */
export function threadRoles(procs: Record<string, number>): Map<number, string> {
  const roles = new Map<number, string>();
  for (const [role, pid] of Object.entries(procs)) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const t of tids) {
      let name = '?';
      try {
        name = Number(t) === pid ? 'main' : readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
      } catch {
        // ended meanwhile
      }
      roles.set(Number(t), name === 'main' ? `${role}/main` : `${role}/${name}:${t}`);
    }
  }
  return roles;
}

/** The child processes of `pid` (Linux: /proc/PID/task/*\/children). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const s = readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim();
    if (s) out.push(...s.split(/\s+/).map(Number));
  }
  return out;
}

/** `pid` and its descendants, each named by `name(its command line)` ('' leaves it and its children out). */
export function processTree(pid: number, name: (cmdline: string) => string): Record<string, number> {
  const out: Record<string, number> = {};
  const walk = (p: number) => {
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      return;
    }
    const n = name(cmd);
    if (!n) return;
    out[n in out ? `${n}.${p}` : n] = p;
    for (const c of childPids(p)) walk(c);
  };
  walk(pid);
  return out;
}

export interface WindowUse {
  /** Windows looked at, and the median window length (ms). */
  windows: number;
  windowMs: number;
  /** Per thread (role/name:tid; other processes as one), mean ms on a core per window, busiest first. */
  threads: { thread: string; meanMs: number; share: number; inWindows: number }[];
  /**
   * Per window, the time on a core of our processes' threads other than the engine's two (the two
   * busiest of all windows): the serving path's and the runtimes' work competing with the step.
   */
  serving: { p50Ms: number; p90Ms: number; meanMs: number };
}

/** Mean time on a core per window for every thread that ran in them, and the serving threads' per window. */
export function windowUse(tl: Timeline, windows: { from: number; to: number }[], roles: Map<number, string>): WindowUse {
  const per = windows.map((w) => onCpu(tl, w.from, w.to));
  const byTid = new Map<number, number>();
  for (const m of per) for (const [tid, ms] of m) byTid.set(tid, (byTid.get(tid) ?? 0) + ms);
  const engine = new Set([...byTid].filter(([tid]) => roles.has(tid)).sort((a, b) => b[1] - a[1]).slice(0, 2).map(([tid]) => tid));
  const sum = new Map<string, { ms: number; n: number }>();
  const serving: number[] = [];
  let total = 0;
  for (const [i, m] of per.entries()) {
    total += windows[i]!.to - windows[i]!.from;
    let ours = 0;
    for (const [tid, ms] of m) {
      if (roles.has(tid) && !engine.has(tid)) ours += ms;
      // Other processes (the host's other load) are one line: what they take is not ours to move.
      const key = tid === 0 ? 'idle' : roles.has(tid) ? `${roles.get(tid)}${engine.has(tid) ? ' (engine)' : ''}` : 'other processes';
      const e = sum.get(key) ?? { ms: 0, n: 0 };
      e.ms += ms;
      e.n += ms > 0 ? 1 : 0;
      sum.set(key, e);
    }
    serving.push(ours);
  }
  const lens = windows.map((w) => w.to - w.from).sort((a, b) => a - b);
  serving.sort((a, b) => a - b);
  const n = Math.max(1, windows.length);
  const threads = [...sum.entries()]
    .map(([thread, e]) => ({ thread, meanMs: e.ms / n, share: e.ms / Math.max(1e-9, total * tl.cpus.length), inWindows: e.n }))
    .sort((a, b) => b.meanMs - a.meanMs);
  const q = (p: number) => serving[Math.min(serving.length - 1, Math.floor(p * serving.length))] ?? NaN;
  return {
    windows: windows.length,
    windowMs: lens[lens.length >> 1] ?? NaN,
    threads,
    serving: { p50Ms: q(0.5), p90Ms: q(0.9), meanMs: serving.reduce((a, b) => a + b, 0) / n },
  };
}
