// Where one request's time to first token goes, from the stage marks (src/protocol/trace.ts) the
// server wrote and the client's own two marks. The first token's critical path is the chain below;
// `accepted` (the handler's commit to 200 + SSE) runs beside the engine step, so it is reported as
// an offset from sc.submitted rather than as a link of the chain.
import { readFile } from 'node:fs/promises';
import type { TraceMark } from '../../src/cli/trace-file.js';
import type { TraceStage } from '../../src/protocol/trace.js';
import { median, quantile } from './stats.js';

export const CRITICAL_PATH: TraceStage[] = [
  'client.send', 'gw.recv', 'gw.body', 'gw.parsed', 'gw.submit', 'sc.recv', 'sc.decoded', 'sc.tokenized',
  'sc.submitted', 'eng.step', 'sc.step', 'sc.detok', 'sc.delta', 'gw.delta', 'gw.sse', 'client.first',
];
const SIDE: TraceStage[] = ['sc.accepted', 'gw.accepted'];

export type Marks = Map<string, Partial<Record<TraceStage, number>>>;

export async function readMarks(file: string): Promise<Marks> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const marks: Marks = new Map();
  for (const line of text.split('\n')) {
    if (!line) continue;
    const m = JSON.parse(line) as TraceMark;
    const r = marks.get(m.id) ?? {};
    r[m.stage] ??= m.t;
    marks.set(m.id, r);
  }
  return marks;
}

export interface StageRow {
  stage: string;
  /** Median and p90 of (this stage − the previous one on the path), ms. */
  p50Ms: number;
  p90Ms: number;
}

export interface Breakdown {
  requests: number;
  path: StageRow[];
  /** sc.accepted / gw.accepted relative to sc.submitted. */
  side: StageRow[];
  /** Median of the path's stages that are not the engine's (everything but sc.submitted → sc.step). */
  servingMs: number;
  /** Median of sc.submitted → sc.step: the engine's part, as the sidecar sees it. */
  engineMs: number;
}

/** Per-request stage marks, completed with the client's; requests missing a stage are left out. */
export function breakdown(marks: Marks, client: { id: string; sentAt: number; firstAt: number }[]): Breakdown {
  const rows: Record<TraceStage, number>[] = [];
  for (const c of client) {
    const m = { ...marks.get(c.id), 'client.send': c.sentAt, 'client.first': c.firstAt };
    if ([...CRITICAL_PATH, ...SIDE].every((s) => typeof m[s] === 'number')) rows.push(m as Record<TraceStage, number>);
  }
  const row = (stage: string, ds: number[]): StageRow => ({ stage, p50Ms: median(ds), p90Ms: quantile(ds, 0.9) });
  const path = CRITICAL_PATH.slice(1).map((s, i) => row(`${CRITICAL_PATH[i]} → ${s}`, rows.map((r) => r[s] - r[CRITICAL_PATH[i]!])));
  const side = SIDE.map((s) => row(`sc.submitted → ${s}`, rows.map((r) => r[s] - r['sc.submitted'])));
  const engine = rows.map((r) => r['sc.step'] - r['sc.submitted']);
  const serving = rows.map((r) => r['client.first'] - r['client.send'] - (r['sc.step'] - r['sc.submitted']));
  return { requests: rows.length, path, side, servingMs: median(serving), engineMs: median(engine) };
}
