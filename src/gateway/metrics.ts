// The gateway's Prometheus metrics, named like vLLM's so existing dashboards work: every series of
// vLLM's documented general list (test/fixtures/vllm-metrics.json, checked by test/gateway/metrics-
// vllm.test.ts). One instance per app (createApp makes one unless given one): no module-global registry.
//
// Engine-side gauges and counters (running/waiting, KV usage, token totals, preemptions, prefix cache,
// the per-step token histogram, the cache config) are read from engine.stats() at scrape time; request
// outcomes and per-request histograms are observed here as requests finish. Every vllm:* series
// carries `model_name`.
// Sources, all measured: token counts and n / max_tokens from the engine's `done` event; queue,
// prefill, decode, inference times and preemptions on the engine's clock (vLLM's intervals, see
// native/src/engine/engine.h RequestTiming); TTFT, inter-token gaps and e2e as seen from the gateway
// (including the engine hop). request_success_total counts finished choices by finish reason (vLLM v1
// counts each of n choices), its labels present from the start; a choice left without a finish
// reason counts as `abort` when the request ended normally or by the client (200, 499), else `error`.
// /metrics needs no API key, so a served model name that is a filesystem path is labelled by its last
// component (./redact.ts).

import type { EngineStats } from '../protocol/engine-client.js';
import { Counter, Histogram, renderHistogramSnapshot, renderSamples } from './prom-text.js';
import { publicModelName } from './redact.js';
import type { FinishedRequest } from './request-record.js';

const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];
const N_BUCKETS = [1, 2, 5, 10, 20];
const PREEMPTION_BUCKETS = [0, 1, 2, 5, 10, 20, 50, 100];
/** vLLM's build_1_2_5_buckets up to a model length (2^17 covers ERNIE-4.5's 131072). */
const TOKEN_BUCKETS = oneTwoFive(131072);
const FINISH_REASONS = ['stop', 'length', 'abort', 'error'];

function oneTwoFive(max: number): number[] {
  const out: number[] = [];
  for (let e = 1; ; e *= 10) for (const m of [1, 2, 5]) if (m * e <= max) out.push(m * e); else return out;
}

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
  private readonly tpot = new Histogram('vllm:request_time_per_output_token_seconds', 'Histogram of time_per_output_token_seconds per request.', ITL_BUCKETS);
  private readonly e2e = new Histogram('vllm:e2e_request_latency_seconds', 'Histogram of end to end request latency in seconds.', LATENCY_BUCKETS);
  private readonly queue = new Histogram('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', LATENCY_BUCKETS);
  private readonly inference = new Histogram('vllm:request_inference_time_seconds', 'Histogram of time spent in RUNNING phase for request.', LATENCY_BUCKETS);
  private readonly prefill = new Histogram('vllm:request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.', LATENCY_BUCKETS);
  private readonly decode = new Histogram('vllm:request_decode_time_seconds', 'Histogram of time spent in DECODE phase for request.', LATENCY_BUCKETS);
  private readonly promptTokens = new Histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', TOKEN_BUCKETS);
  private readonly generationTokens = new Histogram('vllm:request_generation_tokens', 'Number of generation tokens processed.', TOKEN_BUCKETS);
  private readonly maxGeneration = new Histogram('vllm:request_max_num_generation_tokens', 'Histogram of maximum number of requested generation tokens.', TOKEN_BUCKETS);
  private readonly paramsN = new Histogram('vllm:request_params_n', 'Histogram of the n request parameter.', N_BUCKETS);
  private readonly paramsMaxTokens = new Histogram('vllm:request_params_max_tokens', 'Histogram of the max_tokens request parameter.', TOKEN_BUCKETS);
  private readonly preemptions = new Histogram('vllm:request_num_preemptions', 'Number of preemptions of each request.', PREEMPTION_BUCKETS);
  private readonly kvComputed = new Histogram('vllm:request_prefill_kv_computed_tokens', 'Prompt tokens computed in prefill (not from the prefix cache), per request.', TOKEN_BUCKETS);
  private modelName = 'unknown';

  /** The model label; set by the app once it knows the served name (a path: its last component). */
  setModelName(name: string): void {
    this.modelName = publicModelName(name);
  }

  observe(r: FinishedRequest): void {
    this.httpRequests.inc({ method: r.method, route: r.route, status: String(r.status) });
    if (!r.generation) return;
    const m = { model_name: this.modelName };
    const unfinished = Math.max(0, (r.choices ?? 0) - r.finishReasons.length);
    if (unfinished > 0) this.success.inc({ ...m, finished_reason: r.status === 200 || r.status === 499 ? 'abort' : 'error' }, unfinished);
    for (const run of r.engineRuns ?? []) {
      this.promptTokens.observe(m, run.promptTokens);
      this.generationTokens.observe(m, run.generationTokens);
      this.maxGeneration.observe(m, run.maxChoiceTokens);
      this.paramsN.observe(m, run.n);
      if (run.maxTokens !== null) this.paramsMaxTokens.observe(m, run.maxTokens);
      this.kvComputed.observe(m, run.promptTokens - run.cachedTokens);
      const t = run.timing;
      if (!t) continue;
      this.queue.observe(m, t.queue);
      this.prefill.observe(m, t.prefill);
      this.decode.observe(m, t.decode);
      this.inference.observe(m, t.inference);
      this.preemptions.observe(m, t.preemptions);
      // Per request: decode time over the tokens after the first (of its longest choice).
      if (run.maxChoiceTokens > 1) this.tpot.observe(m, t.decode / (run.maxChoiceTokens - 1));
    }
    if (r.status !== 200) return;
    for (const reason of r.finishReasons) this.success.inc({ ...m, finished_reason: reason });
    if (r.ttft !== null) this.ttft.observe(m, r.ttft);
    for (const gap of r.interTokenLatencies) this.itl.observe(m, gap);
    this.e2e.observe(m, r.e2e);
  }

  /** Prometheus text; `stats` is null when the engine could not be asked (its series are then omitted). */
  render(stats: EngineStats | null): string {
    const m = { model_name: this.modelName };
    for (const reason of FINISH_REASONS) this.success.inc({ ...m, finished_reason: reason }, 0); // present from the start
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
      if (stats.iterationTokens) out += renderHistogramSnapshot('vllm:iteration_tokens_total', 'Histogram of number of tokens per engine_step.', m, stats.iterationTokens);
      if (stats.cacheConfig) out += renderSamples('vllm:cache_config_info', 'Information of the LLMEngine CacheConfig', 'gauge', [[{ ...m, ...stats.cacheConfig }, 1]]);
    }
    out += renderSamples('vllm:engine_up', 'Whether the engine answered the last stats scrape (1) or not (0).', 'gauge', [[m, stats ? 1 : 0]]);
    const histograms = [this.ttft, this.itl, this.tpot, this.e2e, this.queue, this.inference, this.prefill, this.decode, this.promptTokens, this.generationTokens, this.maxGeneration, this.paramsN, this.paramsMaxTokens, this.preemptions, this.kvComputed];
    return out + this.success.render() + histograms.map((h) => h.render()).join('') + this.httpRequests.render();
  }
}
