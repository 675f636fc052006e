// src/cli/node-server.ts: the gateway on a real loopback port and on a Unix socket, and graceful shutdown
// (in-flight streams drain; past the timeout they are cut). The fake EngineClient's holdSteps() gates
// generation, so nothing here waits on a clock except the drain timeout under test.
import path from 'node:path';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { serveNode } from '../../src/cli/node-server.js';
import { createApp } from '../../src/gateway/app.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';

async function start(drainTimeoutMs: number) {
  const engine = new FakeEngineClient();
  const handle = createApp({ engine });
  const gw = await serveNode({ handle, engine, listen: { host: '127.0.0.1', port: 0 }, drainTimeoutMs });
  const a = gw.address as { host: string; port: number };
  return { engine, handle, gw, base: `http://127.0.0.1:${a.port}` };
}

const streamBody = JSON.stringify({ model: 'baidu/ERNIE-4.5-0.3B-PT', prompt: 'Hi', max_tokens: 3, stream: true });

describe('serveNode', () => {
  it('drains an in-flight stream on shutdown: /ready turns 503 and the stream completes', async () => {
    const { engine, handle, gw, base } = await start(10_000);
    const release = engine.holdSteps();
    const res = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: streamBody });
    await engine.whenActive(1);
    expect(gw.inFlight).toBe(1);
    const stopped = gw.shutdown();
    expect(handle.draining).toBe(true);
    expect((await handle.app.request('/ready')).status).toBe(503);
    await expect(fetch(`${base}/health`)).rejects.toThrow(); // no new connections
    release();
    const text = await res.text();
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(await stopped).toBe(true);
    expect(gw.inFlight).toBe(0);
    expect(await engine.health().catch((e: Error) => e.message)).toMatch(/dead/); // the engine client was closed
  });

  it('ends streams still open at the drain timeout with an SSE error event and [DONE], and reports it', async () => {
    const { engine, gw, base } = await start(50);
    engine.holdSteps();
    const res = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: streamBody });
    await engine.whenActive(1);
    expect(await gw.shutdown()).toBe(false);
    // What OpenAI clients raise as an APIError: `data: {"error": {...}}`, then the stream's end.
    const frames = (await res.text()).trim().split('\n\n');
    expect(frames.at(-1)).toBe('data: [DONE]');
    const error = JSON.parse(frames.at(-2)!.slice('data: '.length)) as { error: { message: string; type: string; code: string } };
    expect(error.error.message).toMatch(/shutting down: the drain timeout \(0.05 s\)/);
    expect(error.error.type).toBe('service_unavailable_error');
  });

  it('drainDelayMs: /ready is 503 while new requests are still served, then connections are refused', async () => {
    const engine = new FakeEngineClient();
    const handle = createApp({ engine });
    const gw = await serveNode({ handle, engine, listen: { host: '127.0.0.1', port: 0 }, drainTimeoutMs: 1000, drainDelayMs: 300 });
    const base = `http://127.0.0.1:${(gw.address as { port: number }).port}`;
    const stopped = gw.shutdown();
    const ready = await fetch(`${base}/ready`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('connection')).toBe('close'); // clients reconnect (elsewhere) from now on
    const res = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'baidu/ERNIE-4.5-0.3B-PT', prompt: 'Hi', max_tokens: 2 }) });
    expect(res.status).toBe(200);
    expect(await stopped).toBe(true);
    await expect(fetch(`${base}/health`)).rejects.toThrow();
  });

  it('listens on a Unix socket (--uds)', async () => {
    const engine = new FakeEngineClient();
    const sock = path.join(mkdtempSync(path.join(os.tmpdir(), 'ernie-uds-')), 'api.sock');
    const gw = await serveNode({ handle: createApp({ engine }), engine, listen: { path: sock }, drainTimeoutMs: 1000 });
    expect(gw.address).toEqual({ path: sock });
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ socketPath: sock, path: '/health' }, (r) => {
        r.resume();
        resolve(r.statusCode!);
      });
      req.once('error', reject);
      req.end();
    });
    expect(status).toBe(200);
    expect(await gw.shutdown()).toBe(true);
  });
});
