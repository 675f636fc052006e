// bench:serve --cpu-prof: what a server process's JavaScript thread did inside given time windows
// (each HTTP request's stretches of the first-token path), from the .cpuprofile files that
// bench/serve-gpu/cpu-profile.mjs writes. V8 stamps samples on its monotonic clock (µs; on Linux
// CLOCK_MONOTONIC, the trace marks' clock), so a sample belongs to a window by its time alone.
// NOTE: V8 samples wall time: a sample that waited for a core (a preempted thread) carries that wait
// in its delta. On a loaded host read the functions' order, not their absolute times.
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface WindowProfile {
  windows: number;
  /** Mean ms per window not idle, and per function (self time, "name file"), busiest first. */
  busyMs: number;
  functions: { name: string; ms: number }[];
  /** The same by the innermost function of the project's own code on the stack (src/, adapters/). */
  ours: { name: string; ms: number }[];
}

const shortUrl = (url: string) => url.replace(/^.*\/(node_modules\/|src\/)/, '$1');

/** Self time per function inside `windows` ({from, to} in ms on the host's monotonic clock). */
export async function profileWindows(file: string, windows: { from: number; to: number }[]): Promise<WindowProfile> {
  const p = JSON.parse(await readFile(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const sorted = [...windows].sort((a, b) => a.from - b.from);
  const self = new Map<string, number>();
  const entry = new Map<string, number>();
  let busy = 0;
  let t = p.startTime / 1000;
  let w = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]! / 1000;
    while (w < sorted.length && sorted[w]!.to < t) w++;
    if (w >= sorted.length) break;
    if (t < sorted[w]!.from) continue;
    const node = byId.get(p.samples[i]!)!;
    if (node.callFrame.functionName === '(idle)') continue;
    // The sample's delta is the time since the previous one: it belongs to this window only in part
    // when the window opened meanwhile.
    const ms = Math.min(p.timeDeltas[i]! / 1000, t - sorted[w]!.from);
    busy += ms;
    const name = `${node.callFrame.functionName || '(anonymous)'} ${shortUrl(node.callFrame.url)}`.trim();
    self.set(name, (self.get(name) ?? 0) + ms);
    let own: ProfileNode | null = null;
    for (let at: number | undefined = node.id; at !== undefined && own === null; at = parent.get(at)) {
      const f = byId.get(at)!;
      if (/\/(src|adapters)\//.test(f.callFrame.url) && !f.callFrame.url.includes('node_modules')) own = f;
    }
    const o = own ? `${own.callFrame.functionName || '(anonymous)'} ${shortUrl(own.callFrame.url)}` : '(no project frame)';
    entry.set(o, (entry.get(o) ?? 0) + ms);
  }
  const n = Math.max(1, windows.length);
  const rows = (m: Map<string, number>) => [...m].map(([name, ms]) => ({ name, ms: ms / n })).sort((a, b) => b.ms - a.ms);
  return { windows: windows.length, busyMs: busy / n, functions: rows(self), ours: rows(entry) };
}
