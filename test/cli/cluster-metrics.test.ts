// /metrics over several gateway processes (src/cli/cluster-metrics.ts), in one process: two
// ClusterMetrics "workers" wired to one primary registry through in-memory channels. Each worker's
// observations are counted once, and either worker's scrape renders the sum.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ClusterMetrics, handleMetricsMessage, type PrimaryChannel } from '../../src/cli/cluster-metrics.js';
import type { WorkerMessage } from '../../src/cli/cluster-messages.js';
import { GatewayMetrics } from '../../src/gateway/metrics.js';
import type { FinishedRequest } from '../../src/gateway/request-record.js';

function worker(primary: GatewayMetrics): ClusterMetrics {
  const channel = new EventEmitter() as EventEmitter & PrimaryChannel;
  channel.send = (m: WorkerMessage) => {
    const reply = handleMetricsMessage(primary, structuredClone(m)); // what crosses IPC is a copy
    if (reply) queueMicrotask(() => channel.emit('message', reply));
    return true;
  };
  return new ClusterMetrics(channel);
}

const done = (id: string, ttft: number): FinishedRequest => ({
  id, method: 'POST', route: '/v1/completions', status: 200, promptTokens: 3, outputTokens: 2, ttft,
  interTokenLatencies: [0.02], e2e: 0.1, finishReasons: ['length'], generation: true,
});

describe('ClusterMetrics', () => {
  it('sums every worker once, and any worker renders the sum (engine series from its own scrape)', async () => {
    const primary = new GatewayMetrics();
    const [a, b] = [worker(primary), worker(primary)];
    a.setModelName('m');
    a.observe(done('1', 0.003));
    b.observe(done('2', 0.003));
    b.observe(done('3', 0.5));
    const stats = { running: 4, waiting: 0, kvBlocksTotal: 10, kvBlocksFree: 5, kvUsage: 0.5, preemptions: 0, prefixCacheQueries: 0, prefixCacheHits: 0, promptTokens: 9, generationTokens: 6, stepTimeMs: 1, maxRunning: 4, maxWaiting: 0, fairPreemptions: 0 };
    for (const text of [await a.render(stats), await b.render(null)]) {
      expect(text).toContain('http_requests_total{method="POST",route="/v1/completions",status="200"} 3');
      expect(text).toContain('vllm:time_to_first_token_seconds_count{model_name="m"} 3');
      expect(text).toContain('vllm:time_to_first_token_seconds_bucket{model_name="m",le="0.005"} 2');
      expect(text).toContain('vllm:request_success_total{model_name="m",finished_reason="length"} 3');
    }
    expect(await a.render(stats)).toContain('vllm:num_requests_running{model_name="m"} 4');
    expect(await b.render(null)).toContain('vllm:engine_up{model_name="m"} 0');
  });

  it('answers concurrent scrapes each with its own reply', async () => {
    const primary = new GatewayMetrics();
    const a = worker(primary);
    a.observe(done('1', 0.01));
    const [x, y] = await Promise.all([a.render(null), a.render(null)]);
    expect(x).toBe(y);
    expect(x).toContain('status="200"} 1');
  });
});
