// Every metric of vLLM's documented list (test/fixtures/vllm-metrics.json, with its source) is exposed
// after one request on the real engine (tiny golden), with the documented type and values that are
// measured, not placeholders: the token histograms' sums equal the request's usage, the phase
// timings add up (inference = prefill + decode, each within e2e), the per-step token histogram
// counts the steps' tokens, and request_success_total has its finish reasons from the start.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePromText, type Sample } from '../../src/cli/prom-parse.js';
import { readGolden } from '../engine/helpers.js';
import { REAL_MODEL, realGateway, type RealGateway } from './real-engine.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
interface Documented {
  source: string;
  metrics: { name: string; type: 'gauge' | 'counter' | 'histogram'; labels?: Record<string, string[]> }[];
}
const documented = JSON.parse(readFileSync(new URL('../fixtures/vllm-metrics.json', import.meta.url), 'utf8')) as Documented;
const prompt = readGolden('tiny').prompts[2]!.prompt;

let gw: RealGateway;
beforeAll(async () => {
  gw = await realGateway({ maxNumBatchedTokens: 16 }); // the 40-token prompt takes three prefill steps
});
afterAll(() => gw.close());

const scrape = async () => {
  const text = await (await gw.handle.fetch(new Request('http://test/metrics'))).text();
  return { text, samples: parsePromText(text) };
};
const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) => {
  const s = samples.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  expect(s.length, `${name} ${JSON.stringify(labels)}`).toBe(1);
  return s[0]!.value;
};

describe("vLLM's documented metrics", () => {
  it('request_success_total has its finish reasons before any request', async () => {
    const { samples } = await scrape();
    for (const reason of ['stop', 'length', 'abort']) expect(value(samples, 'vllm:request_success_total', { finished_reason: reason, model_name: REAL_MODEL })).toBe(0);
  });

  it(`every name of ${documented.source} is exposed after one request, with its type, and the values are the request's`, async () => {
    const res = await gw.post('/v1/completions', { model: REAL_MODEL, prompt, max_tokens: 5, temperature: 0, ignore_eos: true, n: 2 });
    const body = (await res.json()) as Any;
    expect(res.status).toBe(200);
    const { text, samples } = await scrape();
    for (const m of documented.metrics) {
      expect(text, m.name).toContain(`# TYPE ${m.name} ${m.type}\n`);
      const series = m.type === 'histogram' ? `${m.name}_count` : m.name;
      const found = samples.filter((s) => s.name === series);
      expect(found.length, `${series} has a sample`).toBeGreaterThan(0);
      for (const s of found) expect(s.labels.model_name).toBe(REAL_MODEL);
      for (const [label, values] of Object.entries(m.labels ?? {})) for (const v of values) expect(found.some((s) => s.labels[label] === v), `${m.name}{${label}="${v}"}`).toBe(true);
    }
    const m = { model_name: REAL_MODEL };
    // Token counts: the histograms' sums are the usage.
    expect(value(samples, 'vllm:request_prompt_tokens_sum', m)).toBe(body.usage.prompt_tokens);
    expect(value(samples, 'vllm:request_generation_tokens_sum', m)).toBe(body.usage.completion_tokens);
    expect(value(samples, 'vllm:request_max_num_generation_tokens_sum', m)).toBe(5);
    expect(value(samples, 'vllm:request_params_n_sum', m)).toBe(2);
    expect(value(samples, 'vllm:request_params_max_tokens_sum', m)).toBe(5);
    expect(value(samples, 'vllm:request_prefill_kv_computed_tokens_sum', m)).toBe(body.usage.prompt_tokens - body.usage.prompt_tokens_details.cached_tokens);
    expect(value(samples, 'vllm:request_success_total', { ...m, finished_reason: 'length' })).toBe(2);
    expect(value(samples, 'vllm:prompt_tokens_total', m)).toBe(body.usage.prompt_tokens);
    expect(value(samples, 'vllm:generation_tokens_total', m)).toBe(body.usage.completion_tokens);
    // Per step: a prefill of 40 in chunks of at most 16, then 4 decode steps of 2 sequences.
    expect(value(samples, 'vllm:iteration_tokens_total_sum', m)).toBe(prompt.length + 4 * 2);
    expect(value(samples, 'vllm:iteration_tokens_total_count', m)).toBe(Math.ceil(prompt.length / 16) + 4);
    expect(value(samples, 'vllm:iteration_tokens_total_bucket', { ...m, le: '16' })).toBe(Math.ceil(prompt.length / 16) + 4);
    // Phases (engine clock): each measured once, positive, consistent with each other and with e2e.
    const phase = (n: string) => value(samples, `vllm:request_${n}_time_seconds_sum`, m);
    const e2e = value(samples, 'vllm:e2e_request_latency_seconds_sum', m);
    for (const n of ['queue', 'prefill', 'decode', 'inference']) {
      expect(value(samples, `vllm:request_${n}_time_seconds_count`, m)).toBe(1);
      expect(phase(n)).toBeGreaterThan(0);
      expect(phase(n)).toBeLessThan(e2e);
    }
    expect(Math.abs(phase('inference') - phase('prefill') - phase('decode'))).toBeLessThan(1e-6);
    expect(phase('queue') + phase('inference')).toBeLessThan(e2e);
    expect(value(samples, 'vllm:request_time_per_output_token_seconds_sum', m)).toBeCloseTo(phase('decode') / 4, 9);
    expect(value(samples, 'vllm:time_to_first_token_seconds_count', m)).toBe(1);
    expect(value(samples, 'vllm:inter_token_latency_seconds_count', m)).toBe(4);
    expect(value(samples, 'vllm:request_num_preemptions_sum', m)).toBe(0);
    const cache = samples.find((s) => s.name === 'vllm:cache_config_info')!;
    expect(cache.value).toBe(1);
    expect(cache.labels).toMatchObject({ block_size: '16', num_gpu_blocks: '64' });
  });

  it('a streamed request the client abandons counts its choices as abort', async () => {
    const before = value((await scrape()).samples, 'vllm:request_success_total', { model_name: REAL_MODEL, finished_reason: 'abort' });
    const res = await gw.post('/v1/completions', { model: REAL_MODEL, prompt, max_tokens: 200, ignore_eos: true, stream: true, n: 2 });
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk: the request runs
    await reader.cancel();
    // The record ends when the stream's cancel has run (synchronously inside cancel()).
    expect(value((await scrape()).samples, 'vllm:request_success_total', { model_name: REAL_MODEL, finished_reason: 'abort' })).toBe(before + 2);
  });
});
