// bench:serve's TTFT figures for one server: its HTTP requests against the engine's, paired by prompt,
// and where its time went (the trace marks), printed and as serve.json's `ttft` and `stages`.
import type { DirectTiming } from './direct.js';
import type { StreamTiming } from './http.js';
import { breakdown, type Breakdown, type Marks } from './breakdown.js';
import { median, paired, type PairedSummary } from './stats.js';

export interface TtftSummary {
  request: string;
  directP50Ms: number;
  httpP50Ms: number;
  directStepP50Ms: number;
  /** HTTP minus engine, per prompt: the "≤ 5 ms" target. */
  overhead: PairedSummary;
  /** The engine's own part behind the server (sc.submitted → sc.step) minus the engine alone, per prompt. */
  engineSlowdown: PairedSummary;
  /** gw.recv → gw.sse minus the request's own engine part (no second engine instance involved). */
  serverOverhead: PairedSummary;
}

export function summarize(request: string, http: StreamTiming[], direct: DirectTiming[], marks: Marks): { ttft: TtftSummary; stages: Breakdown } {
  const stages = breakdown(marks, http);
  // How much slower the engine's own part (submit → first-token callback) runs behind the server
  // than alone: the serving layers' work that competes with the engine for the cores.
  const engineSlowdown = paired(
    http.flatMap((h, i) => {
      const m = marks.get(h.id);
      return m?.['sc.step'] !== undefined && m['sc.submitted'] !== undefined ? [m['sc.step'] - m['sc.submitted'] - direct[i]!.ttftMs] : [];
    }),
  );
  // Inside the server only, per HTTP request: gw.recv (the gateway's handler starts) to gw.sse (the
  // first token's chunk written) minus that request's own engine part (sc.submitted → sc.step,
  // the engine's wake-up, step and callback, which the in-process engine pays too). No second
  // engine instance is involved: the paired figures above also carry the difference in speed
  // between the sidecar's engine and the benchmark's (engineSlowdown: up to ±4 ms between runs),
  // this one does not. It leaves out the benchmark client's HTTP stack and the loopback hops.
  const serverOverhead = paired(
    http.flatMap((h) => {
      const m = marks.get(h.id);
      const ok = m?.['gw.sse'] !== undefined && m['gw.recv'] !== undefined && m['sc.step'] !== undefined && m['sc.submitted'] !== undefined;
      return ok ? [m['gw.sse']! - m['gw.recv']! - (m['sc.step']! - m['sc.submitted']!)] : [];
    }),
  );
  const ttft: TtftSummary = {
    request,
    directP50Ms: median(direct.map((d) => d.ttftMs)),
    httpP50Ms: median(http.map((h) => h.ttftMs)),
    directStepP50Ms: median(direct.map((d) => d.stepMs)),
    overhead: paired(http.map((h, i) => h.ttftMs - direct[i]!.ttftMs)),
    engineSlowdown,
    serverOverhead,
  };
  return { ttft, stages };
}

const f1 = (x: number) => x.toFixed(1);
export const ci = (p: PairedSummary) => (p.ci95Ms ? `[${f1(p.ci95Ms.lo)}, ${f1(p.ci95Ms.hi)}]` : 'n/a');

export function printSummary(label: string, { ttft, stages }: { ttft: TtftSummary; stages: Breakdown }): void {
  const o = ttft.overhead;
  console.log(`${label}TTFT, ${o.pairs} interleaved pairs (${ttft.request}): engine ${f1(ttft.directP50Ms)} ms, HTTP ${f1(ttft.httpP50Ms)} ms (p50)`);
  console.log(`  serving layers: median paired difference ${f1(o.medianMs)} ms, 95% CI ${ci(o)} ms, IQR [${f1(o.p25Ms)}, ${f1(o.p75Ms)}] ms (target <= 5 ms)`);
  console.log(`  inside the server (gateway + socket + tokenizer: gw.recv → gw.sse minus the request's engine part): median ${f1(ttft.serverOverhead.medianMs)} ms, 95% CI ${ci(ttft.serverOverhead)} ms`);
  console.log(`stages of ${stages.requests} HTTP requests (p50 / p90 ms; from the server's trace marks):`);
  for (const s of [...stages.path, ...stages.side]) console.log(`  ${s.stage.padEnd(30)} ${f1(s.p50Ms).padStart(7)} ${f1(s.p90Ms).padStart(7)}`);
  console.log(`  engine part (sc.submitted → sc.step) ${f1(stages.engineMs)} ms; everything else ${f1(stages.servingMs)} ms`);
  const e = ttft.engineSlowdown;
  console.log(`  engine part behind the server minus the engine alone (paired): ${f1(e.medianMs)} ms, 95% CI ${ci(e)}; native step p50 ${f1(ttft.directStepP50Ms)} ms alone`);
}
