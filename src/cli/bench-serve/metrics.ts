// A level's figures from its requests, with vLLM's definitions: throughput over the level's wall time
// (first send to last response), TTFT and E2E per request, TPOT = (E2E − TTFT) / (output tokens − 1),
// ITL between token-bearing chunks, goodput = requests meeting every SLO per second. Failed requests
// count in `errors` by status and in nothing else.

import type { Slos } from './args.js';
import type { LevelRun, TimedResult } from './run-level.js';
import { dist, type Dist } from './stats.js';

export interface ClientLoad {
  threads: number;
  /** Client CPU seconds (all threads) over the level. */
  cpuS: number;
  /** cpuS / wall seconds: cores the client kept busy. */
  cpuCores: number;
  /** Client CPU per output token received, in µs: times a target tok/s, the cores a client needs. */
  cpuUsPerOutputToken: number | null;
  /** Event-loop utilisation per client thread, main thread first. */
  threadUtilisation: number[];
  /** A client thread was busy ≥ 90% of the level: the client may have limited the figures. */
  saturated: boolean;
}

export interface LevelMetrics {
  maxConcurrency: number | null;
  requestRate: number | null; // null: inf
  numPrompts: number;
  completed: number;
  failed: number;
  /** Failed requests by HTTP status or error code. */
  errors: Record<string, number>;
  durationS: number;
  peakInFlight: number;
  totalInputTokens: number;
  totalOutputTokens: number;
  /** Completed requests whose output count came from the server's usage (the rest: chunks counted). */
  usageReported: number;
  requestThroughput: number;
  outputThroughput: number;
  totalTokenThroughput: number;
  /** Requests/s meeting every --goodput SLO; null without SLOs. */
  requestGoodput: number | null;
  goodRequests: number | null;
  ttftMs: Dist | null;
  tpotMs: Dist | null;
  itlMs: Dist | null;
  e2elMs: Dist | null;
  client: ClientLoad;
  requests?: TimedResult[];
}

const tpotOf = (r: TimedResult): number | null => (r.ttftMs !== null && r.outputTokens > 1 && r.itlMs.length > 0 ? (r.e2eMs - r.ttftMs) / (r.outputTokens - 1) : null);

export function levelMetrics(run: LevelRun, slos: Slos, maxConcurrency: number | null, requestRate: number): LevelMetrics {
  const ok = run.results.filter((r) => r.ok);
  const errors: Record<string, number> = {};
  for (const r of run.results) if (!r.ok) errors[r.status] = (errors[r.status] ?? 0) + 1;
  const inputTokens = ok.reduce((a, r) => a + (r.promptTokens ?? r.datasetPromptTokens), 0);
  const outputTokens = ok.reduce((a, r) => a + r.outputTokens, 0);
  const ttft = ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs]));
  const tpot = ok.flatMap((r) => {
    const t = tpotOf(r);
    return t === null ? [] : [t];
  });
  const itl: number[] = [];
  for (const r of ok) for (const x of r.itlMs) itl.push(x);
  const hasSlos = Object.keys(slos).length > 0;
  const good = ok.filter((r) => {
    if (slos.ttft !== undefined && (r.ttftMs ?? r.e2eMs) > slos.ttft) return false;
    if (slos.tpot !== undefined && (tpotOf(r) ?? 0) > slos.tpot) return false;
    if (slos.e2el !== undefined && r.e2eMs > slos.e2el) return false;
    return true;
  }).length;
  const s = run.durationS;
  const utilisation = run.threadUtilisation;
  return {
    maxConcurrency,
    requestRate: Number.isFinite(requestRate) ? requestRate : null,
    numPrompts: run.results.length,
    completed: ok.length,
    failed: run.results.length - ok.length,
    errors,
    durationS: s,
    peakInFlight: run.peakInFlight,
    totalInputTokens: inputTokens,
    totalOutputTokens: outputTokens,
    usageReported: ok.filter((r) => r.usageReported).length,
    requestThroughput: ok.length / s,
    outputThroughput: outputTokens / s,
    totalTokenThroughput: (inputTokens + outputTokens) / s,
    requestGoodput: hasSlos ? good / s : null,
    goodRequests: hasSlos ? good : null,
    ttftMs: dist(ttft),
    tpotMs: dist(tpot),
    itlMs: dist(itl),
    e2elMs: dist(ok.map((r) => r.e2eMs)),
    client: {
      threads: run.threads,
      cpuS: run.cpuS,
      cpuCores: run.cpuS / s,
      cpuUsPerOutputToken: outputTokens > 0 ? (run.cpuS * 1e6) / outputTokens : null,
      threadUtilisation: utilisation,
      saturated: utilisation.some((u) => u >= 0.9),
    },
  };
}
