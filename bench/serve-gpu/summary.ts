// bench/serve-gpu.ts's result shape, the targets checked against it, and its chart: output
// tok/s, TTFT p50, ITL p50 and HTTP/engine against concurrency, engine and HTTP per precision.
import type { Chart, Series } from '../../src/cli/bench-serve/plot.js';
import type { SideFigures } from './sides.js';

type HttpFigures = SideFigures & { clientCpuCores: number; clientCpuUsPerToken: number | null; clientThreads: number; clientSaturated: boolean; failed: number };

export interface LevelResult {
  concurrency: number;
  requests: number;
  engine: SideFigures;
  http: { stream: HttpFigures; noStream: HttpFigures };
  /** HTTP output tok/s over the engine's. */
  httpOverEngine: { stream: number; noStream: number };
  ttftP50OverEngineMs: number | null;
  itlP50OverEngine: number | null;
}
export interface PrecisionResult {
  levels: LevelResult[];
}

/** Issue #23's targets, per precision; null where the run had no such level. */
export function targetsMet(results: Record<string, PrecisionResult>): Record<string, Record<string, boolean | null>> {
  const at = (r: PrecisionResult, c: number) => r.levels.find((l) => l.concurrency === c);
  return Object.fromEntries(
    Object.entries(results).map(([p, r]) => {
      const big = [256, 512].map((c) => at(r, c)).filter((l): l is LevelResult => l !== undefined);
      const c1 = at(r, 1);
      const c256 = at(r, 256);
      return [p, {
        throughputAt256And512: big.length ? big.every((l) => l.httpOverEngine.stream >= 0.9) : null,
        ttftP50AtC1: c1?.ttftP50OverEngineMs != null ? c1.ttftP50OverEngineMs <= 2 : null,
        itlP50At256: c256?.itlP50OverEngine != null ? c256.itlP50OverEngine <= 1.1 : null,
      }];
    }),
  );
}

export function chartOf(date: string, device: string, levels: number[], results: Record<string, PrecisionResult>): Chart {
  // Colour says the precision, the line says the side: solid engine, dashed HTTP streamed, dotted whole.
  const COLOR: Record<string, string> = { bfloat16: '#1f77b4', float32: '#d62728' };
  const per = (f: (l: LevelResult) => number | null, name: (p: string) => string, dash?: Series['dash']): Series[] =>
    Object.entries(results).map(([p, r]) => ({ name: name(p), y: r.levels.map(f), dash, color: COLOR[p] }));
  return {
    title: `Engine in-process against HTTP (ernie-edge serve, bench serve), ${device}`,
    subtitle: `random token-id prompts, ignore_eos, greedy; ${date}`,
    xLabel: 'concurrent streams',
    x: levels,
    panels: [
      {
        title: 'Output throughput',
        yLabel: 'tokens/s',
        series: [
          ...per((l) => l.engine.outputTokS, (p) => `engine ${p}`),
          ...per((l) => l.http.stream.outputTokS, (p) => `HTTP stream ${p}`, 'dashed'),
          ...per((l) => l.http.noStream.outputTokS, (p) => `HTTP whole ${p}`, 'dotted'),
        ],
      },
      { title: 'HTTP / engine output tok/s', yLabel: 'ratio', series: [...per((l) => l.httpOverEngine.stream, (p) => `stream ${p}`, 'dashed'), ...per((l) => l.httpOverEngine.noStream, (p) => `whole ${p}`, 'dotted')] },
      { title: 'TTFT p50', yLabel: 'ms', logY: true, series: [...per((l) => l.engine.ttftP50Ms, (p) => `engine ${p}`), ...per((l) => l.http.stream.ttftP50Ms, (p) => `HTTP ${p}`, 'dashed')] },
      { title: 'ITL p50', yLabel: 'ms', logY: true, series: [...per((l) => l.engine.itlP50Ms, (p) => `engine ${p}`), ...per((l) => l.http.stream.itlP50Ms, (p) => `HTTP ${p}`, 'dashed')] },
    ],
  };
}
