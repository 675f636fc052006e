// The gateway's Prometheus metrics, named like vLLM's so existing dashboards work. One instance per
// app (createApp makes one unless given one): no module-global registry.
//
// Engine-side gauges and counters (running/waiting, KV usage, token totals, preemptions, prefix cache)
// are read from engine.stats() at scrape time; request outcomes and latency histograms are observed
// here as requests finish. Every vllm:* series carries `model_name`.
// /metrics needs no API key, so a served model name that is a filesystem path is labelled by its last
// component (./redact.ts).
// NOTE: `request_success_total` counts finished choices by finish reason; the latency histograms use
// gateway-side timings (TTFT and inter-token gaps as seen from here, including the engine hop).

import type { EngineStats } from '../protocol/engine-client.js';
import { Counter, Histogram, renderSamples } from './prom-text.js';
import { publicModelName } from './redact.js';
import type { FinishedRequest } from './request-record.js';

const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const E2E_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];

/**
 * What the app needs of its metrics. GatewayMetrics keeps them in this process; with several gateway
 * processes on one port (`--api-server-count`, src/cli/cluster-metrics.ts) one registry in the
 * primary sums every process's observations, so each scrape answers for all of them.
 */
export interface MetricsSink {
  setModelName(name: string): void;
  observe(r: FinishedRequest): void;
  /** Prometheus text; `stats` is null when the engine could not be asked. */
  render(stats: EngineStats | null): string | Promise<string>;
}

export class GatewayMetrics implements MetricsSink {
  readonly httpRequests = new Counter('http_requests_total', 'HTTP requests by method, route and status.');
  private readonly success = new Counter('vllm:request_success_total', 'Count of successfully processed requests (per choice).');
  private readonly ttft = new Histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', TTFT_BUCKETS);
  private readonly itl = new Histogram('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', ITL_BUCKETS);
  private readonly e2e = new Histogram('vllm:e2e_request_latency_seconds', 'Histogram of end to end request latency in seconds.', E2E_BUCKETS);
  private modelName = 'unknown';

  /** The model label; set by the app once it knows the served name (a path: its last component). */
  setModelName(name: string): void {
    this.modelName = publicModelName(name);
  }

  observe(r: FinishedRequest): void {
    this.httpRequests.inc({ method: r.method, route: r.route, status: String(r.status) });
    if (!r.generation || r.status !== 200) return;
    const m = { model_name: this.modelName };
    for (const reason of r.finishReasons) this.success.inc({ ...m, finished_reason: reason });
    if (r.ttft !== null) this.ttft.observe(m, r.ttft);
    for (const gap of r.interTokenLatencies) this.itl.observe(m, gap);
    this.e2e.observe(m, r.e2e);
  }

  /** Prometheus text; `stats` is null when the engine could not be asked (its series are then omitted). */
  render(stats: EngineStats | null): string {
    const m = { model_name: this.modelName };
    let out = '';
    if (stats) {
      out += renderSamples('vllm:num_requests_running', 'Number of requests in model execution batches.', 'gauge', [[m, stats.running]]);
      out += renderSamples('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', 'gauge', [[m, stats.waiting]]);
      if (stats.paused !== undefined) {
        out += renderSamples('ernie_edge:num_requests_paused', "Number of running requests paused because their client's stream buffer is full.", 'gauge', [[m, stats.paused]]);
      }
      out += renderSamples('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', 'gauge', [[m, stats.kvUsage]]);
      out += renderSamples('vllm:prompt_tokens_total', 'Number of prefill tokens processed.', 'counter', [[m, stats.promptTokens]]);
      out += renderSamples('vllm:generation_tokens_total', 'Number of generation tokens processed.', 'counter', [[m, stats.generationTokens]]);
      out += renderSamples('vllm:num_preemptions_total', 'Cumulative number of preemptions from the engine.', 'counter', [[m, stats.preemptions]]);
      out += renderSamples('vllm:prefix_cache_queries_total', 'Prefix cache queries, in terms of number of queried tokens.', 'counter', [[m, stats.prefixCacheQueries]]);
      out += renderSamples('vllm:prefix_cache_hits_total', 'Prefix cache hits, in terms of number of cached tokens.', 'counter', [[m, stats.prefixCacheHits]]);
      // Limits made visible: peaks the engine keeps at every step and submit (never sampled here).
      out += renderSamples('ernie_edge:num_requests_running_max', 'Most sequences in one engine step since start (bounded by --max-num-seqs).', 'gauge', [[m, stats.maxRunning]]);
      out += renderSamples('ernie_edge:num_requests_waiting_max', 'Most sequences waiting at once since start (bounded by --max-num-queued-reqs).', 'gauge', [[m, stats.maxWaiting]]);
      out += renderSamples('ernie_edge:fair_preemptions_total', 'Preemptions that seated a request under its fair share of --max-num-seqs.', 'counter', [[m, stats.fairPreemptions]]);
    }
    out += renderSamples('vllm:engine_up', 'Whether the engine answered the last stats scrape (1) or not (0).', 'gauge', [[m, stats ? 1 : 0]]);
    return out + this.success.render() + this.ttft.render() + this.itl.render() + this.e2e.render() + this.httpRequests.render();
  }
}
