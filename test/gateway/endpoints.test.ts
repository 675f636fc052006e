import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from '../../src/gateway/metrics.js';
import type { Logger } from '../../src/protocol/logger.js';
import { MODEL, expectError, setup, sortedKeys } from './helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON/YAML, read path by path in assertions
type Any = Record<string, any>;

describe('models', () => {
  it('lists the served model in OpenAI shape and fetches it by id (ids may contain /)', async () => {
    const { get } = setup();
    const list = (await (await get('/v1/models')).json()) as Any;
    expect(list.object).toBe('list');
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).toMatchObject({ id: MODEL, object: 'model', owned_by: 'ernie-edge', max_model_len: 2048 });
    expect(sortedKeys(list.data[0])).toEqual(['created', 'id', 'max_model_len', 'object', 'owned_by', 'parent', 'root']);
    expect(list.data[0].root).toBe(MODEL); // the served name, never the sidecar's filesystem path
    const one = await get(`/v1/models/${MODEL}`);
    expect(one.status).toBe(200);
    expect(((await one.json()) as Any).id).toBe(MODEL);
    const missing = await expectError(await get('/v1/models/gpt-4'), 404);
    expect(missing.code).toBe('model_not_found');
  });

  it('servedModelName renames the model everywhere; other names are 404', async () => {
    const { get, post } = setup({ servedModelName: 'ernie' });
    expect(((await (await get('/v1/models')).json()) as Any).data[0].id).toBe('ernie');
    const ok = (await (await post('/v1/completions', { model: 'ernie', prompt: 'x', max_tokens: 1 })).json()) as Any;
    expect(ok.model).toBe('ernie');
    const e = await expectError(await post('/v1/completions', { model: MODEL, prompt: 'x' }), 404);
    expect(e.param).toBe('model');
  });
});

describe('tokenize / detokenize', () => {
  it('uses vLLM shapes and round-trips', async () => {
    const { post } = setup();
    const t = (await (await post('/tokenize', { model: MODEL, prompt: 'hi 你好' })).json()) as Any;
    expect(sortedKeys(t)).toEqual(['count', 'max_model_len', 'tokens']);
    expect(t.count).toBe(6); // BOS + 5 code points
    expect(t.max_model_len).toBe(2048);
    const noSpecial = (await (await post('/tokenize', { prompt: 'hi 你好', add_special_tokens: false })).json()) as Any;
    expect(noSpecial.tokens).toEqual(t.tokens.slice(1));
    const d = (await (await post('/detokenize', { model: MODEL, tokens: noSpecial.tokens })).json()) as Any;
    expect(d).toEqual({ prompt: 'hi 你好' });
    const chat = (await (await post('/tokenize', { messages: [{ role: 'user', content: 'q' }] })).json()) as Any;
    expect(chat.count).toBe(1 + 'user: q\nassistant: '.length);
    await expectError(await post('/detokenize', { tokens: [10 ** 9] }), 400);
    await expectError(await post('/tokenize', { prompt: 5 }), 400);
  });
});

describe('health, readiness, draining', () => {
  it('/health is 200 whatever the engine; /ready follows the engine and draining', async () => {
    const { get, engine, handle } = setup();
    expect((await get('/health')).status).toBe(200);
    expect((await get('/ready')).status).toBe(200);
    engine.setReady(false);
    expect((await get('/ready')).status).toBe(503);
    expect((await get('/health')).status).toBe(200);
    engine.setReady(true);
    handle.setDraining(true);
    expect(handle.draining).toBe(true);
    const r = await get('/ready');
    expect(r.status).toBe(503);
    expect(((await r.json()) as Any).status).toBe('draining');
    handle.setDraining(false);
    expect((await get('/ready')).status).toBe(200);
    engine.kill();
    expect((await get('/ready')).status).toBe(503);
    expect((await get('/health')).status).toBe(200);
  });
});

/** Parses Prometheus text into name{labels} → value. */
function parseProm(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    expect(m, `bad metrics line: ${line}`).not.toBeNull();
    out.set(m![1]! + (m![2] ?? ''), Number(m![3]));
  }
  return out;
}

