// bench:serve --perf: where the server processes' CPU time goes inside given time windows, from
// `perf record` of their threads' CPU clock (a sample per 100 µs a thread spends on a core, with its
// call stack; CLOCK_MONOTONIC stamps, the trace marks' clock). Unlike V8's profiler, which samples
// wall time, a thread waiting for a core gets no samples, so the figures hold on a loaded host.
// The servers run with --perf-basic-prof-only-functions (NODE_OPTIONS), so JavaScript frames have
// names ("JS:*handleStep file:///…/src/sidecar/server/engine-host.ts:…"); V8's and Node's own frames
// come from the node binary's symbols.
import { perfRecord } from './perf-record.js';
/** CPU time per sample (perf -c, in ns of the cpu-clock event). */
const PERIOD_NS = 100_000;

export interface Sample {
  tid: number;
  at: number; // ms, host monotonic
  frames: string[]; // leaf first
}

export async function recordCycles(file: string, pids: number[]): Promise<{ stop(): Promise<Sample[]> }> {
  const rec = await perfRecord(file, ['-e', 'cpu-clock', '-c', String(PERIOD_NS), '-g', '-p', pids.join(',')], 'tid,time,ip,sym');
  return { stop: async () => parseSamples(await rec.stop()) };
}

export function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  let cur: Sample | null = null;
  for (const line of text.split('\n')) {
    const head = /^\s*(\d+)\s+([\d.]+):\s*$/.exec(line);
    if (head) {
      cur = { tid: Number(head[1]), at: Number(head[2]) * 1000, frames: [] };
      out.push(cur);
      continue;
    }
    const frame = /^\s+[0-9a-f]+\s+(.*)$/.exec(line);
    if (frame && cur) cur.frames.push(frame[1]!.trim());
  }
  return out;
}

const GC = /v8::internal::(Heap::|Scavenger|ScavengeJob|MarkCompact|ConcurrentMarking|Sweeper|MinorMarkCompact|IncrementalMarking|MemoryReducer)/;
const COMPILE = /v8::internal::(compiler::|Compiler::|OptimizingCompileDispatcher|baseline::|Maglev|maglev::)/;
const OURS = /^JS:\S*\s.*\/(src|adapters)\/(?!.*node_modules)/;

export interface CpuUse {
  /** Mean CPU ms per window per thread role (e.g. "sidecar/main"), busiest first. */
  byThread: { thread: string; ms: number }[];
  /** Per process's main thread and its other threads together: mean ms per window by what ran (GC, a compile, or the innermost project frame, else the leaf). */
  byWhat: Map<string, { what: string; ms: number }[]>;
}

/** `roles`: thread id → role; samples of other threads are left out. */
export function cpuUse(samples: Sample[], windows: { from: number; to: number }[], roles: Map<number, string>): CpuUse {
  const sorted = [...windows].sort((a, b) => a.from - b.from);
  const inWindow = (t: number): boolean => {
    let lo = 0;
    let hi = sorted.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid]!.to < t) lo = mid + 1;
      else if (sorted[mid]!.from > t) hi = mid - 1;
      else return true;
    }
    return false;
  };
  const ms = PERIOD_NS / 1e6 / Math.max(1, windows.length);
  const byThread = new Map<string, number>();
  const byWhat = new Map<string, Map<string, number>>();
  for (const s of samples) {
    const role = roles.get(s.tid);
    if (!role || !inWindow(s.at)) continue;
    byThread.set(role, (byThread.get(role) ?? 0) + ms);
    const gc = s.frames.find((f) => GC.test(f));
    const compile = s.frames.find((f) => COMPILE.test(f));
    const what = gc ? `(GC) ${gc.replace(/^v8::internal::/, '').slice(0, 70)}` : compile ? `(compile) ${compile.replace(/^v8::internal::/, '').slice(0, 70)}` : (s.frames.find((f) => OURS.test(f)) ?? s.frames[0] ?? '?').replace(/file:\/\/\S*\/(src|adapters)\//, '$1/').replace(/^JS:[*~^]?/, '');
    // Threads other than a process's main one, the engine's included, are one group per process.
    const group = role.replace(/\/[^/]*:\d+$/, '/other threads');
    const m = byWhat.get(group) ?? new Map<string, number>();
    m.set(what, (m.get(what) ?? 0) + ms);
    byWhat.set(group, m);
  }
  const rows = (m: Map<string, number>) => [...m].map(([k, v]) => ({ k, v })).sort((a, b) => b.v - a.v);
  return {
    byThread: rows(byThread).map(({ k, v }) => ({ thread: k, ms: v })),
    byWhat: new Map([...byWhat].map(([role, m]) => [role, rows(m).map(({ k, v }) => ({ what: k, ms: v }))])),
  };
}
