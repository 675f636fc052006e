// `ernie-edge monitor --url URL`: polls /ready and /metrics of a running server and prints one compact
// line per poll — readiness, running/waiting requests, KV-cache usage, TTFT and end-to-end latency
// percentiles (from the vLLM-named histograms), prompt and generation tokens/s (from counter deltas)
// — plus a WARN line per threshold passed. Quantiles and rates cover the last interval; with --once
// (one poll: a probe or cron check) the quantiles are over the server's lifetime and rates are omitted.
//
// Exit code: 0 when the last poll was healthy; 1 when it was not (unreachable, /ready not 200, the
// engine not answering stats, or a threshold passed); 2 on a usage error. Never calls process.exit.

import { MONITOR_HELP, parseMonitorArgs, type MonitorOptions } from './monitor-args.js';
import { bucketDelta, histogramBuckets, histogramQuantile, parsePromText, sumOf, type Sample } from './prom-parse.js';

export interface Poll {
  at: number; // ms
  ready: number | null; // HTTP status of /ready; null: unreachable
  readyDetail: string;
  samples: Sample[] | null;
}

export async function poll(url: string, timeoutMs: number): Promise<Poll> {
  const get = async (path: string) => {
    try {
      const r = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
      return { status: r.status, text: await r.text() };
    } catch (err) {
      return { status: null, text: (err as Error).message };
    }
  };
  const [ready, metrics] = await Promise.all([get('/ready'), get('/metrics')]);
  let readyDetail = ready.text;
  try {
    const j = JSON.parse(ready.text) as { status?: string; message?: string | null };
    readyDetail = [j.status, j.message].filter(Boolean).join(': ');
  } catch {
    /* not JSON (unreachable, or not our server): keep the text */
  }
  return { at: Date.now(), ready: ready.status, readyDetail, samples: metrics.status === 200 ? parsePromText(metrics.text) : null };
}

const ms = (s: number | null) => (s === null ? '-' : s < 1 ? `${Math.round(s * 1000)}ms` : `${s.toFixed(2)}s`);

/** One poll (and the previous one, for deltas) → the printed line, warnings, and the verdict. */
export function evaluate(cur: Poll, prev: Poll | null, opts: MonitorOptions): { line: string; warnings: string[]; healthy: boolean } {
  const warnings: string[] = [];
  const time = new Date(cur.at).toISOString().slice(11, 19);
  if (cur.ready !== 200) warnings.push(cur.ready === null ? `UNREACHABLE ${opts.url}: ${cur.readyDetail}` : `NOT READY: /ready ${cur.ready} (${cur.readyDetail})`);
  const s = cur.samples;
  if (!s) return { line: `${time} ${cur.ready === 200 ? 'ready' : 'DOWN'} | /metrics unavailable`, warnings, healthy: false };
  const engineUp = sumOf(s, 'vllm:engine_up') !== 0;
  if (!engineUp) warnings.push('ENGINE DOWN: the gateway could not read engine stats');
  const running = sumOf(s, 'vllm:num_requests_running');
  const waiting = sumOf(s, 'vllm:num_requests_waiting');
  const kv = sumOf(s, 'vllm:kv_cache_usage_perc');
  const window = (name: string) => bucketDelta(histogramBuckets(s, name), prev?.samples && !opts.once ? histogramBuckets(prev.samples, name) : []);
  const ttft = window('vllm:time_to_first_token_seconds');
  const e2e = window('vllm:e2e_request_latency_seconds');
  const e2eP99 = histogramQuantile(0.99, e2e);
  const rate = (name: string): string => {
    if (!prev?.samples || opts.once) return '-';
    const a = sumOf(s, name);
    const b = sumOf(prev.samples, name);
    const dt = (cur.at - prev.at) / 1000;
    return a === null || b === null || dt <= 0 ? '-' : (Math.max(0, a - b) / dt).toFixed(1);
  };
  if (opts.maxWaiting !== undefined && waiting !== null && waiting > opts.maxWaiting) warnings.push(`WAITING ${waiting} > --max-waiting ${opts.maxWaiting}`);
  if (opts.maxLatency !== undefined && e2eP99 !== null && e2eP99 > opts.maxLatency) warnings.push(`LATENCY e2e p99 ${ms(e2eP99)} > --max-latency ${ms(opts.maxLatency)}`);
  const n = (v: number | null) => (v === null ? '-' : String(v));
  const line = [
    `${time} ${cur.ready === 200 ? 'ready' : 'NOT READY'}`,
    `running ${n(running)} waiting ${n(waiting)}`,
    `kv ${kv === null ? '-' : `${(kv * 100).toFixed(1)}%`}`,
    `ttft p50 ${ms(histogramQuantile(0.5, ttft))} p99 ${ms(histogramQuantile(0.99, ttft))}`,
    `e2e p50 ${ms(histogramQuantile(0.5, e2e))} p99 ${ms(e2eP99)}`,
    `gen ${rate('vllm:generation_tokens_total')} tok/s prompt ${rate('vllm:prompt_tokens_total')} tok/s`,
  ].join(' | ');
  return { line, warnings, healthy: warnings.length === 0 };
}

export async function runMonitor(argv: readonly string[], write: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  let opts: MonitorOptions | 'help';
  try {
    opts = parseMonitorArgs(argv);
  } catch (err) {
    process.stderr.write(`ernie-edge monitor: ${(err as Error).message}\n${MONITOR_HELP}\n`);
    return 2;
  }
  if (opts === 'help') {
    write(`${MONITOR_HELP}\n`);
    return 0;
  }
  let prev: Poll | null = null;
  let healthy = false;
  for (let i = 0; i < opts.count; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, opts.intervalMs));
    const cur = await poll(opts.url, opts.timeoutMs);
    const v = evaluate(cur, prev, opts);
    write(`${v.line}\n${v.warnings.map((w) => `  WARN ${w}\n`).join('')}`);
    healthy = v.healthy;
    prev = cur;
  }
  return healthy ? 0 : 1;
}
