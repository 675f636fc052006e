// src/gateway/redact.ts and the open routes that use it: /ready and /metrics show no filesystem path
// (the socket of an unreachable engine, a model directory), while repo ids and URLs stay readable.
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/gateway/app.js';
import { EngineError } from '../../src/protocol/engine-client.js';
import { publicModelName, redactPaths } from '../../src/gateway/redact.js';
import { FakeEngineClient } from '../doubles/fake-engine-client.js';

describe('redactPaths / publicModelName', () => {
  it('replaces paths, keeps repo ids, URLs and fractions', () => {
    expect(redactPaths('engine unreachable: Error: connect ENOENT /tmp/ernie-edge-Ab1/engine.sock')).toBe('engine unreachable: Error: connect ENOENT <path>');
    expect(redactPaths("the model failed to load: no config.json in '/models/ernie' (see ./logs/x, ~/y)")).toBe("the model failed to load: no config.json in '<path>' (see <path>, <path>)");
    expect(redactPaths('unix:/run/ernie/engine.sock')).toBe('unix:<path>');
    expect(redactPaths('tcp://10.0.0.1:9000 baidu/ERNIE-4.5-0.3B-PT loading 3/10 layers')).toBe('tcp://10.0.0.1:9000 baidu/ERNIE-4.5-0.3B-PT loading 3/10 layers');
    expect(publicModelName('/models/ernie-4.5/')).toBe('ernie-4.5');
    expect(publicModelName('./ckpt')).toBe('ckpt');
    expect(publicModelName('~/hf/ernie')).toBe('ernie');
    expect(publicModelName('baidu/ERNIE-4.5-0.3B-PT')).toBe('baidu/ERNIE-4.5-0.3B-PT');
  });
});

describe('open routes disclose no paths', () => {
  it('/ready while the engine is unreachable names no socket path', async () => {
    const engine = new FakeEngineClient();
    engine.health = async () => {
      throw new EngineError('ENGINE_DEAD', 'engine unreachable: Error: connect ENOENT /tmp/ernie-edge-Ab1/engine.sock');
    };
    const res = await createApp({ engine }).app.request('/ready');
    expect(res.status).toBe(503);
    const text = await res.text();
    expect(text).not.toContain('/tmp');
    expect(JSON.parse(text)).toEqual({ status: 'engine unavailable', ready: false, message: 'engine unreachable: Error: connect ENOENT <path>' });
  });

  it('/ready while the model failed to load names no checkpoint path', async () => {
    const engine = new FakeEngineClient();
    engine.health = async () => ({ ready: false, loading: false, draining: false, message: 'no safetensors in /srv/models/secret-project' });
    const body = (await (await createApp({ engine }).app.request('/ready')).json()) as { message: string };
    expect(body.message).toBe('no safetensors in <path>');
  });

  it('/metrics labels a model served under its directory path by the last component', async () => {
    const engine = new FakeEngineClient();
    const handle = createApp({ engine, servedModelName: '/srv/models/secret-project/ernie-4.5' });
    const text = await (await handle.app.request('/metrics')).text();
    expect(text).toContain('model_name="ernie-4.5"');
    expect(text).not.toContain('/srv');
  });
});
