// End to end on the REAL native engine (`ernie-edge serve`: gateway and sidecar processes, the store
// over the Unix socket) with the small formula checkpoint of real-engine.e2e.test.ts, driven by
// openai-node: the Responses API with previous_response_id, retrieve and delete through the sidecar's
// store; developer messages counted as system; min_tokens against eos and against stop strings;
// a client abort recorded as 499 at info level with its KV blocks freed.
import OpenAI from 'openai';
import { copyFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFormulaCheckpoint } from '../../src/sidecar/model/formula.js';
import { GOLDEN } from '../engine/helpers.js';
import { MODEL } from '../gateway/helpers.js';
import { CliProcess, pollStatus, removeTempDirs, tempDir } from './process-helpers.js';

let proc: CliProcess;
let base: string;
let client: OpenAI;

async function metricsText(): Promise<string> {
  return (await fetch(`${base}/metrics`)).text();
}

beforeAll(async () => {
  const dir = tempDir('ernie-tiny3k-');
  const config = JSON.parse(await readFile(path.join(GOLDEN, 'tiny', 'config.json'), 'utf8'));
  await writeFormulaCheckpoint(dir, { ...config, vocab_size: 3072, max_position_embeddings: 2048 });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(GOLDEN, 'tokenizer', 'hf', f), path.join(dir, f));
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

describe('issue 25 on the real engine', () => {
  it('responses: a follow-up through previous_response_id carries the first turn (the sidecar store), retrieve and delete', async () => {
    const first = await client.responses.create({ model: MODEL, input: '你好，请介绍一下你自己。', max_output_tokens: 8, temperature: 0 });
    expect(first.status).toBe('incomplete');
    expect(first.usage!.output_tokens).toBe(8);
    const alone = await client.responses.create({ model: MODEL, input: '然后呢？', max_output_tokens: 4, temperature: 0, store: false });
    const second = await client.responses.create({ model: MODEL, input: '然后呢？', previous_response_id: first.id, max_output_tokens: 4, temperature: 0 });
    // The follow-up's prompt holds the first input and answer besides its own.
    expect(second.usage!.input_tokens).toBeGreaterThan(alone.usage!.input_tokens + first.usage!.output_tokens);
    expect((await client.responses.retrieve(second.id)).output_text).toBe(second.output_text);
    await client.responses.delete(first.id);
    await expect(client.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    // Streamed, with the same greedy text as the JSON answer.
    let streamed = '';
    for await (const ev of await client.responses.create({ model: MODEL, input: '然后呢？', max_output_tokens: 4, temperature: 0, stream: true, store: false })) {
      if (ev.type === 'response.output_text.delta') streamed += ev.delta;
    }
    expect(streamed).toBe(alone.output_text);
  });

  it('developer messages are counted as system ones', async () => {
    const ask = async (messages: OpenAI.Chat.ChatCompletionMessageParam[]) =>
      (await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1 })).usage!.prompt_tokens;
    const user = { role: 'user' as const, content: '你好' };
    const [plain, dev, sys] = [await ask([user]), await ask([{ role: 'developer', content: '用中文回答。' }, user]), await ask([{ role: 'system', content: '用中文回答。' }, user])];
    expect(dev).toBeGreaterThan(plain);
    expect(dev).toBe(sys);
  });

  it('min_tokens: eos made the pick at every step still waits; a stop string in the first tokens is ordinary text', async () => {
    const eos = ((await (await fetch(`${base}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: '</s>', add_special_tokens: false }) })).json()) as { tokens: number[] }).tokens;
    expect(eos).toHaveLength(1);
    const messages = [{ role: 'user' as const, content: '写一首诗。' }];
    const biased = (extra: object) => client.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0, logit_bias: { [eos[0]!]: 100 }, ...extra } as never) as Promise<OpenAI.Chat.ChatCompletion>;
    const without = await biased({});
    expect(without.usage!.completion_tokens).toBe(1);
    expect(without.choices[0]!.finish_reason).toBe('stop');
    const withMin = await biased({ min_tokens: 5 });
    expect(withMin.usage!.completion_tokens).toBe(6);
    expect(withMin.choices[0]!.finish_reason).toBe('stop');
    // Stop strings: a +100 bias makes one visible token the pick at every step; its text as a stop
    // string ends a plain request at once, but is ordinary text within min_tokens.
    const ids = ((await (await fetch(`${base}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'A', add_special_tokens: false }) })).json()) as { tokens: number[] }).tokens;
    const forced = { model: MODEL, messages, max_tokens: 8, temperature: 0, ignore_eos: true, logit_bias: { [ids.at(-1)!]: 100 } };
    const shown = (await client.chat.completions.create({ ...forced, logprobs: true } as never)) as OpenAI.Chat.ChatCompletion;
    const stop = shown.choices[0]!.logprobs!.content![0]!.token.trim();
    expect(stop.length, shown.choices[0]!.message.content!).toBeGreaterThan(0);
    expect(shown.choices[0]!.message.content).toBe(shown.choices[0]!.logprobs!.content!.map((t) => t.token).join(''));
    const plain = (await client.chat.completions.create({ ...forced, stop: [stop] } as never)) as OpenAI.Chat.ChatCompletion;
    expect(plain.choices[0]!.finish_reason).toBe('stop');
    expect(plain.choices[0]!.message.content).not.toContain(stop);
    const covered = (await client.chat.completions.create({ ...forced, stop: [stop], min_tokens: 3 } as never)) as OpenAI.Chat.ChatCompletion;
    expect(covered.choices[0]!.finish_reason).toBe('stop');
    expect(covered.usage!.completion_tokens).toBe(4);
    expect(covered.choices[0]!.message.content).toContain(stop);
  });

  it('a client abort is a 499 at info level, never a 5xx, and its KV blocks are freed', async () => {
    const ctrl = new AbortController();
    const res = await fetch(`${base}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, input: '请用中文介绍一下人工智能的发展历史。', max_output_tokens: 2000, ignore_eos: true, stream: true, store: false }),
      signal: ctrl.signal,
    });
    // The first bytes of the event stream: generation is under way.
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    const logged = proc.waitForLog((l) => l.route === '/v1/responses' && l.status === 499);
    ctrl.abort();
    const line = await logged;
    expect(line.msg).toBe('client closed request');
    expect(line.level).toBe(30); // pino's info
    expect(proc.logs.filter((l) => l.msg === 'request failed')).toEqual([]);
    const text = await metricsText();
    expect(text).toMatch(/^http_requests_total\{[^}]*route="\/v1\/responses"[^}]*status="499"[^}]*\} 1$/m);
    // /ready's 503s while the model loaded are its answer to probes, not failures.
    expect(text.split('\n').filter((l) => /^http_requests_total\{/.test(l) && /status="5\d\d"/.test(l) && !l.includes('route="/ready"'))).toEqual([]);
    // The engine lets the request go within a few steps: wait on the state itself.
    await expect.poll(async () => / 0$/m.test((await metricsText()).split('\n').find((l) => l.startsWith('vllm:kv_cache_usage_perc')) ?? ''), { timeout: 5000, interval: 20 }).toBe(true);
  });
});
