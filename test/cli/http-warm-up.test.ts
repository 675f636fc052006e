// src/cli/http-warm-up.ts and its wiring in startGateway: the gateway process's own warm-up through
// HTTP, the app and the engine client. The fake engine stands in for the sidecar; its holdSteps() and
// setReady() hold the warm-up in the states under test, so nothing here waits on a clock.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseArgs } from '../../src/cli/args.js';
import { buildConfig } from '../../src/cli/config.js';
import { startGateway } from '../../src/cli/gateway-role.js';
import { DEFAULT_WARMUP_REQUESTS, warmUpBodies, warmUpThroughHttp } from '../../src/cli/http-warm-up.js';
import type { NodeGateway } from '../../src/cli/node-server.js';
import { createApp } from '../../src/gateway/app.js';
import { EngineError } from '../../src/protocol/engine-client.js';
import { DEFAULT_BLOCK_SIZE } from '../../src/sidecar/engine/plan.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';

/** A pino logger whose lines land in `lines`; `when(msg)` resolves once a line with that message was written. */
function captureLogger() {
  const lines: { msg: string; [k: string]: unknown }[] = [];
  const waiters: { re: RegExp; resolve: () => void }[] = [];
  const logger = pino({ level: 'info' }, {
    write(s: string) {
      const line = JSON.parse(s) as { msg: string };
      lines.push(line);
      for (const w of waiters.filter((w) => w.re.test(line.msg))) w.resolve();
    },
  });
  const when = (re: RegExp) => (lines.some((l) => re.test(l.msg)) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ re, resolve })));
  return { logger, lines, when };
}

const metricLines = (text: string) => text.split('\n').filter((l) => /^(http_requests_total|vllm:request_success_total|vllm:time_to_first_token_seconds_count|vllm:e2e_request_latency_seconds_count)/.test(l));