describe('metrics', () => {
  it('exposes vLLM-named series with model_name, and counters move after requests', async () => {
    const { get, post } = setup({ metrics: new GatewayMetrics() });
    const before = parseProm(await (await get('/metrics')).text());
    const names = [...before.keys()].map((k) => k.replace(/\{.*/, ''));
    for (const n of ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc', 'vllm:prompt_tokens_total', 'vllm:generation_tokens_total', 'vllm:num_preemptions_total', 'vllm:prefix_cache_queries_total', 'vllm:prefix_cache_hits_total']) {
      expect(names).toContain(n);
    }
    expect(before.get(`vllm:generation_tokens_total{model_name="${MODEL}"}`)).toBe(0);
    await post('/v1/completions', { model: MODEL, prompt: 'abc', max_tokens: 4 });
    await post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 3, stream: true }).then((r) => r.text());
    await post('/v1/completions', { model: 'nope', prompt: 'abc' });
    const res = await get('/metrics');
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0.0.4/);
    const after = parseProm(await res.text());
    const m = `model_name="${MODEL}"`;
    expect(after.get(`vllm:generation_tokens_total{${m}}`)).toBe(7);
    expect(after.get(`vllm:prompt_tokens_total{${m}}`)).toBeGreaterThan(0);
    expect(after.get(`vllm:request_success_total{${m},finished_reason="length"}`)).toBe(2);
    expect(after.get(`vllm:time_to_first_token_seconds_count{${m}}`)).toBe(2);
    expect(after.get(`vllm:e2e_request_latency_seconds_count{${m}}`)).toBe(2);
    expect(after.get(`vllm:e2e_request_latency_seconds_bucket{${m},le="+Inf"}`)).toBe(2);
    expect(after.get(`vllm:inter_token_latency_seconds_count{${m}}`)).toBe(3 + 2);
    expect(after.get('http_requests_total{method="POST",route="/v1/completions",status="200"}')).toBe(1);
    expect(after.get('http_requests_total{method="POST",route="/v1/completions",status="404"}')).toBe(1);
    expect(after.get('http_requests_total{method="POST",route="/v1/chat/completions",status="200"}')).toBe(1);
    expect(after.get('http_requests_total{method="GET",route="/metrics",status="200"}')).toBe(1);
  });

  it('still answers when the engine is down', async () => {
    const { get, engine } = setup();
    engine.kill();
    const res = await get('/metrics');
    expect(res.status).toBe(200);
    const m = parseProm(await res.text());
    expect([...m.entries()].find(([k]) => k.startsWith('vllm:engine_up'))?.[1]).toBe(0);
  });
});

describe('request id and logging', () => {
  it('honours x-request-id, generates one otherwise, and logs one line per request', async () => {
    const lines: Any[] = [];
    const logger: Logger = { info: (o) => lines.push(o), warn: (o) => lines.push(o), error: (o) => lines.push(o) };
    const { post } = setup({ logger });
    const a = await post('/v1/completions', { model: MODEL, prompt: 'abc', max_tokens: 2 }, { 'x-request-id': 'req-123' });
    expect(a.headers.get('x-request-id')).toBe('req-123');
    const b = await post('/v1/completions', { model: MODEL, prompt: 'abc', max_tokens: 2 }, { 'x-request-id': 'bad id\n' });
    expect(b.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const s = await post('/v1/completions', { model: MODEL, prompt: 'abc', max_tokens: 2, stream: true }, { 'x-request-id': 'req-s' });
    expect(lines.find((l) => l.reqId === 'req-s')).toBeUndefined(); // streams log when they finish
    await s.text();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ reqId: 'req-123', route: '/v1/completions', status: 200, promptTokens: 4, outputTokens: 2 });
    expect(typeof lines[0].ttftMs).toBe('number');
    expect(typeof lines[0].durationMs).toBe('number');
    expect(lines[2]).toMatchObject({ reqId: 'req-s', status: 200, outputTokens: 2 });
  });

  it("logs /ready's 503 (loading, draining, engine down) at info, other 5xx at error", async () => {
    const byLevel: Record<string, Any[]> = { info: [], warn: [], error: [] };
    const logger: Logger = { info: (o) => byLevel.info!.push(o), warn: (o) => byLevel.warn!.push(o), error: (o) => byLevel.error!.push(o) };
    const { get, post, engine } = setup({ logger });
    engine.kill();
    expect((await get('/ready')).status).toBe(503);
    const failed = await post('/v1/completions', { model: MODEL, prompt: 'abc', max_tokens: 2 });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(byLevel.info!.map((l) => [l.route, l.status])).toEqual([['/ready', 503]]);
    expect(byLevel.error!.map((l) => [l.route, l.status])).toEqual([['/v1/completions', failed.status]]);
  });
});
