// An app built once, served engine by engine: a request may bring its own EngineClient through
// fetch's env (adapters/workers.ts: one connection per request); the app's router, metrics and
// settings are shared.
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/gateway/app.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';

const completion = () =>
  new Request('http://gw/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'hi', max_tokens: 2 }) });

describe('createApp without an engine of its own', () => {
  it('serves each request with the engine it brings; metrics accumulate across them', async () => {
    const handle = createApp({ servedModelName: 'm' });
    const a = new FakeEngineClient();
    const b = new FakeEngineClient();
    expect((await handle.fetch(completion(), { engine: a })).status).toBe(200);
    expect((await handle.fetch(completion(), { engine: b })).status).toBe(200);
    expect((await handle.fetch(completion(), { engine: b })).status).toBe(200);
    expect([a.submitted.length, b.submitted.length]).toEqual([1, 2]);
    expect(handle.metrics.render(null)).toMatch(/^http_requests_total\{[^}]*route="\/v1\/completions"[^}]*\} 3$/m);
  });

  it('answers a request that brings none with a 500 (a wiring error, not the client\'s)', async () => {
    const lines: string[] = [];
    const log = (_o: object, m?: string) => void lines.push(m ?? '');
    const handle = createApp({ logger: { info: log, warn: log, error: log } });
    const res = await handle.fetch(completion());
    expect(res.status).toBe(500);
    expect(lines).toContain('unhandled error');
  });

  it("a request's own engine wins over the app's", async () => {
    const own = new FakeEngineClient();
    const app = new FakeEngineClient();
    const handle = createApp({ engine: app });
    expect((await handle.fetch(completion(), { engine: own })).status).toBe(200);
    expect((await handle.fetch(completion())).status).toBe(200);
    expect([own.submitted.length, app.submitted.length]).toEqual([1, 1]);
  });
});
