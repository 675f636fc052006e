// src/cli/prom-parse.ts: the exposition text the gateway writes, read back; quantiles as PromQL's
// histogram_quantile() computes them.
import { describe, expect, it } from 'vitest';
import { bucketDelta, histogramBuckets, histogramQuantile, parsePromText, sumOf } from '../../src/cli/prom-parse.js';
import { GatewayMetrics } from '../../src/gateway/metrics.js';

const TEXT = `# HELP x_seconds h
# TYPE x_seconds histogram
x_seconds_bucket{model_name="a",le="0.1"} 2
x_seconds_bucket{model_name="a",le="1"} 6
x_seconds_bucket{model_name="a",le="+Inf"} 8
x_seconds_bucket{model_name="b",le="0.1"} 0
x_seconds_bucket{model_name="b",le="1"} 2
x_seconds_bucket{model_name="b",le="+Inf"} 2
x_seconds_count{model_name="a"} 8
g{model_name="a",path="q\\"uote"} 3
g{model_name="b"} 4.5
`;

describe('prom-parse', () => {
  it('parses samples with escaped labels and sums series over label sets', () => {
    const s = parsePromText(TEXT);
    expect(s.find((x) => x.name === 'g')?.labels.path).toBe('q"uote');
    expect(sumOf(s, 'g')).toBe(7.5);
    expect(sumOf(s, 'missing')).toBeNull();
  });

  it('merges histogram buckets across models and interpolates like histogram_quantile', () => {
    const b = histogramBuckets(parsePromText(TEXT), 'x_seconds');
    expect(b).toEqual([[0.1, 2], [1, 8], [Infinity, 10]]);
    expect(histogramQuantile(0.2, b)).toBeCloseTo(0.1); // rank 2 → the top of the first bucket
    expect(histogramQuantile(0.5, b)).toBeCloseTo(0.1 + 0.9 * (3 / 6)); // rank 5 inside (0.1, 1]
    expect(histogramQuantile(0.99, b)).toBe(1); // in +Inf → the largest finite bound
    expect(histogramQuantile(0.5, [[1, 0], [Infinity, 0]])).toBeNull();
    expect(bucketDelta(b, [[0.1, 2], [1, 5]])).toEqual([[0.1, 0], [1, 3], [Infinity, 10]]);
  });

  it("reads the gateway's own /metrics output", () => {
    const m = new GatewayMetrics();
    m.setModelName('m');
    for (const e2e of [0.2, 0.4, 3]) m.observe({ id: 'r', method: 'POST', route: '/v1/completions', status: 200, generation: true, finishReasons: ['stop'], ttft: 0.05, interTokenLatencies: [], e2e, promptTokens: 1, outputTokens: 1 });
    const s = parsePromText(m.render({ running: 2, waiting: 5, kvBlocksTotal: 8, kvBlocksFree: 6, kvUsage: 0.25, promptTokens: 10, generationTokens: 20, preemptions: 0, prefixCacheQueries: 0, prefixCacheHits: 0, stepTimeMs: 1, maxRunning: 2, maxWaiting: 5, fairPreemptions: 0 }));
    expect(sumOf(s, 'vllm:num_requests_waiting')).toBe(5);
    const e2e = histogramBuckets(s, 'vllm:e2e_request_latency_seconds');
    expect(e2e.at(-1)).toEqual([Infinity, 3]);
    expect(histogramQuantile(0.5, e2e)).toBeGreaterThan(0.3);
    expect(histogramQuantile(0.5, e2e)).toBeLessThanOrEqual(0.5);
  });
});