describe('warmUpThroughHttp', () => {
  it('drives whole requests through the app and the engine, one token each on prompts shorter than a KV block, and leaves no metric or log line', async () => {
    const engine = new FakeEngineClient();
    const { logger, lines } = captureLogger();
    // The model's name up front: the series' labels are then the same before and after.
    const handle = createApp({ engine, logger, servedModelName: engine.info.id });
    const before = metricLines(await handle.metrics.render(await engine.stats()));
    const r = await warmUpThroughHttp(handle, engine, { requests: 10 });
    expect(r).toMatchObject({ ok: 10, sent: 10, stoppedBy: null });
    expect(engine.submitted).toHaveLength(10);
    for (const s of engine.submitted) {
      expect(s.sampling.maxTokens).toBe(1);
      if (s.prompt.kind === 'tokens') expect(s.prompt.ids.length).toBeLessThan(DEFAULT_BLOCK_SIZE);
    }
    // Token-id and chat prompts, streamed and not.
    expect(new Set(engine.submitted.map((s) => s.prompt.kind))).toEqual(new Set(['tokens', 'chat']));
    expect(metricLines(await handle.metrics.render(await engine.stats()))).toEqual(before);
    expect(lines).toEqual([]);
    // A user request afterwards is counted as usual.
    const res = await handle.app.request('/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'Hi', max_tokens: 2 }) });
    expect(res.status).toBe(200);
    expect(metricLines(await handle.metrics.render(await engine.stats()))).toContain('http_requests_total{method="POST",route="/v1/completions",status="200"} 1');
    expect(lines.map((l) => l.msg)).toEqual(['request']);
  });

  it('keeps every prompt shorter than the engine\'s KV block; with blocks of 1 token it sends nothing', async () => {
    expect(warmUpBodies(103424, 16).map((b) => b.path)).toContain('/v1/chat/completions');
    const small = warmUpBodies(103424, 4);
    expect(small.map((b) => b.path)).not.toContain('/v1/chat/completions');
    for (const b of small) expect((b.body.prompt as number[]).length).toBe(3);
    const engine = new FakeEngineClient();
    const stats = engine.stats.bind(engine);
    engine.stats = async () => ({ ...(await stats()), cacheConfig: { block_size: '1' } });
    expect(await warmUpThroughHttp(createApp({ engine }), engine, { requests: 3 })).toMatchObject({ sent: 0, stoppedBy: 'no prompt is shorter than a KV block of 1' });
    expect(engine.submitted).toEqual([]);
  });

  it('sends the API key the app requires', async () => {
    const engine = new FakeEngineClient();
    const handle = createApp({ engine, apiKey: 'sekret' });
    expect(await warmUpThroughHttp(handle, engine, { requests: 3, apiKey: 'sekret' })).toMatchObject({ ok: 3, stoppedBy: null });
    expect(await warmUpThroughHttp(handle, engine, { requests: 3 })).toMatchObject({ ok: 0, stoppedBy: 'status 401' });
  });

  it('is bounded in time: it stops at its budget whatever is left', async () => {
    const engine = new FakeEngineClient();
    const handle = createApp({ engine });
    let t = 0;
    // Each clock read is one second later: the budget of 2.5 s ends it after a few requests.
    const r = await warmUpThroughHttp(handle, engine, { requests: 100, budgetMs: 2500, now: () => (t += 1000) });
    expect(r.stoppedBy).toBe('budget');
    expect(r.sent).toBeLessThan(5);
    expect(engine.submitted.length).toBe(r.sent);
  });

  it('stops when aborted (the process drains)', async () => {
    const engine = new FakeEngineClient();
    const handle = createApp({ engine });
    const stop = new AbortController();
    stop.abort();
    expect(await warmUpThroughHttp(handle, engine, { requests: 5, signal: stop.signal })).toMatchObject({ sent: 0, stoppedBy: 'aborted' });
  });
});

describe('startGateway: /ready waits for the warm-up', () => {
  let gw: NodeGateway | undefined;
  afterEach(async () => {
    await gw?.shutdown();
    gw = undefined;
  });

  const config = (extra: string[]) => buildConfig(parseArgs(['serve', '--role', 'gateway', '--engine', 'unix:/nonexistent.sock', '--port', '0', '--api-server-count', '1', ...extra]));
  const base = (g: NodeGateway) => `http://127.0.0.1:${(g.address as { port: number }).port}`;

  it('is on by default; /ready is 503 while the engine loads and while the warm-up runs, then 200', async () => {
    expect(config([]).gateway.warmupRequests).toBe(DEFAULT_WARMUP_REQUESTS);
    const engine = new FakeEngineClient({ ready: false });
    const { logger, when } = captureLogger();
    gw = await startGateway(config(['--api-server-warmup-requests', '5']), engine, logger);
    const ready = async () => {
      const r = await fetch(`${base(gw!)}/ready`);
      return { status: r.status, body: (await r.json()) as { status: string } };
    };
    expect(await ready()).toEqual({ status: 503, body: expect.objectContaining({ status: 'loading' }) });
    const release = engine.holdSteps();
    engine.setReady(true);
    await engine.whenActive(1); // the warm-up's first request is inside the engine
    expect(await ready()).toEqual({ status: 503, body: expect.objectContaining({ status: 'warming up' }) });
    release();
    await when(/gateway warm-up done/);
    expect(await ready()).toEqual({ status: 200, body: expect.objectContaining({ status: 'ready' }) });
    expect(engine.submitted).toHaveLength(5);
    // The warm-up's requests are in no count; the probes are.
    const metrics = await (await fetch(`${base(gw)}/metrics`)).text();
    expect(metrics).not.toMatch(/^http_requests_total\{method="POST"/m);
    expect(metrics).toMatch(/^vllm:request_success_total\{[^}]*finished_reason="length"\} 0$/m);
  });

  it('a warm-up the engine refuses stops at once with a warning, and /ready turns 200 all the same', async () => {
    const engine = new FakeEngineClient();
    engine.failNext(new EngineError('INVALID_REQUEST', 'not this one'));
    const { logger, lines, when } = captureLogger();
    gw = await startGateway(config(['--api-server-warmup-requests', '5']), engine, logger);
    await when(/gateway warm-up stopped early/);
    expect(lines.find((l) => /stopped early/.test(l.msg))).toMatchObject({ warmUpRequests: 0, stoppedBy: 'status 400' });
    expect((await fetch(`${base(gw)}/ready`)).status).toBe(200);
  });

  it('a drain stops the warm-up where it is: a warm-up request held in the engine is aborted, not waited for', async () => {
    const engine = new FakeEngineClient();
    engine.holdSteps(); // never released
    gw = await startGateway(config(['--api-server-warmup-requests', '5']), engine, captureLogger().logger);
    await engine.whenActive(1);
    expect(await gw.shutdown()).toBe(true);
    gw = undefined;
    expect(engine.submitted).toHaveLength(1);
    expect(engine.aborts.map((a) => a.id)).toEqual([engine.submitted[0]!.id]);
  });

  it('--api-server-warmup-requests 0 turns it off: /ready is 200 as soon as the engine is', async () => {
    const engine = new FakeEngineClient();
    gw = await startGateway(config(['--api-server-warmup-requests', '0']), engine, captureLogger().logger);
    expect((await fetch(`${base(gw)}/ready`)).status).toBe(200);
    expect(engine.submitted).toHaveLength(0);
  });

  it('refuses a negative count', () => {
    expect(() => config(['--api-server-warmup-requests', '-1'])).toThrow(/--api-server-warmup-requests must be an integer ≥ 0/);
  });
});
