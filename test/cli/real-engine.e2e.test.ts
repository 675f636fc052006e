// End to end on the REAL native engine: `ernie-edge serve --model DIR` (gateway + sidecar processes)
// with a small ERNIE-shaped formula checkpoint whose vocabulary covers the test tokenizer, driven
// by the official openai SDK: sampling controls, seeds, n, logprobs, usage, stop, and a client
// disconnect that frees the request's KV blocks.
import OpenAI from 'openai';
import { copyFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFormulaCheckpoint } from '../../src/sidecar/model/formula.js';
import { GOLDEN } from '../engine/helpers.js';
import { generateCases } from '../gateway/fuzz-cases.js';
import { MODEL as GATEWAY_MODEL } from '../gateway/helpers.js';
import { CliProcess, pollStatus, removeTempDirs, sseFrames, tempDir } from './process-helpers.js';

const TOKENIZER = path.join(GOLDEN, 'tokenizer');
let proc: CliProcess;
let base: string;
let client: OpenAI;
// The gateway fuzz cases name this model in their valid parts.
const MODEL = GATEWAY_MODEL;

/** vllm:NAME{model_name="..."} value from /metrics. */
async function metric(name: string): Promise<number> {
  return (await metrics([name]))[0]!;
}

/** Several series from one scrape (one engine stats snapshot: consistent with each other). */
async function metrics(names: string[]): Promise<number[]> {
  const lines = (await (await fetch(`${base}/metrics`)).text()).split('\n');
  return names.map((name) => {
    const line = lines.find((l) => l.startsWith(name + '{') || l.startsWith(name + ' '));
    if (!line) throw new Error(`no ${name} in /metrics`);
    return Number(line.split(' ').at(-1));
  });
}

beforeAll(async () => {
  const dir = tempDir('ernie-tiny3k-');
  const config = JSON.parse((await import('node:fs')).readFileSync(path.join(GOLDEN, 'tiny', 'config.json'), 'utf8'));
  await writeFormulaCheckpoint(dir, { ...config, vocab_size: 3072, max_position_embeddings: 2048 });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(TOKENIZER, 'hf', f), path.join(dir, f));
  proc = new CliProcess(['serve', '--model', dir, '--served-model-name', MODEL, '--port', '0', '--threads', '2', '--kv-cache-memory', '64MiB'], {
    ERNIE_EDGE_CACHE: tempDir('ernie-cache-'),
  });
  base = await proc.baseURL();
  await pollStatus(`${base}/ready`, 200, 60_000);
  client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  proc?.kill('SIGTERM');
  await proc?.exited;
  removeTempDirs();
});

describe('serve on the real engine', () => {
  it('chat: seeded sampling is reproducible, n = 2 gives two choices, usage adds up', async () => {
    const ask = (seed: number) =>
      client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: '写一首关于春天的五言绝句。' }], max_tokens: 12, temperature: 0.9, seed, n: 2 });
    const [a, b, c] = await Promise.all([ask(7), ask(7), ask(8)]);
    expect(a.choices.map((x) => x.message.content)).toEqual(b.choices.map((x) => x.message.content));
    expect(a.choices.length).toBe(2);
    expect(a.choices.map((x) => x.index).sort()).toEqual([0, 1]);
    expect(JSON.stringify(a.choices)).not.toEqual(JSON.stringify(c.choices));
    expect(a.usage!.prompt_tokens).toBeGreaterThan(5);
    expect(a.usage!.total_tokens).toBe(a.usage!.prompt_tokens + a.usage!.completion_tokens);
    expect(a.usage!.completion_tokens).toBeLessThanOrEqual(24);
  });

  it('completions from token ids with logprobs: exact lengths, sorted alternatives, finish_reason length', async () => {
    const r = await client.completions.create({ model: MODEL, prompt: [1, 100, 200, 300], max_tokens: 6, temperature: 0, logprobs: 3, ignore_eos: true } as never);
    const choice = r.choices[0]!;
    expect(choice.finish_reason).toBe('length');
    expect(r.usage!.prompt_tokens).toBe(4);
    expect(r.usage!.completion_tokens).toBe(6);
    const lp = choice.logprobs!;
    expect(lp.token_logprobs!.length).toBe(6);
    for (const [i, top] of lp.top_logprobs!.entries()) {
      const vals = Object.values(top);
      expect(vals.length).toBeGreaterThan(0);
      expect(Math.max(...vals)).toBeGreaterThanOrEqual(lp.token_logprobs![i]! - 1e-4); // greedy picks the top
      expect(lp.token_logprobs![i]!).toBeLessThanOrEqual(0);
    }
  });

  it('greedy streaming equals greedy non-streaming, with usage in the last chunk', async () => {
    const body = { model: MODEL, messages: [{ role: 'user' as const, content: '如何快速学习Python编程？' }], max_tokens: 16, temperature: 0 };
    const whole = await client.chat.completions.create(body);
    const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const ch of stream) {
      text += ch.choices[0]?.delta.content ?? '';
      if (ch.usage) usage = ch.usage;
    }
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(usage!.completion_tokens).toBe(whole.usage!.completion_tokens);
  });

  it('a client that disconnects mid-stream frees its request and KV blocks within a second', async () => {
    const ctrl = new AbortController();
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // As long as the model allows (2,048 positions): the tiny model decodes fast, and a starved
      // client (CI runs test files in parallel on 2 cores) must still find the request running.
      body: JSON.stringify({ model: MODEL, prompt: '请用中文介绍一下人工智能的发展历史。', max_tokens: 2000, ignore_eos: true, stream: true }),
      signal: ctrl.signal,
    });
    const frames = sseFrames(res);
    await frames.next();
    await frames.next();
    const series = ['vllm:num_requests_running', 'vllm:kv_cache_usage_perc'];
    // One scrape for both: two could straddle the request's end (seen once in CI with 1,500 tokens).
    const [running0, usage0] = await metrics(series);
    expect(running0).toBe(1);
    expect(usage0).toBeGreaterThan(0);
    ctrl.abort();
    const t0 = Date.now();
    let [running, usage] = [running0, usage0];
    while (Date.now() - t0 < 1000 && (running !== 0 || usage !== 0)) [running, usage] = await metrics(series);
    expect([running, usage]).toEqual([0, 0]);
  });

  it('2,400 hostile requests over real HTTP all get a 4xx OpenAI error, and the server keeps serving', async () => {
    const statuses = new Map<number, number>();
    for (const c of generateCases(2400, 0x5eed)) {
      const method = c.method ?? 'POST';
      const res = await fetch(base + c.path, {
        method,
        headers: c.contentType ? { 'content-type': c.contentType } : {},
        body: method === 'GET' ? undefined : (c.body as BodyInit),
      });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const text = await res.text();
      expect(res.status, `${c.path} ${String(c.body).slice(0, 120)}`).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      const err = (JSON.parse(text) as { error: { message: string; type: string } }).error;
      expect(typeof err.message).toBe('string');
      expect(typeof err.type).toBe('string');
    }
    console.log('real-process fuzz statuses:', Object.fromEntries(statuses));
    const ok = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: '你好' }], max_tokens: 4 });
    expect(ok.choices[0]!.finish_reason).toMatch(/stop|length/);
    expect(await metric('vllm:num_requests_running')).toBe(0);
  });
});
