// What `bench serve` prints and writes: a block per level in the layout of vLLM's result table, a
// sweep summary, the result JSON and the SVG chart of throughput and latency against concurrency.

import type { BenchServeOptions } from './args.js';
import type { LevelMetrics } from './metrics.js';
import { renderChart, type Chart } from './plot.js';
import type { Dist } from './stats.js';

export interface BenchResult {
  date: string;
  command: string;
  baseUrl: string;
  endpoint: string;
  model: string;
  dataset: Record<string, unknown>;
  stream: boolean;
  ignoreEos: boolean;
  temperature: number;
  logprobs: number | null;
  returnTokenIds: boolean;
  seed: number;
  requestRate: number | null;
  burstiness: number;
  goodput: BenchServeOptions['goodput'];
  numWarmups: number;
  client: { node: string; cores: number };
  levels: LevelMetrics[];
}

const f2 = (x: number) => x.toFixed(2);
const line = (k: string, v: string | number) => `${k.padEnd(40)} ${v}`;

export const levelLabel = (m: Pick<LevelMetrics, 'maxConcurrency' | 'peakInFlight'>): string => (m.maxConcurrency === null ? `∞ (peak ${m.peakInFlight})` : String(m.maxConcurrency));

function distLines(name: string, d: Dist | null): string[] {
  if (!d) return [line(`${name} (ms):`, 'n/a')];
  return [line(`Mean / P50 / P90 / P99 ${name} (ms):`, `${f2(d.mean)} / ${f2(d.p50)} / ${f2(d.p90)} / ${f2(d.p99)}`)];
}

export function levelText(m: LevelMetrics): string {
  const errs = Object.entries(m.errors).map(([k, v]) => `${k}: ${v}`).join(', ');
  const c = m.client;
  return [
    `============ Serving Benchmark Result (max concurrency ${levelLabel(m)}) ============`,
    line('Successful requests:', m.completed),
    line('Failed requests:', m.failed ? `${m.failed} (${errs})` : 0),
    line('Benchmark duration (s):', f2(m.durationS)),
    line('Total input tokens:', m.totalInputTokens),
    line('Total generated tokens:', `${m.totalOutputTokens}${m.usageReported < m.completed ? ` (${m.completed - m.usageReported} requests without usage: chunks counted)` : ''}`),
    line('Request throughput (req/s):', f2(m.requestThroughput)),
    ...(m.requestGoodput !== null ? [line('Request goodput (req/s):', `${f2(m.requestGoodput)} (${m.goodRequests} requests met the SLOs)`)] : []),
    line('Output token throughput (tok/s):', f2(m.outputThroughput)),
    line('Total token throughput (tok/s):', f2(m.totalTokenThroughput)),
    ...distLines('TTFT', m.ttftMs),
    ...distLines('TPOT', m.tpotMs),
    ...distLines('ITL', m.itlMs),
    ...distLines('E2EL', m.e2elMs),
    line('Client:', `${c.threads} thread${c.threads > 1 ? 's' : ''}, ${f2(c.cpuCores)} cores of CPU${c.cpuUsPerOutputToken !== null ? ` (${f2(c.cpuUsPerOutputToken)} µs per output token)` : ''}, busiest thread ${(100 * Math.max(...c.threadUtilisation)).toFixed(0)}%`),
    ...(c.saturated ? ['WARNING: a client thread was busy ≥ 90% of the run; the client may have limited these figures: raise --num-workers'] : []),
  ].join('\n');
}

export function sweepText(levels: readonly LevelMetrics[]): string {
  const rows = levels.map((m) =>
    [levelLabel(m), m.completed, m.failed, f2(m.outputThroughput), f2(m.requestThroughput), m.ttftMs ? f2(m.ttftMs.p50) : '-', m.itlMs ? f2(m.itlMs.p50) : '-', m.e2elMs ? f2(m.e2elMs.p50) : '-']
      .map(String),
  );
  const head = ['concurrency', 'ok', 'failed', 'out tok/s', 'req/s', 'TTFT p50', 'ITL p50', 'E2EL p50'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => r.map((v, i) => v.padStart(w[i]!)).join('  ');
  return ['Sweep (latencies in ms):', fmt(head), ...rows.map(fmt)].join('\n');
}

export function chartOf(r: BenchResult): Chart {
  const x = r.levels.map(levelLabel);
  const p50 = (k: 'ttftMs' | 'itlMs' | 'e2elMs', q: 'p50' | 'p99' = 'p50') => r.levels.map((m) => m[k]?.[q] ?? null);
  return {
    title: `bench serve: ${r.model} at ${r.baseUrl}${r.endpoint}`,
    subtitle: `${r.dataset.name} dataset, ${r.stream ? 'streaming' : 'not streaming'}, request rate ${r.requestRate ?? 'inf'}, ${r.date}`,
    xLabel: 'max concurrency',
    x,
    panels: [
      {
        title: 'Throughput',
        yLabel: 'tokens/s',
        series: [
          { name: 'output tok/s', y: r.levels.map((m) => m.outputThroughput) },
          { name: 'total tok/s', y: r.levels.map((m) => m.totalTokenThroughput), dash: 'dashed' },
        ],
      },
      {
        title: 'Latency',
        yLabel: 'ms',
        logY: true,
        series: [
          { name: 'TTFT p50', y: p50('ttftMs') },
          { name: 'TTFT p99', y: p50('ttftMs', 'p99'), dash: 'dashed' },
          { name: 'ITL p50', y: p50('itlMs') },
          { name: 'E2EL p50', y: p50('e2elMs') },
        ],
      },
    ],
  };
}

export const chartSvg = (r: BenchResult): string => renderChart(chartOf(r));
