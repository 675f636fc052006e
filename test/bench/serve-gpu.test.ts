// bench/serve-gpu.ts's pure parts: its options (GPU defaults, CPU proof sizes), the targets
// read off a result, and its chart (well-formed SVG, a point per level and series).
import { describe, expect, it } from 'vitest';
import { renderChart } from '../../src/cli/bench-serve/plot.js';
import { serveGpuOptions, workloadFlags } from '../../bench/serve-gpu/options.js';
import { chartOf, targetsMet, type LevelResult } from '../../bench/serve-gpu/summary.js';
import { svgPoints } from '../cli/bench-serve/helpers.js';

const side = (tokS: number, ttft: number, itl: number) => ({ outputTokS: tokS, requests: 1, outputTokens: 1, ttftP50Ms: ttft, ttftP99Ms: ttft, itlP50Ms: itl, itlP99Ms: itl });
const http = (tokS: number, ttft: number, itl: number) => ({ ...side(tokS, ttft, itl), clientCpuCores: 0.1, clientCpuUsPerToken: 2, clientThreads: 1, clientSaturated: false, failed: 0 });
function level(c: number, e: number, h: number, ttft: [number, number], itl: [number, number]): LevelResult {
  return { concurrency: c, requests: 3 * c, engine: side(e, ttft[0], itl[0]), http: { stream: http(h, ttft[1], itl[1]), noStream: http(h, ttft[1], itl[1]) }, httpOverEngine: { stream: h / e, noStream: h / e }, ttftP50OverEngineMs: ttft[1] - ttft[0], itlP50OverEngine: itl[1] / itl[0] };
}

describe('bench/serve-gpu', () => {
  it("defaults to the issue's workload on CUDA and takes CPU proof sizes", () => {
    const g = serveGpuOptions(['/out']);
    expect(g).toMatchObject({ outDir: '/out', device: 'cuda', levels: [1, 64, 256, 512], prompts: [48, 192, 768, 1536], precisions: ['bfloat16', 'float32'], maxNumBatchedTokens: 2048 });
    const flags = workloadFlags(g).join(' ');
    for (const f of ['--random-input-len 32-512', '--random-output-len 64-256', '--ignore-eos', '--temperature 0', '--max-concurrency 1,64,256,512', '--num-prompts 48,192,768,1536']) expect(flags).toContain(f);
    const c = serveGpuOptions(['/o', '--device', 'cpu', '--levels', '1,4', '--prompts', '3,8']);
    expect(c).toMatchObject({ device: 'cpu', levels: [1, 4], prompts: [3, 8], maxNumBatchedTokens: 512 });
    expect(() => serveGpuOptions(['/o', '--levels', '1,4', '--prompts', '3'])).toThrow(/as many/);
  });

  it('checks the targets: ≥ 90% at 256 and 512, TTFT within 2 ms at 1, ITL within 10% at 256', () => {
    const good = { levels: [level(1, 1000, 990, [1.6, 3.0], [0.8, 0.8]), level(256, 90000, 85000, [6, 9], [2.1, 2.2]), level(512, 115000, 105000, [9, 14], [3.6, 3.9])] };
    const slow = { levels: [level(1, 1000, 990, [1.6, 30], [0.8, 0.8]), level(256, 90000, 47000, [6, 60], [2.1, 4.0]), level(512, 115000, 105000, [9, 14], [3.6, 3.9])] };
    expect(targetsMet({ bfloat16: good, float32: slow })).toEqual({
      bfloat16: { throughputAt256And512: true, ttftP50AtC1: true, itlP50At256: true },
      float32: { throughputAt256And512: false, ttftP50AtC1: false, itlP50At256: false },
    });
    expect(targetsMet({ cpu: { levels: [level(4, 10, 10, [1, 1], [1, 1])] } })).toEqual({ cpu: { throughputAt256And512: null, ttftP50AtC1: null, itlP50At256: null } });
    const svg = renderChart(chartOf('d', 'cuda', [1, 256, 512], { bfloat16: good, float32: slow }));
    const pts = svgPoints(svg);
    expect(pts.filter((p) => p.series === 'engine bfloat16')).toHaveLength(3 * 3); // three panels carry it
    expect(pts.filter((p) => p.series === 'HTTP stream float32').map((p) => p.y)).toEqual([990, 47000, 105000]);
  });
});
