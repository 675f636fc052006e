// The longest stretches a thread was busy without a break, from a V8 CPU profile (`node --cpu-prof`):
// while one runs, that thread's event loop serves nothing, so a stream it carries stalls at least as
// long. For each stretch: its length and the functions (self time) and call paths that filled it.
//
//   node --import tsx bench/abuse/stalls.ts PROFILE.cpuprofile... [--top 5] [--min-ms 50]

import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

export interface Stretch {
  startMs: number; // from the profile's start
  /** Its start on the host's monotonic clock (V8's profile clock, process.hrtime's). */
  atMs: number;
  ms: number;
  selfMs: [string, number][];
  paths: [string, number][];
}

const label = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(src|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;

/** Busy stretches of at least minMs, longest first. A sample is idle when its leaf is "(idle)". */
export function stalls(p: Profile, minMs = 50): Stretch[] {
  const origin = p.startTime / 1000; // µs → ms
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const pathOf = (id: number): string => {
    const names: string[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      if (f.functionName !== '(root)' && (f.url.includes('/src/') || f.url.includes('hono') || names.length === 0)) names.push(label(f));
    }
    return names.slice(0, 6).join(' < ');
  };
  const out: Stretch[] = [];
  let t = 0;
  let cur: { start: number; ms: number; self: Map<string, number>; paths: Map<string, number> } | null = null;
  const close = () => {
    if (cur && cur.ms >= minMs) {
      const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, v]) => [k, +v.toFixed(1)] as [string, number]);
      out.push({ startMs: +cur.start.toFixed(1), atMs: +(origin + cur.start).toFixed(1), ms: +cur.ms.toFixed(1), selfMs: top(cur.self), paths: top(cur.paths) });
    }
    cur = null;
  };
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    t += dt;
    const node = byId.get(p.samples[i]!)!;
    if (node.callFrame.functionName === '(idle)') {
      close();
      continue;
    }
    cur ??= { start: t - dt, ms: 0, self: new Map(), paths: new Map() };
    cur.ms += dt;
    const l = label(node.callFrame);
    cur.self.set(l, (cur.self.get(l) ?? 0) + dt);
    const path = pathOf(node.id);
    cur.paths.set(path, (cur.paths.get(path) ?? 0) + dt);
  }
  close();
  return out.sort((a, b) => b.ms - a.ms);
}

/** The stretches that overlap [fromMs, toMs] on the host's monotonic clock. */
export const overlapping = (s: Stretch[], [fromMs, toMs]: [number, number]) => s.filter((x) => x.atMs < toMs && x.atMs + x.ms > fromMs);

export const readProfile = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Profile;

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const opt = (name: string, d: number) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args.splice(i, 2)[1]) : d;
  };
  const top = opt('--top', 5);
  const minMs = opt('--min-ms', 50);
  for (const file of args) {
    const s = stalls(readProfile(file), minMs);
    console.log(JSON.stringify({ file, stretches: s.length, longest: s.slice(0, top) }, null, 1));
  }
}
